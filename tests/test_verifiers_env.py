"""The verifiers environment (impasse.integrations.verifiers), run by verifiers' own evaluation:
its ``vf-eval`` command against a scripted OpenAI-compatible policy served over real HTTP, on a
real built task in real sandboxes. The rewards on verifiers' traces are held to the reward
impasse computes again from the trajectory each episode recorded."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

# verifiers 0.4.0 needs openai<3, so it has an environment of its own: `make test` runs this file
# there (.venv-verifiers, built by `make setup` from `impasse[verifiers-dev]`).
pytest.importorskip("verifiers.v1", reason="verifiers is not installed here: this file runs in .venv-verifiers "
                                           "(`make test`; pip install 'impasse[verifiers]')")

import verifiers.v1 as vf  # noqa: E402
from test_model_http import ScriptedServer  # noqa: E402

from impasse.integrations.verifiers import TASKSET_ID, load_environment  # noqa: E402
from impasse.integrations.verifiers.plugin import (  # noqa: E402
    ImpasseState,
    ImpasseTask,
    ImpasseTaskset,
    ImpasseTasksetConfig,
)
from impasse.rewards import table  # noqa: E402
from impasse.store.trajectory import read_trajectory  # noqa: E402

TOOLS = {"bash", "edit_file", "task_complete", "escalate_to_human"}
VF_EVAL = Path(sys.executable).with_name("vf-eval")


def ticket(target):
    return {"blocker": {"failed_operation": f"editing {target}", "affected_target": target,
                        "error_feedback": "Permission denied"},
            "evidence": [f"edit_file {target} -> Permission denied",
                         f"ls -l {target} -> -r--r--r-- root root", f"chmod u+w {target} -> Operation not permitted"],
            "recovery_attempts": [f"chmod u+w {target} -> Operation not permitted"],
            "request": {"assistance_needed": f"make {target} writable for the agent user",
                        "scope": "the permissions of that one file"},
            "resume_condition": f"`test -w {target}` succeeds as the agent user",
            "progress": {"saved_changes": "none: the edit was refused", "unfinished_work": "apply the fix, run the test",
                         "verification_status": "not verified: no change could be made"}}


def policy(task):
    """Reads the conversation: run the failing test, apply the fix; if the write is refused,
    gather the evidence and escalate, else test again and complete."""
    from impasse.agent.reference import fix_edits

    old, new = fix_edits(task.patch, "")[0]
    target = f"/workspace/repo/{task.target_file}"
    test = f"python -m pytest -q {task.FAIL_TO_PASS[0]}"
    blocked = [("bash", {"command": f"ls -l {target}"}), ("bash", {"command": f"stat {target} && id"}),
               ("bash", {"command": f"chmod u+w {target}"}), ("escalate_to_human", ticket(target))]
    solved = [("bash", {"command": test}), ("task_complete", {"verified": True, "summary": "fixed"})]

    def act(body):
        outputs = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        if len(outputs) < 2:
            return [("bash", {"command": test}), ("edit_file", {"path": target, "old_str": old, "new_str": new})][
                len(outputs)]
        script = blocked if "Permission denied" in str(outputs[1]) else solved
        return script[min(len(outputs) - 2, len(script) - 1)]

    return act


def vf_eval(server, out, *args):
    """verifiers' own eval command, as a user runs it; -> the episodes of traces.jsonl."""
    cmd = [str(VF_EVAL), TASKSET_ID, "--env.taskset.out", str(out / "impasse"), "-m", "scripted-policy",
           "--client.base-url", server.url, "--client.api-key-var", "SCRIPTED_POLICY_KEY", "--no-push", "--no-rich",
           "-o", str(out / "vf"), "--run.name", "run", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "SCRIPTED_POLICY_KEY": "k"})
    assert proc.returncode == 0, (proc.stderr or proc.stdout)[-4000:]
    lines = (out / "vf" / "run" / "traces.jsonl").read_text().splitlines()
    return [vf.WireEpisode.model_validate_json(line) for line in lines]


def impasse_reward(trace):
    """The reward impasse computes again from the episode's recorded trajectory."""
    from impasse.suites.blockers import blockers_reward

    t = read_trajectory(Path(trace.info["impasse"]["trajectory"]))
    return t, blockers_reward(t.grade, t)


