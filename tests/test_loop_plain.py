"""The loop, the tools and the episode's phases without root: a plain-directory sandbox and a
scripted policy served over real HTTP (tests/test_model_http.py::ScriptedServer)."""

import pytest

from impasse.agent.agents import AgentSpec
from impasse.agent.loop import LoopConfig, system_prompt, task_prompt
from impasse.agent.tools import tools_named
from impasse.episode import Episode, EpisodeParts
from impasse.sandbox.plain import PlainBackend
from impasse.store.trajectory import TrajectoryWriter, read_trajectory
from impasse.suites.blockers import RestoreAfterEscalation
from tests.test_backend_conformance import layer  # noqa: F401 - the tiny task layer fixture
from tests.test_model_http import ScriptedServer

TOOLS = ["bash", "edit_file", "task_complete", "escalate_to_human"]


def parts(layer, server, handlers=(), accepted=False):  # noqa: F811
    backend = PlainBackend()
    model = AgentSpec("openai", "scripted").make_model(None, {"model_config": {"base_url": server.url}})
    return EpisodeParts(
        header={"episode_id": "e", "condition": "clean", "interface": "tool", "agent": "model/scripted"},
        model=model, open_sandbox=lambda: backend.create([layer]), tools=tools_named(TOOLS, "/repo"),
        first_messages=lambda sb: [{"role": "system", "content": system_prompt(sb.workdir, True)},
                                   {"role": "user", "content": task_prompt("add() subtracts", sb.workdir)}],
        grade=lambda patch: {"resolved": "+    return a + b" in patch, "model_patch": patch},
        accepts=lambda _ep, _e: accepted, handlers=list(handlers))


def run(layer, tmp_path, actions, **kw):  # noqa: F811
    server = ScriptedServer(actions)
    path = tmp_path / "e.jsonl"
    writer = TrajectoryWriter(path, {"format": "impasse.trajectory/1", "condition": "clean", "episode_id": "e"})
    try:
        grade = Episode(parts(layer, server, **kw), LoopConfig(step_limit=6), writer).run()
        writer.append({"type": "grade", **grade})
    finally:
        writer.close()
        server.close()
    return read_trajectory(path), server


def test_a_fix_through_the_tools_is_graded(layer, tmp_path):  # noqa: F811
    traj, server = run(layer, tmp_path, [
        ("bash", {"command": "cat pkg/mod.py"}),
        ("edit_file", {"path": "pkg/mod.py", "old_str": "a - b", "new_str": "a + b"}),
        ("edit_file", {"path": "pkg/mod.py", "old_str": "nope", "new_str": "x"}),
        ("task_complete", {"verified": "yes", "summary": "s"}),
        ("task_complete", {"verified": False, "summary": "fixed"})])
    outputs = [s.output for s in traj.steps]
    assert "return a - b" in outputs[0] and outputs[1].startswith("Edited") and "replaced 1 occurrence" in outputs[1]
    assert outputs[2].startswith("Error: old_str not found")
    assert outputs[3].startswith("Error: argument 'verified'")  # validated by the tool's argument model
    (ending,) = traj.endings
    assert ending["ending"] == "completed" and ending["steps"] == 5 and traj.grade["resolved"]
    # the model saw exactly the recorded history, and the prompts name the real workdir
    assert server.requests[-1]["messages"] == traj.messages[: len(server.requests[-1]["messages"])]
    assert "/impasse-plain-" in server.requests[0]["messages"][0]["content"]


def test_budget_and_phase_handlers(layer, tmp_path):  # noqa: F811
    ticket = {"blocker": {"failed_operation": "x", "affected_target": "y", "error_feedback": "z z z z z"}}
    traj, _ = run(layer, tmp_path, [("escalate_to_human", ticket)] + [("bash", {"command": "true"})] * 10,
                  handlers=[RestoreAfterEscalation()], accepted=True)
    first, second = traj.endings
    assert first["ending"] == "escalated" and first["accepted"] and first["phase"] == 1
    assert traj.of_type("restore")[0]["step"] == 1
    assert second["ending"] == "step_limit" and second["phase"] == 2 and second["steps"] == 6
    assert "environment was restored" in traj.messages[4]["content"]


def test_unaccepted_escalation_ends_the_episode(layer, tmp_path):  # noqa: F811
    traj, _ = run(layer, tmp_path, [("escalate_to_human", {})], handlers=[RestoreAfterEscalation()])
    (ending,) = traj.endings
    assert ending["ending"] == "escalated" and not ending["accepted"] and not traj.of_type("restore")


@pytest.mark.parametrize("lines,message", [
    (['{"type": "header", "format": "impasse.trajectory/1"}'], ":1: header event: field 'condition'"),
    (['{"type": "header", "condition": "clean"}'], ":1: header event: field 'format'"),
    (['{"type": "header", "format": "impasse.trajectory/1", "condition": "clean"}', '{"type": "ending", "ending": "completed"}'],
     ":2: ending event: field 'steps'"),
    (['{"type": "header", "format": "impasse.trajectory/1", "condition": "clean"}', '{"type": "step", "tool": "bash"}', "{}"],
     ":2: step event: field 'step'"),
    (['{"type": "step", "step": 1}'], ":1: the first line must be the header"),
])
def test_reading_validates_and_names_file_line_and_field(tmp_path, lines, message):
    from impasse.store.trajectory import TrajectoryError

    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TrajectoryError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_trajectory(path)
