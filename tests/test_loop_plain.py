"""The Env, its hooks and the loop without root: a plain-directory sandbox, and a scripted policy
served over real HTTP (tests/test_model_http.py::ScriptedServer) where a model is needed."""

import json

import pytest

from impasse.agent import loop
from impasse.agent.agents import AgentSpec
from impasse.agent.loop import LoopConfig, system_prompt, task_prompt
from impasse.env import Decision, Env, EnvError, EnvParts
from impasse.env.tools import tools_named
from impasse.sandbox.plain import PlainBackend
from impasse.store.rundir import RunDir
from impasse.store.sink import LocalStore
from impasse.store.trajectory import read_trajectory
from tests.test_backend_conformance import layer  # noqa: F401 - the tiny task layer fixture
from tests.test_model_http import ScriptedServer

TOOLS = ["bash", "edit_file", "task_complete", "escalate_to_human"]
TICKET = {"blocker": {"failed_operation": "x", "affected_target": "y", "error_feedback": "z z z z z"}}


def make_env(layer, tmp_path, accepted=False, restore=False, step_limit=6, before=(), grades=None):  # noqa: F811
    backend = PlainBackend()
    grades = [] if grades is None else grades

    def grade(_sb, patch):
        grades.append(patch)
        return {"resolved": "+    return a + b" in patch, "model_patch": patch}

    parts = EnvParts(
        header={"condition": "clean", "interface": "tool", "agent": "model/scripted"},
        open_sandbox=lambda: backend.create([layer]), tools=tools_named(TOOLS, "/repo"),
        first_messages=lambda sb: [{"role": "system", "content": system_prompt(sb.workdir, True)},
                                   {"role": "user", "content": task_prompt("add() subtracts", sb.workdir)}],
        grade=grade, accepts=lambda _t, _s, _k: accepted, restore_after_escalation=restore,
        restore_notice="[impasse harness] The environment was restored. {left} tool calls remain.")
    return Env(parts, episode_id="e", store=LocalStore(RunDir(tmp_path)), step_limit=step_limit, before_step=before)


def run(layer, tmp_path, actions, **kw):  # noqa: F811
    server = ScriptedServer(actions)
    model = AgentSpec("openai", "scripted").make_model(None, {"model_config": {"base_url": server.url}})
    try:
        with make_env(layer, tmp_path, **kw) as env:
            last = loop.run(env, model)
    finally:
        server.close()
    return read_trajectory(tmp_path / "episodes" / "e.jsonl"), server, last


