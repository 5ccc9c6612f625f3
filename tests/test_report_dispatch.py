"""The report dispatches through each trajectory's suite: its annotate and its report, whichever
suite it is (a registered one included); a trajectory of an unknown suite is skipped, named."""

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from impasse.cli import app
from impasse.env.registry import SUITES
from impasse.report.report import annotate_run

CORPUS = Path(__file__).parent / "corpus"


class Counting:
    """A suite of its own: annotates every trajectory as its step count."""

    name = "counting"

    def annotate(self, trajectory):
        return {"steps": len(trajectory.steps), "agent": trajectory.header.get("agent", "")}

    def report(self, rows, sources, *, compare=None, judge_model=None, judge_base_url=None):
        return {"format": "counting/1", "total_steps": sum(r["steps"] for r in rows)}

    def show(self, report, console):
        console.print(f"counted {report['total_steps']} steps")

    def html(self, report):
        return f"<p>{report['total_steps']}</p>"


def _run_of(tmp_path, suite):
    run = tmp_path / suite / "episodes"
    run.mkdir(parents=True)
    for p in sorted(CORPUS.glob("*.jsonl"))[:3]:
        lines = p.read_text().splitlines()
        header = json.loads(lines[0])
        lines[0] = json.dumps({**header, "suite": suite})
        (run / p.name).write_text("\n".join(lines) + "\n")
    return run.parent


def test_a_registered_suite_annotates_and_reports_its_runs(tmp_path, monkeypatch):
    monkeypatch.setitem(SUITES._entries, "counting", Counting())
    run = _run_of(tmp_path, "counting")
    rows, problems = annotate_run(run, write=False)
    assert not problems and {r["suite"] for r in rows} == {"counting"} and all("steps" in r for r in rows)
    res = CliRunner().invoke(app, ["report", str(run), "--json", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "r.json").read_text())["format"] == "counting/1" and "counted" in res.output


def test_an_unknown_suite_is_skipped_by_name_and_mixed_suites_are_refused(tmp_path, monkeypatch):
    run = _run_of(tmp_path, "nosuch")
    rows, problems = annotate_run(run, write=False)
    assert rows == [] and len(problems) == 3 and all("unknown suite 'nosuch'" in p for p in problems)
    monkeypatch.setitem(SUITES._entries, "counting", Counting())
    mixed = _run_of(tmp_path, "counting")
    first = sorted(CORPUS.glob("*.jsonl"))[0]
    shutil.copy(first, mixed / "episodes" / f"blockers-{first.name}")
    res = CliRunner().invoke(app, ["report", str(mixed)])
    assert res.exit_code == 2 and "mix suites (blockers, counting)" in res.output, res.output
