"""impasse's suites as a Prime Intellect ``verifiers`` environment (its v1 API, verifiers 0.4.0).

    from impasse.integrations.verifiers import load_environment

    env = load_environment(suite="blockers", tasks=["glom__25.12.0.invert_if__be2c3b69"],
                           conditions="read_only_source", interfaces=["tool"], out="runs/train")

or verifiers' own command line, by the taskset id ``impasse-verifiers`` (``pip install
'impasse[verifiers]'``)::

    vf-eval impasse-verifiers --env.taskset.suite blockers --env.taskset.conditions persistent \\
        -m MODEL --client.base-url URL --client.api-key-var KEY_VAR --no-push

One rollout is one impasse episode: one :class:`impasse.env.Env`, made from the task's spec when
the rollout sets up, stepped with each of the model's tool calls, recording its trajectory in the
run directory ``out`` like any run (``impasse report OUT`` works on a training batch), grading
the final patch and computing the suite's reward. Every term of the reward table is recorded on
the verifiers trace under its own name (``trace.rewards``: the term's weighted contribution, so
``trace.reward`` is impasse's total) and every raw value and suite metric beside it
(``trace.metrics``: the terms' raw values, Ask-F1, ...). ``trace.info["impasse"]`` names the
episode and its trajectory file.

The design: the Env is stepped host-side by impasse's own agent loop
(:func:`impasse.agent.loop.run`), packaged as a verifiers :class:`~verifiers.v1.Harness` that runs
in-process. verifiers allows that ("a harness may run its loop in-process ... as long as every
model call goes through the endpoint"): every model call goes through the rollout's interception
endpoint, so the trace records every turn and its tokens, and the rollout's limits and ``@stop``
rules refuse turns as for any harness. The tools are not served as a verifiers toolset (MCP)
because an impasse episode is more than tool results: the monitor's nudges and the restoration
notice are user messages the model must see between them, the Env (not a generic harness's loop)
decides when the episode ends, the trajectory records the model's own messages, and the tools'
schemas are impasse's own JSON schemas, sent as they are.

Groups (RL samples several rollouts from one start): ``group_size=N`` (``--env.group-size N``)
makes one verifiers episode N rollouts of N forks (:meth:`Env.fork`) of one reset Env, each its
own trace and trajectory (headers name the group; the set-up itself is recorded under
``OUT/group_starts``). ``-r N`` stays what it is in verifiers: N independent episodes, each
reset on its own.

The classes live in :mod:`impasse.integrations.verifiers.plugin` (it imports verifiers; this
module does not, so the name resolves anywhere). verifiers finds a plugin by a top-level module
name, so the top-level module ``impasse_verifiers`` re-exports the plugin's taskset, harness and
environment. verifiers 0.4.0 needs openai<3, the bench extra pins openai 3: install
``impasse[verifiers]`` in an environment of its own.
"""

from __future__ import annotations

from typing import Any, Literal

TASKSET_ID = "impasse-verifiers"
"""The id verifiers loads the taskset, its harness and its environment by (``impasse_verifiers``)."""


def load_environment(suite: Literal["blockers", "ask"] = "blockers", group_size: int = 1,
                     agent: dict[str, Any] | None = None, **taskset: Any) -> Any:
    """The verifiers environment (an :class:`~impasse.integrations.verifiers.plugin.ImpasseEnv`)
    of ``suite``: ``taskset`` takes :class:`~impasse.integrations.verifiers.plugin.ImpasseTasksetConfig`'s
    fields (tasks, conditions, interfaces, out, ...), ``agent`` the seat's
    :class:`verifiers.v1.AgentConfig` fields (max_turns, timeout, ...). Run it with verifiers'
    eval or a trainer that loads verifiers environments."""
    import verifiers.v1 as vf

    from impasse.integrations.verifiers.plugin import ImpasseEnvConfig, ImpasseTasksetConfig

    config = ImpasseEnvConfig(taskset=ImpasseTasksetConfig(id=TASKSET_ID, suite=suite, **taskset),
                              group_size=group_size, agent={"runtime": {"type": "subprocess"}, **(agent or {})})
    return vf.load_environment(config)
