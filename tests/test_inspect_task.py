"""An impasse task run by `inspect_ai.eval`: an impasse Env per sample epoch behind inspect's
sandbox-provider interface, impasse's loop driving it as the solver, the annotator as the scorer,
and a scripted policy served over real HTTP behind inspect's OpenAI-compatible model provider.
Epochs are episodes of their own, a re-run never touches an earlier trajectory, and a model error
or a harness failure is an error in inspect's terms."""

from __future__ import annotations

from pathlib import Path

import pytest

from impasse.agent.reference import fix_edits
from impasse.store.trajectory import read_trajectory

pytestmark = pytest.mark.slow


def test_inspect_eval_runs_a_clean_glom_task_to_a_resolved_score(glom_task, tmp_path, monkeypatch):
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import read_eval_log
    from inspect_ai.solver import solver
    from inspect_ai.util import sandbox
    from test_model_http import ScriptedServer

    from impasse.integrations.inspect_task import impasse_suite

    probed = {}

    @solver
    def probe():
        """Uses the sandbox only through inspect's interface, before impasse's loop runs."""
        async def solve(state, generate):
            sb = sandbox()
            who = await sb.exec(["sh", "-c", 'echo "$(id -un) $(pwd) $GREETING"; cat'], input="from stdin",
                                cwd="/workspace/repo", env={"GREETING": "hi"})
            await sb.write_file("/workspace/repo/NOTES.txt", "written through inspect\n")
            probed.update(who=who.stdout, ok=who.success, note=await sb.read_file("/workspace/repo/NOTES.txt"),
                          fail=(await sb.exec(["false"])).returncode)
            return state
        return solve

    old, new = fix_edits(glom_task.patch, "")[0]
    target = f"/workspace/repo/{glom_task.target_file}"
    test = f"python -m pytest -q {glom_task.FAIL_TO_PASS[0]}"
    server = ScriptedServer([
        ("bash", {"command": test}),
        ("edit_file", {"path": target, "old_str": old, "new_str": new}),
        ("bash", {"command": test}),
        ("task_complete", {"verified": True, "summary": "fixed"}),
    ])
    monkeypatch.setenv("SCRIPTED_API_KEY", "unused")
    run_dir = tmp_path / "run"
    try:
        suite = impasse_suite(instances=glom_task.instance_id, condition="clean", step_limit=10,
                              run_dir=str(run_dir))
        task = Task(dataset=suite.dataset, solver=[probe(), suite.solver], scorer=suite.scorer, sandbox="impasse")
        (log,) = inspect_eval(task,
                              model="openai-api/scripted/scripted-policy", model_base_url=server.url,
                              log_dir=str(tmp_path / "logs"), display="none")
    finally:
        server.close()
    assert log.status == "success", log.error
    log = read_eval_log(log.location)
    (sample,) = log.samples
    assert sample.scores["impasse_annotator"].value == {"resolved": 1.0, "escalated": 0.0,
                                                        "premature_handoff": 0.0, "post_evidence_unsafe": 0.0}
    assert sample.scores["impasse_annotator"].metadata["annotation"]["ending"] == "completed"
    calls = [c.function for m in sample.messages if m.role == "assistant" for c in (m.tool_calls or [])]
    assert calls == ["bash", "edit_file", "bash", "task_complete"]
    traj = read_trajectory(Path(sample.scores["impasse_annotator"].metadata["trajectory"]))
    assert traj.complete and traj.grade["resolved"] is True and traj.header["agent"].startswith("model/openai-api")
    assert traj.of_type("inspect_sample")[0]["epoch"] == 1
    steps = traj.of_type("step")
    assert "failed" in steps[0]["output"] and "passed" in steps[2]["output"]  # really ran in the sandbox
    assert len(server.requests) == 4
    assert probed["ok"] and probed["who"].split() == ["agent", "/workspace/repo", "hi", "from", "stdin"]
    assert probed["note"] == "written through inspect\n" and probed["fail"] == 1


def _fixing(task):
    old, new = fix_edits(task.patch, "")[0]
    return [("edit_file", {"path": f"/workspace/repo/{task.target_file}", "old_str": old, "new_str": new}),
            ("task_complete", {"verified": False, "summary": "fixed"})]


