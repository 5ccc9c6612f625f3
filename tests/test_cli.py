"""The command line: clear messages for bad input, exit codes, machine-readable output."""

import json
import subprocess
import sys

import pytest

IMPASSE = [sys.executable, "-m", "impasse.cli"]


def cli(*args, check_code=None):
    res = subprocess.run([*IMPASSE, *args], capture_output=True, text=True, timeout=300)
    if check_code is not None:
        assert res.returncode == check_code, res.stdout + res.stderr
    return res


@pytest.mark.parametrize("args,message", [
    (["conditions", "show", "nope"], "unknown condition 'nope'"),
    (["run", "--conditions", "nope"], "unknown condition or class 'nope'"),
    (["run", "--agent", "wizard"], "unknown reference agent 'wizard'"),
    (["run", "--agent", "telepathy:x"], "unknown agent kind 'telepathy'"),
    (["run", "--backend", "cloud"], "unknown backend 'cloud'"),
    (["run", "--executor", "magic"], "unknown executor 'magic'"),
    (["schema", "nope"], "unknown schema 'nope'"),
    (["run", "--interfaces", "tool,telepathy"], "unknown interface(s) ['telepathy']"),
    (["run", "--resume", "/nonexistent/run"], "is not a run directory"),
    (["run", "--resume", "/nonexistent/run", "--agent", "oracle", "--step-limit", "5", "--jobs", "1"],
     "--agent, --step-limit cannot be given with it"),
    (["tasks", "show", "no-such-task"], "unknown task 'no-such-task'"),
    (["tasks", "build", "bad<spec"], "bad package spec 'bad<spec'"),
    (["tasks", "build", "--suite", "nosuchsuite"], "unknown suite 'nosuchsuite'"),
    (["report", "/nonexistent/run"], "no trajectories"),
])
def test_bad_input_is_named(args, message):
    res = cli(*args, check_code=2)
    assert message in " ".join(res.stderr.split()), res.stderr


def test_conditions_list_json():
    data = json.loads(cli("conditions", "list", "--json", check_code=0).stdout)
    assert len(data) == 13 and {d["class"] for d in data} >= {"persistent", "verification", "temporary"}


@pytest.mark.slow
def test_sandbox_exec_shows_the_fault_and_propagates_exit_codes(glom_task):
    res = cli("sandbox", "exec", glom_task.instance_id, "--condition", "read_only_source", "--",
              f"ls -l {glom_task.target_file}")
    assert res.returncode == 0 and "root root" in res.stdout
    res = cli("sandbox", "exec", glom_task.instance_id, "--condition", "read_only_source", "--",
              f"chmod u+w {glom_task.target_file}")
    assert res.returncode == 1 and "Operation not permitted" in res.stderr
    res = cli("sandbox", "exec", glom_task.instance_id, "--condition", "disk_full", "--restore-after", "1", "--",
              "echo x > a.txt ;; echo y > b.txt && echo ok")
    assert "No space left on device" in res.stderr and res.stdout.strip() == "ok" and res.returncode == 0


@pytest.mark.slow
def test_run_refuses_to_overwrite_and_tasks_list_json(glom_task, tmp_path):
    out = tmp_path / "run"
    cli("run", "--tasks", glom_task.instance_id, "--conditions", "clean", "--interfaces", "tool", "--agent",
        "oracle", "--out", str(out), check_code=0)
    res = cli("run", "--tasks", glom_task.instance_id, "--out", str(out), check_code=2)
    assert "already holds a run" in res.stderr
    rows = json.loads(cli("tasks", "list", "--json", check_code=0).stdout)
    assert glom_task.instance_id in {r["instance_id"] for r in rows}
    rep = json.loads(cli("report", str(out), "--json", "-", check_code=0).stdout)
    (ep,) = rep["episodes"]
    assert ep["resolved"] and ep["ending"] == "completed" and rep["summary"]["note"].startswith("reference agents")