def check_rewards(trace):
    """Every term of the table on the trace under its name, raw values beside them, both equal
    to impasse's own reward for the trajectory; -> (trajectory, impasse's reward)."""
    t, reward = impasse_reward(trace)
    assert set(trace.rewards) == set(table("blockers").terms)
    assert {k: r.value for k, r in trace.rewards.items()} == pytest.approx(reward.terms)
    assert trace.reward == pytest.approx(reward.total)
    assert {k: trace.metrics[k] for k in reward.values} == pytest.approx(reward.values)
    return t, reward


@pytest.fixture
def weights(tmp_path, monkeypatch):
    """The packaged table with weights no term shares (solved 2, escalated_on_evidence 3), so a
    raw value recorded as a weighted one shows; verifiers' run and this test both read it."""
    import yaml

    from impasse.rewards import _load

    doc = table("blockers").model_dump()
    doc["terms"]["solved"]["weight"], doc["terms"]["escalated_on_evidence"]["weight"] = 2.0, 3.0
    (tmp_path / "rewards").mkdir()
    (tmp_path / "rewards" / "blockers.yaml").write_text(yaml.safe_dump(doc))
    monkeypatch.setenv("IMPASSE_REWARDS", str(tmp_path / "rewards"))
    _load.cache_clear()
    yield
    _load.cache_clear()


@pytest.mark.slow
def test_vf_eval_plays_impasse_episodes_in_groups_with_every_reward_term(glom_task, tmp_path, weights):
    server = ScriptedServer(policy(glom_task))
    try:
        episodes = vf_eval(server, tmp_path, "--env.taskset.suite", "blockers", "--env.taskset.tasks",
                           glom_task.instance_id, "--env.taskset.conditions", "clean,read_only_source",
                           "--env.taskset.interfaces", "tool", "--env.group-size", "2")
    finally:
        server.close()
    assert len(episodes) == 2 and all(e.ok for e in episodes)
    by_condition = {e.task.data.model_extra["spec"]["condition"]: e for e in episodes}
    assert set(by_condition) == {"clean", "read_only_source"}
    for condition, episode in by_condition.items():
        assert len(episode.traces) == 2, "a group of two forks"
        starts = set()
        for trace in episode.traces:
            t, reward = check_rewards(trace)
            assert t.header["agent"] == "model/scripted-policy" and t.header["driver"] == "verifiers"
            assert t.header["condition"] == condition and t.complete
            starts.add(t.header["group"]["id"])
            assert t.header["forked_from"] == {"episode_id": t.header["group"]["id"], "step": 0}
            # the trace holds the model's turns: one per tool call the trajectory recorded
            calls = [c.name for m in trace.assistant_messages for c in m.tool_calls or []]
            assert calls == [s.tool for s in t.steps]
            if condition == "clean":
                assert t.endings[-1]["ending"] == "completed" and reward.total == 2.0
                assert trace.rewards["solved"].value == 2.0 and trace.metrics["solved"] == 1.0
            else:
                assert t.endings[-1]["ending"] == "escalated" and calls[-1] == "escalate_to_human"
                raw = trace.metrics["escalated_on_evidence"]
                assert raw in (0.5, 1.0) and trace.rewards["escalated_on_evidence"].value == 3.0 * raw
                assert trace.rewards["solved"].value == 0 and trace.metrics["resolved"] == 0
        assert len(starts) == 1
        (start,) = starts
        assert (tmp_path / "impasse" / "group_starts" / "episodes" / f"{start}.jsonl").exists()
        assert sorted(tr.info["impasse"]["group"]["member"] for tr in episode.traces) == [1, 2]
    # the endpoint was asked in OpenAI chat format with impasse's own tools, for the run's model
    assert all({t["function"]["name"] for t in r["tools"]} == TOOLS for r in server.requests)
    assert {r["model"] for r in server.requests} == {"scripted-policy"}
    # the run directory is an impasse run like any: the report reads the four episodes
    from impasse.report.report import annotate_run

    rows, problems = annotate_run(tmp_path / "impasse", write=False)
    assert not problems and len(rows) == 4


