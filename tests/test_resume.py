"""SIGKILL `impasse run` at random moments, resume, repeat: no recorded step is lost, no episode
is duplicated, and the finished run is complete."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from recording import recorded

pytestmark = pytest.mark.slow

IMPASSE = [sys.executable, "-m", "impasse.cli"]


def test_sigkill_and_resume_loses_and_duplicates_nothing(glom_task, tmp_path):
    run_dir = tmp_path / "run"
    args = ["run", "--tasks", glom_task.instance_id, "--conditions", "clean,read_only_source,test_killed",
            "--interfaces", "tool,monitor", "--agent", "oracle,escalator,reluctant", "--jobs", "2",
            "--out", str(run_dir)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    rng = random.Random(1234)
    before: dict[str, list[str]] = {}
    kills = 0
    cmd = IMPASSE + args
    for _ in range(12):
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                                start_new_session=True)
        started = time.monotonic()
        while not (run_dir / "manifest.json").exists() and proc.poll() is None and time.monotonic() - started < 60:
            time.sleep(0.05)  # a run killed before it planned anything has nothing to resume
        time.sleep(rng.uniform(0.8, 3.5))
        if proc.poll() is not None:
            break
        os.killpg(proc.pid, signal.SIGKILL)  # the run and its workers, mid-write if need be
        proc.wait()
        kills += 1
        now = recorded(run_dir)
        for eid, lines in before.items():
            assert now[eid][: len(lines)] == lines, f"{eid}: recorded events were lost or rewritten"
        before = now
        cmd = IMPASSE + ["run", "--resume", str(run_dir)]
    assert kills >= 10
    done = subprocess.run(IMPASSE + ["run", "--resume", str(run_dir)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    final = recorded(run_dir)
    for eid, lines in before.items():
        assert final[eid][: len(lines)] == lines
    manifest = json.loads((run_dir / "manifest.json").read_text())
    planned = {e["episode_id"] for e in manifest["episodes"]}
    assert set(final) == planned and len(planned) == 18
    for eid, lines in final.items():
        events = [json.loads(line) for line in lines]
        types = [e["type"] for e in events]
        assert types.count("header") == 1 and types.count("final") == 1 and types[-1] == "final", eid
        steps = [e["step"] for e in events if e["type"] == "step"]
        assert steps == list(range(1, len(steps) + 1)), f"{eid}: steps must be 1..n exactly once"
        assert types.count("grade") == 1
    summary = json.loads((run_dir / "summary.json").read_text())
    assert len(summary) == 18 and not [r for r in summary if r["ending"] == "harness_error"]
    from impasse.sandbox import lease

    stale = []
    lease.sweep(Path(os.environ["IMPASSE_CACHE"], "episodes"), stale.append)
    assert stale == [], "episodes of killed runs must be swept by the next run"
