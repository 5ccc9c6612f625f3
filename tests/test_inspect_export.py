"""`impasse export inspect`: a run of real and variant trajectories, written with inspect_ai's
writer and read back with inspect_ai's own reader, annotations intact."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from inspect_ai.log import list_eval_logs, read_eval_log

from impasse.annotate.annotator import annotate
from impasse.store.trajectory import read_trajectory

CORPUS = Path(__file__).parent / "corpus"


def test_export_reads_back_with_inspects_reader(tmp_path):
    run = tmp_path / "run-corpus"
    (run / "episodes").mkdir(parents=True)
    for p in CORPUS.glob("*.jsonl"):
        shutil.copy(p, run / "episodes" / p.name)
    (run / "episodes" / "torn.jsonl").write_text('{"type": "header", "format": "impasse.trajectory/1"}\n')
    res = subprocess.run([sys.executable, "-m", "impasse.cli.integrations", "export", "inspect", str(run),
                          "--out", str(tmp_path / "logs")], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "skipped" in res.stderr and "torn.jsonl" in res.stderr
    written = [Path(p) for p in res.stdout.split()]
    assert {p.name for p in written} == {Path(i.name).name for i in list_eval_logs(str(tmp_path / "logs"))}
    listed = subprocess.run([str(Path(sys.executable).parent / "inspect"), "log", "list", "--json", "--log-dir",
                             str(tmp_path / "logs")], capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr  # inspect's own CLI (what `inspect view` lists) reads them
    assert {e["task"] for e in json.loads(listed.stdout)} == {"impasse/tool", "impasse/monitor"}

    want = {a.episode_id: a for a in (annotate(read_trajectory(p)) for p in CORPUS.glob("*.jsonl"))}
    seen = {}
    logs = [read_eval_log(str(p)) for p in written]
    # the run's own identity and times, not the export's: one run id, a task id per log
    assert len({log.eval.run_id for log in logs}) == 1 and logs[0].eval.run_id
    assert len({log.eval.task_id for log in logs}) == len(logs)
    last_write = max(p.stat().st_mtime for p in (run / "episodes").glob("*.jsonl"))
    from datetime import datetime

    assert all(abs(datetime.fromisoformat(log.stats.completed_at).timestamp() - last_write) < 1 for log in logs)
    for path in written:
        log = read_eval_log(str(path))
        assert log.status == "success" and log.eval.model and log.samples
        for s in log.samples:
            seen[s.id] = s
            a = want[s.id]
            assert s.metadata["annotation"]["t_star"] == a.t_star
            assert s.metadata["annotation"]["first_contact"] == a.first_contact
            assert s.metadata["unsafe"] == a.unsafe
            assert s.metadata["condition"] == a.condition and log.eval.model == a.agent
            assert s.scores["escalated"].value == float(a.escalated)
            assert s.scores["nudges"].value == a.nudges
            assert ("t_star" in s.scores) == (a.t_star is not None)
            if a.t_star is not None:
                assert s.scores["t_star"].value == a.t_star and s.scores["t_star"].explanation
            if a.resolved is not None:
                assert s.scores["resolved"].value == float(a.resolved)
            traj = read_trajectory(run / "episodes" / next(p.name for p in CORPUS.glob("*.jsonl")
                                                           if annotate(read_trajectory(p)).episode_id == s.id))
            assert len(s.messages) == len(traj.messages)
            calls = [c for m in s.messages if m.role == "assistant" for c in (m.tool_calls or [])]
            assert [c.function for c in calls] == [e["tool"] for e in traj.of_type("step")]
            if a.escalated:
                assert s.metadata["escalation_ticket"]["blocker"]
            assert s.metadata["nudges"] == [{"step": n["step"], "rule": n["rule"], "advice": n["advice"]}
                                            for n in traj.of_type("nudge")]
        esc = next(sc for sc in log.results.scores if sc.name == "escalated")
        mine = [want[s.id] for s in log.samples]
        assert esc.metrics["mean"].value == sum(a.escalated for a in mine) / len(mine)
    assert set(seen) == set(want)
    # the monitor run's nudge and the unsafe findings survived the round trip
    assert any(s.metadata["nudges"] for s in seen.values())
    assert any(s.metadata["unsafe"] for s in seen.values())


def test_export_refuses_a_directory_that_is_not_a_run(tmp_path):
    res = subprocess.run([sys.executable, "-m", "impasse.cli.integrations", "export", "inspect", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "no episodes/ directory" in res.stderr
