"""One run per directory: default directories are unique even for runs started in the same second,
a second process never writes into a run it did not create or resume, a live run's resume is
refused naming its owner, and reading a live trajectory never changes it."""

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from impasse.store.rundir import RunBusy, RunDir, RunDirError, new_default
from impasse.store.sink import LocalStore
from impasse.store.trajectory import TrajectoryWriter, read_trajectory

IMPASSE = [sys.executable, "-m", "impasse.cli"]


def test_default_directories_are_unique_when_made_at_once(tmp_path):
    with ThreadPoolExecutor(16) as pool:
        made = list(pool.map(lambda _: new_default(tmp_path).path, range(200)))
    assert len(set(made)) == 200 and all(p.is_dir() for p in made)


def test_the_manifest_is_created_once_and_the_owner_is_named(tmp_path):
    rd = RunDir(tmp_path / "run")
    rd.write_manifest({"config": {}, "episodes": []})
    with pytest.raises(RunDirError, match="already holds a run"):
        RunDir(tmp_path / "run").write_manifest({"config": {"other": 1}, "episodes": []})
    with rd.own(), pytest.raises(RunBusy, match=rf"is being run right now by pid {os.getpid()} on "):
        RunDir(tmp_path / "run").own().__enter__()
    with rd.own():  # released: the next owner gets it
        pass


def test_reading_a_live_trajectory_never_changes_it(tmp_path):
    path = tmp_path / "episodes" / "e.jsonl"
    w = TrajectoryWriter(path, {"condition": "clean", "episode_id": "e"})
    w.append({"type": "step", "step": 1, "tool": "bash", "arguments": {}, "output": "x", "exit_code": 0})
    with open(path, "a") as fh:  # the writer is mid-line right now
        fh.write('{"type": "step", "ste')
    before = path.read_bytes()
    assert len(read_trajectory(path).steps) == 1  # the torn line is ignored
    assert LocalStore(RunDir(tmp_path)).prior("e") is not None
    assert path.read_bytes() == before  # and left as it is: only its writer cuts it
    w.close()
    again = TrajectoryWriter(path)  # the next writer, holding the lock, cuts it before appending
    again.append({"type": "final"})
    again.close()
    assert [e["type"] for e in read_trajectory(path).events] == ["step", "final"]


def _ask_run(out=None, agent="silent-guesser"):
    args = IMPASSE + ["run", "--suite", "ask", "--tasks", "fl01", "--interfaces", "baseline", "--agent", agent]
    return args + (["--out", str(out)] if out else [])


def test_two_runs_started_together_never_share_a_directory(tmp_path):
    procs = [subprocess.Popen(_ask_run(agent=a), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for a in ("silent-guesser", "targeted-asker")]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
    runs = [d for d in (tmp_path / "runs").iterdir() if d.is_dir() and not d.is_symlink()]
    assert len(runs) == 2
    for d in runs:
        manifest = json.loads((d / "manifest.json").read_text())
        planned = {e["episode_id"] for e in manifest["episodes"]}
        assert planned == {p.stem for p in (d / "episodes").glob("*.jsonl")}  # only its own episodes
        assert len({e["agent"] for e in manifest["episodes"]}) == 1


@pytest.mark.slow
def test_resuming_a_live_run_is_refused_naming_its_owner(glom_task, tmp_path):
    run_dir = tmp_path / "run"
    first = subprocess.Popen(IMPASSE + ["run", "--tasks", glom_task.instance_id, "--conditions", "read_only_source",
                                        "--interfaces", "tool", "--agent", "persistent", "--out", str(run_dir)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not list((run_dir / "episodes").glob("*.jsonl")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert first.poll() is None, first.stderr.read().decode()[-2000:]
        resumed = subprocess.run(IMPASSE + ["run", "--resume", str(run_dir)], capture_output=True, text=True)
        again = subprocess.run(IMPASSE + ["run", "--out", str(run_dir), "--tasks", glom_task.instance_id],
                               capture_output=True, text=True)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    message = " ".join(resumed.stderr.split())
    assert resumed.returncode == 2 and f"is being run right now by pid {first.pid}" in message, message
    assert again.returncode == 2 and "already holds a run" in " ".join(again.stderr.split())
    done = subprocess.run(IMPASSE + ["run", "--resume", str(run_dir)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]  # the owner is gone: the lock is free at once