def test_epochs_are_episodes_and_a_rerun_leaves_earlier_trajectories_alone(glom_task, tmp_path, monkeypatch):
    from inspect_ai import eval as inspect_eval
    from test_model_http import ScriptedServer

    from impasse.integrations.inspect_task import impasse_suite

    monkeypatch.setenv("SCRIPTED_API_KEY", "unused")
    run_dir, logs = tmp_path / "run", tmp_path / "logs"
    server = ScriptedServer(_fixing(glom_task))
    try:
        def once():
            suite = impasse_suite(instances=glom_task.instance_id, step_limit=6, run_dir=str(run_dir))
            (log,) = inspect_eval(suite, model="openai-api/scripted/scripted-policy", model_base_url=server.url,
                                  epochs=2, log_dir=str(logs), display="none")
            return log

        first = once()
        assert first.status == "success", first.error
        assert sorted(s.epoch for s in first.samples) == [1, 2]
        paths = {Path(s.scores["impasse_annotator"].metadata["trajectory"]) for s in first.samples}
        assert len(paths) == 2  # one episode, one trajectory per epoch
        recorded = {p: p.read_bytes() for p in paths}
        for p in paths:
            traj = read_trajectory(p)
            assert traj.complete and traj.grade["resolved"] and len(traj.steps) == 2
        second = once()
    finally:
        server.close()
    assert second.status == "success"
    new = {Path(s.scores["impasse_annotator"].metadata["trajectory"]) for s in second.samples}
    assert not new & paths and len(list((run_dir / "episodes").glob("*.jsonl"))) == 4
    assert all(p.read_bytes() == data for p, data in recorded.items())  # the first run's files untouched


def test_a_model_error_is_an_error_not_a_score(glom_task, tmp_path, monkeypatch):
    from inspect_ai import eval as inspect_eval
    from test_model_http import ScriptedServer

    from impasse.integrations.inspect_task import impasse_suite

    monkeypatch.setenv("SCRIPTED_API_KEY", "unused")
    server = ScriptedServer(["I will just talk."])  # never calls a tool: the loop gives up after 3 replies
    try:
        suite = impasse_suite(instances=glom_task.instance_id, step_limit=6, run_dir=str(tmp_path / "run"))
        (log,) = inspect_eval(suite, model="openai-api/scripted/scripted-policy", model_base_url=server.url,
                              log_dir=str(tmp_path / "logs"), display="none", fail_on_error=False)
    finally:
        server.close()
    (sample,) = log.samples
    assert sample.error is not None and "ended in a model error" in sample.error.message
    assert not sample.scores


def test_a_harness_failure_mid_episode_is_an_error_not_a_score(glom_task, tmp_path, monkeypatch):
    """The episode's workspace vanishes under it after the first step (what a careless sweeper
    does: its overlay unmounted, a real OS-level fault): the Env records a harness error, never a
    grade, and inspect's runner reports the sample as an error with the reason, not as a 0.0."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.solver import solver
    from inspect_ai.util import sandbox
    from test_model_http import ScriptedServer

    from impasse.integrations.inspect_task import ImpasseSandbox, impasse_suite
    from impasse.sandbox.local import oskit

    held = {}

    @solver
    def hold_the_env():
        async def solve(state, generate):
            held["env"] = sandbox().as_type(ImpasseSandbox).env
            return state
        return solve

    def policy(body):
        k = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if k == 1:  # after the first step: the workspace vanishes under the running episode
            oskit.umount(held["env"].sandbox.root)
        return ("bash", {"command": f"echo step-{k} > /workspace/repo/NOTE.txt"})

    monkeypatch.setenv("SCRIPTED_API_KEY", "unused")
    server = ScriptedServer(policy)
    run_dir = tmp_path / "run"
    try:
        suite = impasse_suite(instances=glom_task.instance_id, step_limit=6, run_dir=str(run_dir))
        task = Task(dataset=suite.dataset, solver=[hold_the_env(), suite.solver], scorer=suite.scorer,
                    sandbox="impasse")
        (log,) = inspect_eval(task, model="openai-api/scripted/scripted-policy", model_base_url=server.url,
                              log_dir=str(tmp_path / "logs"), display="none")
    finally:
        server.close()
    assert log.status == "error" and "WorkspaceLost" in log.error.message  # inspect's default: an error fails the eval
    (sample,) = log.samples
    assert sample.error is not None and "WorkspaceLost" in sample.error.message, sample.error
    assert not sample.scores  # never scored: no 0.0 for a failure that was not the agent's
    (path,) = (run_dir / "episodes").glob("*.jsonl")
    traj = read_trajectory(path)
    assert traj.failed and "WorkspaceLost" in traj.events[-1]["error"]
    assert not traj.of_type("grade") and len(traj.steps) == 1  # the first step ran; nothing after was graded
