"""``--resume DIR --rerun harness-errors|invalid``: exactly the chosen episodes run again, their
old trajectories are kept in RUN/attempts/, every other episode stays byte-identical."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

IMPASSE = [sys.executable, "-m", "impasse.cli"]


def snapshot(run_dir):
    return {p.name: p.read_bytes() for p in (run_dir / "episodes").glob("*.jsonl")}


def test_rerun_harness_errors_then_invalid_touches_nothing_else(glom_task, tmp_path):
    run_dir = tmp_path / "run"
    first = subprocess.run(IMPASSE + ["run", "--tasks", glom_task.instance_id, "--conditions", "clean,read_only_source",
                                      "--interfaces", "tool", "--agent", "oracle,escalator", "--jobs", "2",
                                      "--out", str(run_dir)], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr[-3000:]
    before = snapshot(run_dir)
    assert len(before) == 4
    # An attempt that failed in the harness, as it is left on disk: its header, the steps it got
    # to, then the harness_error event (here: cut after the first step).
    victim = sorted(before)[1]
    lines = before[victim].decode().splitlines(keepends=True)
    first_step = next(k for k, line in enumerate(lines) if json.loads(line)["type"] == "step")
    failed = "".join(lines[: first_step + 1]) + json.dumps({"type": "harness_error", "error": "OSError: injected",
                                                            "at": "2026-01-01T00:00:00Z"}) + "\n"
    (run_dir / "episodes" / victim).write_text(failed)

    with pytest.raises(subprocess.CalledProcessError):  # --rerun needs --resume
        subprocess.run(IMPASSE + ["run", "--rerun", "harness-errors"], capture_output=True, check=True)
    again = subprocess.run(IMPASSE + ["run", "--resume", str(run_dir), "--rerun", "harness-errors", "--jobs", "1"],
                           capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "1 in parallel" in " ".join((again.stdout + again.stderr).split())  # --jobs applies on resume (the run said 2)
    after = snapshot(run_dir)
    assert {k for k in before if before[k] != after[k]} == {victim}
    rerun = [json.loads(line) for line in after[victim].decode().splitlines()]
    assert rerun[-1]["type"] == "final" and not any(e["type"] == "harness_error" for e in rerun)
    assert (run_dir / "attempts" / victim.replace(".jsonl", ".1.jsonl")).read_text() == failed
    assert len(json.loads((run_dir / "summary.json").read_text())) == 4

    # --rerun invalid: trajectories the ask suite marks invalid (an "invalid" event)
    other = sorted(before)[2]
    path = run_dir / "episodes" / other
    lines = path.read_text().splitlines(keepends=True)
    marked = "".join(lines[:-1]) + json.dumps({"type": "invalid", "reason": "test"}) + "\n" + lines[-1]
    path.write_text(marked)
    current = snapshot(run_dir)
    third = subprocess.run(IMPASSE + ["run", "--resume", str(run_dir), "--rerun", "invalid"],
                           capture_output=True, text=True)
    assert third.returncode == 0, third.stderr[-3000:]
    final = snapshot(run_dir)
    assert {k for k in current if current[k] != final[k]} == {other}
    assert (run_dir / "attempts" / other.replace(".jsonl", ".1.jsonl")).read_text() == marked
    nothing = subprocess.run(IMPASSE + ["run", "--resume", str(run_dir), "--rerun", "invalid"],
                             capture_output=True, text=True)
    assert nothing.returncode == 2 and "no episode" in nothing.stderr
