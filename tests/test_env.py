"""The Env on the real local backend (and, for forks, on the Docker backend too): a fork is an
independent copy (workspace, fault state, history, step count) with its own trajectory naming its
parent; a driver SIGKILLed mid-episode is continued by a new Env from the trajectory alone; a bad
spec is an error naming the field."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

import impasse.env
from impasse.env import SpecError
from impasse.store.trajectory import read_trajectory

pytestmark = pytest.mark.slow


def bash(env, command):
    return env.step({"name": "bash", "arguments": {"command": command}})


@pytest.fixture(params=["local", "docker"])
def fork_backend(request):
    """Every backend that can fork (the Docker one on the real engine scripts/engine.sh starts)."""
    if request.param == "docker":
        request.getfixturevalue("docker_client")
    return request.param


def test_a_fork_diverges_from_its_parent(glom_task, tmp_path, fork_backend):
    target = glom_task.target_file
    with impasse.env.make("blockers", task=glom_task.instance_id, condition="read_only_source", interface="monitor",
                          out=str(tmp_path), episode_id="parent", backend=fork_backend) as env:
        env.reset()
        assert "Permission denied" in bash(env, f"echo '# x' >> {target}").observation
        bash(env, "echo parent > /workspace/repo/NOTES.txt")
        with env.fork(episode_id="child") as child:
            assert child.steps == env.steps == 2 and child.messages == env.messages
            assert child.header["forked_from"] == {"episode_id": "parent", "step": 2}
            child.restore()  # the fault is cleared in the copy only
            assert "[exit code: 0]" in bash(child, f"echo '# fixed' >> {target}").observation
            bash(child, "echo child > /workspace/repo/NOTES.txt")
            assert "Permission denied" in bash(env, f"echo '# y' >> {target}").observation  # still broken here
            assert bash(env, "cat NOTES.txt").observation.startswith("parent")
            assert bash(child, "cat NOTES.txt").observation.startswith("child")
            assert "# fixed" in child.sandbox.diff() and "# fixed" not in env.sandbox.diff()
            # the monitor carried its state over: a refused chmod now completes the evidence in both
            nudged = [bash(e, f"ls -l {target}; chmod u+w {target}") for e in (env, child)]
            assert nudged[0].info.get("nudges") and not nudged[1].info.get("nudges")  # the child was restored
    parent, copy = read_trajectory(tmp_path / "episodes" / "parent.jsonl"), read_trajectory(
        tmp_path / "episodes" / "child.jsonl")
    shared = [e for e in parent.events if e["type"] in ("message", "step")][:4]  # 2 messages, 2 steps
    mine = [e for e in copy.events if e["type"] in ("message", "step")]
    assert mine[:4] == shared and mine[4] != [e for e in parent.events if e["type"] == "step"][2]
    assert copy.of_type("restore") and not parent.of_type("restore")


def test_a_fork_carries_a_temporary_faults_remaining_failures(glom_task, tmp_path, fork_backend):
    with impasse.env.make("blockers", task=glom_task.instance_id, condition="text_file_busy", out=str(tmp_path),
                          episode_id="busy", backend=fork_backend) as env:
        env.reset()
        assert "Text file busy" in bash(env, "python -c 'print(1)'").observation  # 1 of 2 failures
        with env.fork() as child:
            for e in (env, child):  # each copy fails once more, then runs
                assert "Text file busy" in bash(e, "python -c 'print(1)'").observation
                assert bash(e, "python -c 'print(1)'").observation.startswith("1")


DRIVER = textwrap.dedent("""\
    import os, signal, sys
    import impasse.env
    env = impasse.env.make("blockers", task=sys.argv[1], condition="clean", out=sys.argv[2], episode_id="killed")
    env.reset()
    env.step({"name": "bash", "arguments": {"command": "echo one > /workspace/repo/A.txt"}})
    env.step({"name": "edit_file", "arguments": {"path": "A.txt", "old_str": "one", "new_str": "two"}})
    env.step({"name": "bash", "arguments": {"command": "echo three >> /workspace/repo/A.txt"}})
    os.kill(os.getpid(), signal.SIGKILL)  # no close, no ending: the driver is gone
    """)


def test_a_killed_driver_is_continued_from_the_trajectory(glom_task, tmp_path):
    proc = subprocess.run([sys.executable, "-c", DRIVER, glom_task.instance_id, str(tmp_path)], capture_output=True,
                          text=True, env={**os.environ})
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    path = tmp_path / "episodes" / "killed.jsonl"
    before = path.read_text()
    with impasse.env.make("blockers", task=glom_task.instance_id, condition="clean", out=str(tmp_path),
                          episode_id="killed") as env:
        opening = env.reset()
        assert opening["info"]["resumed"] and env.steps == 3
        assert bash(env, "cat A.txt").observation.splitlines()[:2] == ["two", "three"]  # actions re-executed
        done = env.step({"name": "task_complete", "arguments": {"verified": False, "summary": "s"}})
    assert done.terminated and done.ending == "completed"
    after = path.read_text()
    assert after.startswith(before)  # nothing recorded was rewritten
    events = [json.loads(line) for line in after.splitlines()]
    assert [e["step"] for e in events if e["type"] == "step"] == [1, 2, 3, 4, 5]
    assert [e["type"] for e in events].count("resumed") == 1 and events[-1]["type"] == "final"


@pytest.mark.parametrize("fields,message", [
    ({"condition": "no_such"}, "field 'condition': Value error, unknown condition 'no_such'"),
    ({"interface": "chat"}, "field 'interface': Input should be 'baseline', 'tool' or 'monitor'"),
    ({"step_limit": 0}, "field 'step_limit': Input should be greater than or equal to 1"),
    ({"step_limit": "8"}, "field 'step_limit': Input should be a valid integer"),
    ({"conditon": "clean"}, "field 'conditon': Extra inputs are not permitted; the blockers Env's fields are"),
    ({"task": "nope__"}, "task 'nope__' is not among the tasks built here"),
])
def test_a_bad_spec_names_the_field(glom_task, tmp_path, fields, message):
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        impasse.env.make("blockers", **{"task": glom_task.instance_id, "out": str(tmp_path), **fields})
    with pytest.raises(SpecError, match="unknown suite 'blockerz'"):
        impasse.env.make("blockerz", task=glom_task.instance_id)