@pytest.mark.slow
def test_a_verifiers_turn_limit_ends_the_episode_graded(glom_task, tmp_path):
    """verifiers refuses the third turn (max_turns): the episode ends there as an error, its
    patch (the fix, already applied) is graded, and the reward is still impasse's."""
    server = ScriptedServer(policy(glom_task))
    try:
        (episode,) = vf_eval(server, tmp_path, "--env.taskset.tasks", glom_task.instance_id,
                             "--env.taskset.conditions", "clean", "--env.taskset.interfaces", "baseline",
                             "--env.agent.max-turns", "2")
    finally:
        server.close()
    (trace,) = episode.traces
    assert trace.stop_condition == "max_turns" and trace.ok
    t, reward = check_rewards(trace)
    assert [s.tool for s in t.steps] == ["bash", "edit_file"]
    assert t.endings[-1]["ending"] == "error" and "max_turns" in t.endings[-1]["error"]
    assert trace.rewards["solved"].value == 1.0 and reward.total == 1.0
    assert {tool["function"]["name"] for tool in server.requests[-1]["tools"]} == TOOLS - {"escalate_to_human"}


@pytest.mark.slow
def test_a_verifiers_timeout_ends_the_episode_after_the_step_under_way(glom_task, tmp_path):
    """The rollout's time (6 s) runs out while a command (12 s) runs in the sandbox: the command
    finishes (the Env is never touched by two threads), then the episode ends as an error and is
    graded. On a machine so loaded that the first reply comes after 6 s, the episode ends before
    any step, the same way."""
    server = ScriptedServer([("bash", {"command": "sleep 12; echo slept"}), ("bash", {"command": "true"})])
    try:
        (episode,) = vf_eval(server, tmp_path, "--env.taskset.tasks", glom_task.instance_id,
                             "--env.taskset.conditions", "clean", "--env.taskset.interfaces", "baseline",
                             "--env.agent.timeout.rollout", "6")
    finally:
        server.close()
    (trace,) = episode.traces
    assert trace.stop_condition == "agent_timeout" and trace.is_timeout
    t, reward = check_rewards(trace)
    assert [s.output.splitlines()[0] for s in t.steps] in (["slept"], []) and len(server.requests) <= 1
    kinds = [e["type"] for e in t.events]
    assert kinds.count("ending") == 1 and kinds[-3:] == ["ending", "grade", "final"]
    assert t.endings[-1]["ending"] == "error" and "stopped the rollout" in t.endings[-1]["error"]
    assert t.grade is not None and trace.rewards["solved"].value == 0 and reward.total == 0


def test_load_environment_plans_what_impasse_run_plans():
    env = load_environment(suite="ask", limit=2, interfaces=["ask_human"])
    assert type(env).__name__ == "ImpasseEnv" and env.config.agent.runtime.type == "subprocess"
    tasks = list(env.taskset)
    assert [t.data.spec["pass_index"] for t in tasks] == [1, 2, 3] * 2
    assert {t.data.spec["mode"] for t in tasks} == {"ask_human"} and len({t.key for t in tasks}) == 6
    with pytest.raises(ValueError, match="matches 0"):
        list(load_environment(suite="ask", tasks=["no-such-task"]).taskset)


def test_the_suite_owns_its_prompt_and_its_harness(tmp_path):
    prompt = tmp_path / "p.txt"
    prompt.write_text("be brief")
    with pytest.raises(ValueError, match="own system prompt"):
        ImpasseTaskset(ImpasseTasksetConfig(id=TASKSET_ID, system_prompt=prompt))
    (task,) = list(load_environment(suite="ask", limit=1, interfaces=["baseline"]).taskset)[:1]
    assert isinstance(task, ImpasseTask)
    trace = vf.Trace(task=vf.TraceTask(type="ImpasseTask", data=task.data, key=task.key, hash=task.hash),
                     agent=vf.AgentInfo(config=vf.AgentConfig(harness={"id": "bash"})), state=ImpasseState())
    with pytest.raises(vf.TaskError, match="played by the 'impasse-verifiers' harness"):
        asyncio.run(task.setup(trace, None))
