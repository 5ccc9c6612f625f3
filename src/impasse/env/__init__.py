"""One episode as an environment: ``make(suite, **spec) -> Env``, then reset/step/fork/grade.

    import impasse.env

    with impasse.env.make("blockers", task="glom__25.12.0.invert_if__be2c3b69",
                          condition="read_only_source", interface="tool") as env:
        first = env.reset()                        # {"messages": [...], "tools": [...], "info": {...}}
        r = env.step({"name": "bash", "arguments": {"command": "ls -l"}})
        branch = env.fork()                        # an independent copy at this step
        r = env.step({"name": "escalate_to_human", "arguments": {...}})
        r.done, r.ending, r.reward, env.grade()

Every driver (the agent loop, the executors, the handoff experiment, inspect_ai, the MCP server,
a trainer) steps an Env; none builds an episode. See :mod:`impasse.env.core`.
"""

from __future__ import annotations

from typing import Any

from impasse.env.core import Env, EnvError, EnvParts, StepResult, pending_calls
from impasse.env.hooks import AfterStep, BeforeStep, Decision, MonitorHook
from impasse.env.registry import SUITES
from impasse.env.spec import EnvSpec, SpecError

__all__ = ["SUITES", "AfterStep", "BeforeStep", "Decision", "Env", "EnvError", "EnvParts", "EnvSpec",
           "MonitorHook", "SpecError", "StepResult", "make", "pending_calls"]


def make(suite: str, **spec: Any) -> Env:
    """The Env of one episode of ``suite`` (``blockers``, ``ask``, or a registered one), from its
    typed spec. Besides the spec's fields: ``store=`` (where the trajectory lives; default the run
    directory ``out``), ``before_step=[...]`` and ``after_step=[...]`` hooks."""
    from impasse.registry import UnknownName

    try:
        owner = SUITES.get(suite)
    except UnknownName as e:
        raise SpecError(str(e)) from None
    return owner.make_env(**spec)