def test_a_fix_through_the_tools_is_graded(layer, tmp_path):  # noqa: F811
    traj, server, last = run(layer, tmp_path, [
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
    assert ending["ending"] == "completed" and ending["steps"] == 5 and traj.grade["resolved"] and traj.complete
    assert last.terminated and not last.truncated and last.ending == "completed" and last.info["grade"]["resolved"]
    # the model saw exactly the recorded history, and the prompts name the real workdir
    assert server.requests[-1]["messages"] == traj.messages[: len(server.requests[-1]["messages"])]
    assert "/impasse-plain-" in server.requests[0]["messages"][0]["content"]


def test_budget_and_restoration_after_an_accepted_escalation(layer, tmp_path):  # noqa: F811
    traj, _, last = run(layer, tmp_path, [("escalate_to_human", TICKET)] + [("bash", {"command": "true"})] * 10,
                        accepted=True, restore=True)
    first, second = traj.endings
    assert first["ending"] == "escalated" and first["accepted"] and first["phase"] == 1
    assert traj.of_type("restore")[0]["step"] == 1
    assert second["ending"] == "step_limit" and second["phase"] == 2 and second["steps"] == 6
    assert "environment was restored" in traj.messages[4]["content"] and "5 tool calls remain" in traj.messages[4]["content"]
    assert last.truncated and not last.terminated and last.ending == "step_limit"


def test_unaccepted_escalation_ends_the_episode(layer, tmp_path):  # noqa: F811
    traj, _, last = run(layer, tmp_path, [("escalate_to_human", {})], restore=True)
    (ending,) = traj.endings
    assert ending["ending"] == "escalated" and not ending["accepted"] and not traj.of_type("restore")
    assert last.terminated and last.ending == "escalated"


class Policy:
    """A before_step hook: holds every bash call that mentions 'rm', rewrites 'cat' to 'head -1',
    rejects 'curl', and terminates on 'shutdown'."""

    def before_step(self, env, call):
        args = call["arguments"] if isinstance(call["arguments"], dict) else json.loads(call["arguments"])
        command = args.get("command", "")
        if "shutdown" in command:
            return Decision("terminate", "asked to shut down", by="policy")
        if "curl" in command:
            return Decision("reject", "no network calls", by="policy")
        if "rm " in command:
            return Decision("escalate", "deletes files", by="policy")
        if command.startswith("cat "):
            return Decision("modify", call={"name": "bash", "arguments": {"command": "head -1 " + command[4:]}},
                            by="policy")
        return None


def test_before_step_hooks_approve_modify_reject_hold_and_release(layer, tmp_path):  # noqa: F811
    with make_env(layer, tmp_path, before=[Policy()]) as env:
        env.reset()
        modified = env.step({"name": "bash", "arguments": {"command": "cat pkg/mod.py"}})
        assert "def add" in modified.observation and "return" not in modified.observation  # head -1 ran
        assert modified.info["decision"]["action"] == "modify" and env.steps == 1
        rejected = env.step({"name": "bash", "arguments": {"command": "curl http://x"}})
        assert "not run: no network calls" in rejected.observation and env.steps == 2
        held = env.step({"name": "bash", "arguments": {"command": "rm README && ls"}, "id": "c9"})
        assert held.info["held"] and env.steps == 2 and not held.done  # no step counted while held
        with pytest.raises(EnvError, match="held"):
            env.step({"name": "bash", "arguments": {"command": "true"}})
        released = env.resume(held.info["held"], Decision("approve", by="reviewer"))
        assert env.steps == 3 and "README" not in released.observation and released.messages[0]["tool_call_id"] == "c9"
        ended = env.step({"name": "bash", "arguments": {"command": "shutdown now"}})
        assert ended.terminated and ended.ending == "error" and env.steps == 3
    traj = read_trajectory(tmp_path / "episodes" / "e.jsonl")
    steps = traj.of_type("step")
    assert [s["decision"]["action"] for s in steps] == ["modify", "reject", "approve"]
    assert steps[2]["decision"]["held"] == held.info["held"] and steps[2]["decision"]["by"] == "reviewer"
    assert traj.of_type("held")[0]["call"]["arguments"]["command"] == "rm README && ls"
    assert "terminated by policy: asked to shut down" in traj.endings[0]["error"] and traj.complete


def test_a_loop_with_a_decider_releases_held_calls(layer, tmp_path):  # noqa: F811
    server = ScriptedServer([("bash", {"command": "rm README"}), ("task_complete", {"verified": False, "summary": "s"})])
    model = AgentSpec("openai", "scripted").make_model(None, {"model_config": {"base_url": server.url}})
    asked = []

    def decide(env, held, result):
        asked.append((held, result.info["reason"]))
        return Decision("reject", "not allowed", by="test")

    try:
        with make_env(layer, tmp_path, before=[Policy()]) as env:
            last = loop.run(env, model, LoopConfig(decide=decide))
    finally:
        server.close()
    assert asked == [("h1.1", "deletes files")] and last.ending == "completed" and env.steps == 2


def test_an_interrupted_episode_is_rebuilt_and_graded_once(layer, tmp_path):  # noqa: F811
    """A driver that died mid-episode: a new Env on the same trajectory re-executes the recorded
    actions, continues from the recorded history, and a grade already recorded is not redone."""
    env = make_env(layer, tmp_path)
    env.reset()
    env.step({"name": "edit_file", "arguments": {"path": "pkg/mod.py", "old_str": "a - b", "new_str": "a + b"}})
    env.step({"name": "bash", "arguments": {"command": "echo one >> notes.txt"}})
    env.writer.close()  # the driver is gone: no ending, the sandbox is left to the sweeper
    env.sandbox.close()
    grades = []
    again = make_env(layer, tmp_path, grades=grades)
    opening = again.reset()
    assert opening["info"]["resumed"] and opening["info"]["step"] == 2 and again.steps == 2
    assert opening["messages"] == env.messages
    r = again.step({"name": "bash", "arguments": {"command": "cat notes.txt; grep return pkg/mod.py"}})
    assert "one" in r.observation and "a + b" in r.observation  # the recorded actions were re-executed
    done = again.step({"name": "task_complete", "arguments": {"verified": False, "summary": "s"}})
    assert done.terminated and done.info["grade"]["resolved"] and len(grades) == 1
    path = tmp_path / "episodes" / "e.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n")  # killed between the grade and 'final'
    third = make_env(layer, tmp_path, grades=grades)
    assert third.reset()["info"]["done"] and third.done
    traj = read_trajectory(path)
    assert len(grades) == 1 and [e["type"] for e in traj.events].count("grade") == 1 and traj.complete
    assert third.grade()["resolved"]


def test_a_finished_episode_is_only_read(layer, tmp_path):  # noqa: F811
    run(layer, tmp_path, [("task_complete", {"verified": False, "summary": "s"})])
    env = make_env(layer, tmp_path)
    opening = env.reset()
    assert opening["info"]["done"] and env.sandbox is None
    with pytest.raises(EnvError, match="over"):
        env.step({"name": "bash", "arguments": {"command": "true"}})


def test_misuse_is_a_clear_error(layer, tmp_path):  # noqa: F811
    env = make_env(layer, tmp_path)
    with pytest.raises(EnvError, match="reset"):
        env.step({"name": "bash", "arguments": {"command": "true"}})
    with env:
        env.reset()
        with pytest.raises(EnvError, match="reset"):
            env.reset()
        with pytest.raises(EnvError, match="no held call"):
            env.resume("h9", Decision())
        from impasse.sandbox.base import ForkUnsupported

        with pytest.raises(ForkUnsupported, match="plain backend cannot fork"):
            env.fork()
    with pytest.raises(ValueError, match="modify"):
        Decision("modify")
    with pytest.raises(ValueError, match="use one of"):
        Decision("maybe")


@pytest.mark.parametrize("lines,message", [
    (['{"type": "header", "format": "impasse.trajectory/1"}'], ":1: header event: field 'condition'"),
    (['{"type": "header", "condition": "clean"}'], ":1: header event: field 'format'"),
    (['{"type": "header", "format": "impasse.trajectory/1", "condition": "clean"}', '{"type": "ending", "ending": "completed"}'],
     ":2: ending event: field 'steps'"),
    (['{"type": "header", "format": "impasse.trajectory/1", "condition": "clean"}', '{"type": "step", "tool": "bash"}', "{}"],
     ":2: step event: field 'step'"),
    (['{"type": "step", "step": 1}'], ":1: the first line must be the header"),
    # strict: a number or a boolean written as text is an error, never coerced
    (['{"type": "header", "format": "impasse.trajectory/1", "condition": "clean"}',
      '{"type": "ending", "steps": "8", "ending": "completed"}', "{}"], ":2: ending event: field 'steps': Input should be a valid integer"),
    (['{"type": "header", "format": "impasse.trajectory/1", "condition": "clean"}', '{"type": "grade", "resolved": "false"}',
      "{}"], ":2: grade event: field 'resolved': Input should be a valid boolean"),
    (['{"type": "header", "format": "impasse.trajectory/1", "condition": "clean", "step_limit": "80"}'],
     ":1: header event: field 'step_limit'"),
    # one episode per file: a second trajectory appended (with or without its header) is refused
    (['{"type": "header", "format": "impasse.trajectory/1", "condition": "clean"}', '{"type": "final"}',
      '{"type": "header", "format": "impasse.trajectory/1", "condition": "clean"}', '{"type": "final"}'],
     ":3: a second header"),
    (['{"type": "header", "format": "impasse.trajectory/1", "condition": "clean"}', '{"type": "final"}',
      '{"type": "step", "step": 1, "tool": "bash", "arguments": {}, "output": "", "exit_code": 0}', '{"type": "final"}'],
     ":3: an event after the episode's final event"),
])
def test_reading_validates_and_names_file_line_and_field(tmp_path, lines, message):
    from impasse.store.trajectory import TrajectoryError

    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TrajectoryError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_trajectory(path)
