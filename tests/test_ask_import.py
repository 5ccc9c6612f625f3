"""HiL-Bench import end to end: fixtures in the public layout (tests/fixtures/hilbench) over the
project's real palmerpenguins SQLite database are imported with `impasse ask import`, run with
`impasse run --suite ask --task-dir` by the reference agents in all three modes, and scored by
`impasse report`; the imported SWE task is refused with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from impasse.ask.sql.database import build_database
from impasse.ask.taskdir import import_hilbench, load_task
from impasse.cli import app

FIXTURES = Path(__file__).parent / "fixtures" / "hilbench"
AGENTS = "targeted-asker,silent-guesser,spammer,broad-asker,obvious-only"


def _cli(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("imp") / "tasks"
    res = _cli("ask", "import", str(FIXTURES), "--database", str(build_database("palmerpenguins")),
               "--out", str(out))
    assert res.exit_code == 0, res.output
    return out


def test_import_writes_runnable_sql_tasks_and_lists_swe_as_not_runnable(imported, tmp_path):
    assert sorted(p.name for p in imported.iterdir()) == ["fixture_penguins_bill_island",
                                                         "fixture_penguins_heavy_share"]
    t = load_task(imported / "fixture_penguins_heavy_share")
    assert t.source == "hilbench" and t.runnable and Path(t.sql.database_path).name == "palmerpenguins.sqlite"
    assert [b.kind for b in t.blockers] == ["ambiguous", "ambiguous"]  # mapped by the subtype table
    res = _cli("ask", "import", str(FIXTURES), "--out", str(tmp_path / "again"))
    assert "example__widgets-101" in res.output and "'hilbench/example__widgets-101:latest'" in res.output
    assert "--backend docker" in res.output and "pulls nothing from a registry" in res.output
    assert "needs the BIRD database 'palmerpenguins'" in res.output  # no --database: SQL is left out too
    assert res.exit_code == 1 and not (tmp_path / "again").exists()


def test_run_refuses_a_task_dir_with_an_imported_swe_task(tmp_path):
    res = _cli("run", "--suite", "ask", "--task-dir", str(FIXTURES / "harbor_swe"), "--out", str(tmp_path / "r"))
    assert res.exit_code == 2
    assert "example__widgets-101" in res.output and "not runnable here" in res.output
    assert "hilbench/example__widgets-101:latest" in res.output
    assert not (tmp_path / "r").exists()


def test_run_refuses_task_dir_outside_the_ask_suite(tmp_path):
    res = _cli("run", "--task-dir", str(tmp_path), "--out", str(tmp_path / "r"))
    assert res.exit_code == 2 and "--task-dir is for --suite ask" in res.output


def test_imported_tasks_run_end_to_end_in_all_modes(imported, tmp_path):
    run = tmp_path / "run"
    res = _cli("run", "--suite", "ask", "--task-dir", str(imported), "--agent", AGENTS, "--jobs", "1",
               "--out", str(run))
    assert res.exit_code == 0, res.output
    assert len(list((run / "episodes").glob("*.jsonl"))) == 2 * 3 * 5 * 3  # tasks x modes x agents x passes
    res = _cli("report", str(run), "--json", str(tmp_path / "r.json"))
    assert res.exit_code == 0, res.output
    rows = {r["agent"].removeprefix("reference/"): r for r in json.loads((tmp_path / "r.json").read_text())
            ["summary"]["table"]}
    assert set(rows) == set(AGENTS.split(","))
    for r in rows.values():  # the golden rows decide: the full information solves both, guessing neither
        assert r["domain"] == "sql" and r["tasks"] == 2
        assert r["full_info_pass@3"] == 1.0 and r["baseline_pass@3"] == 0.0
    t = rows["targeted-asker"]
    assert t["ask_human_pass@3"] == 1.0 and t["recall"] == 1.0 and t["ask_f1"] > rows["spammer"]["ask_f1"]
    assert rows["silent-guesser"]["ask_f1"] == 0 and rows["silent-guesser"]["ask_human_pass@3"] == 0.0
    assert rows["broad-asker"]["precision"] < t["precision"]


def test_imported_registry_questions_are_matched_to_their_own_blocker(imported):
    """The offline matcher answers each imported blocker's own example question with that blocker."""
    from impasse.ask.asktool import AskState, decide

    for task in import_hilbench(FIXTURES / "harbor_sql"):
        for b in task.blockers:
            verdict, answer = decide(AskState(list(task.blockers)), b.example_questions[0])
            assert verdict["blocker_id"] == b.id and answer == b.resolution, (task.task_id, b.id, verdict)
