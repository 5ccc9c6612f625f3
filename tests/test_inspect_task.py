"""An impasse task run by `inspect_ai.eval`: impasse's sandbox through inspect's sandbox-provider
interface, impasse's loop as the solver, the annotator as the scorer, and a scripted policy
served over real HTTP behind inspect's OpenAI-compatible model provider."""

from __future__ import annotations

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
    traj = read_trajectory(run_dir / "episodes" / f"{sample.id}.jsonl")
    assert traj.complete and traj.grade["resolved"] is True
    steps = traj.of_type("step")
    assert "failed" in steps[0]["output"] and "passed" in steps[2]["output"]  # really ran in the sandbox
    assert len(server.requests) == 4
    assert probed["ok"] and probed["who"].split() == ["agent", "/workspace/repo", "hi", "from", "stdin"]
    assert probed["note"] == "written through inspect\n" and probed["fail"] == 1
