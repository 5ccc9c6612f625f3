"""HiL-Bench import on the release's own layout (Harbor task directories: ``<mode>/task.toml``,
``<mode>/instruction.md``, ``shared/``). The fixture (tests/fixtures/hilbench_release) is written in
that layout with our own content; its database is built here from ``library.sql``, so the whole
path is real: the importer checks the database against each task, `impasse run --suite ask
--task-dir` runs the written tasks in all three modes, `impasse report` scores them. Bad tasks and
wrong databases are refused one by one, naming what is wrong, and the batch goes on.

A checkout of the public release is used when ``IMPASSE_HILBENCH`` names one (see docs/ask-sql.md):
all 200 tasks must validate."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from impasse.ask.importer import import_hilbench
from impasse.ask.taskdir import load_task
from impasse.cli import app

FIXTURE = Path(__file__).parent / "fixtures" / "hilbench_release"
SQL_TASKS = ("sql_0", "sql_2")


def _cli(*args: str):
    return CliRunner().invoke(app, list(args))


def build_db(path: Path, drop_column: str | None = None, delete: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURE / "library.sql").read_text())
    if drop_column:
        table, col = drop_column.split(".")
        conn.execute(f"ALTER TABLE {table} DROP COLUMN {col}")
    if delete:
        conn.execute(delete)
    conn.commit()
    conn.close()
    return path


def release(tmp: Path, warm: bool = True, descriptions: bool = True) -> Path:
    """A copy of the fixture; ``warm``: each SQL task's shared/data/ holds the database (and the
    description CSVs), as the release's warm-up script leaves it."""
    root = tmp / "release"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("library.sql", "database_description"))
    if warm:
        for t in SQL_TASKS:
            data = root / "harbor_sql" / t / "shared" / "data"
            build_db(data / "database.sqlite")
            if descriptions:
                shutil.copytree(FIXTURE / "database_description", data / "database_description")
    return root


def by_id(results):
    return {r.path.name: r for r in results}


def test_cold_release_validates_every_task_and_says_where_the_data_lives(tmp_path):
    root = release(tmp_path, warm=False)
    (root / "harbor_sql" / "sql_2" / "shared" / "data" / "database.sqlite-wal").write_bytes(b"")
    res = _cli("ask", "import", str(root), "--out", str(tmp_path / "out"))
    assert res.exit_code == 1, res.output  # nothing could be written
    assert "validated 3/3 task(s): 0 written" in res.output and "3 not runnable here" in res.output
    assert "needs the authors' modified copy of the database 'library'" in res.output
    assert "'fixture_sql_0/library.sqlite'" in res.output and "'example/fixture-artifacts'" in res.output
    assert "journal leftovers: database.sqlite-wal" in res.output
    assert "'hilbench-swe:fixture101'" in res.output and "fixture101.tar.zst" in res.output
    assert not (tmp_path / "out").exists()


def test_warm_release_imports_questions_from_instructions_and_descriptions(tmp_path):
    root = release(tmp_path)
    results = by_id(import_hilbench(root))
    t = results["sql_0"].task
    assert results["sql_0"].status == "written" and results["sql_2"].status == "written"
    assert t.problem_statement == ("How many long-standing members borrowed classic books during the "
                                   "reading festival?")
    assert t.task_id == "fixture_sql_0" and t.source == "hilbench"
    assert [b.location for b in t.blockers] == ["question", "question", "schema"]
    assert t.sql.descriptions["tables"]["book"]["columns"]["genre_code"]["description"] == "Internal genre code"
    assert results["swe_0"].status == "not_runnable"
    assert results["swe_0"].task.blockers[0].example_questions[0].startswith("-  What default")


def test_database_lacking_a_column_is_refused_naming_it_and_the_batch_goes_on(tmp_path):
    root = release(tmp_path, warm=False)
    db = build_db(tmp_path / "dbs" / "library.sqlite", drop_column="loan.channel_flag")
    shutil.copytree(FIXTURE / "database_description", db.parent, dirs_exist_ok=True)  # the bucket's layout
    results = by_id(import_hilbench(root, database=db))
    assert results["sql_0"].status == "written"  # it never reads channel_flag
    assert results["sql_0"].task.sql.descriptions["tables"]["loan"]["description"].startswith("One row per loan")
    r = results["sql_2"]
    assert r.status == "refused" and "lacks column loan.channel_flag" in r.reason and str(db) in r.reason
    assert "not the database this task was written against" in r.reason


def test_a_column_only_a_resolution_names_is_checked_too(tmp_path):
    root = release(tmp_path, warm=False)
    reg = root / "harbor_sql" / "sql_0" / "shared" / "ask-human-data" / "blocker_registry.json"
    data = json.loads(reg.read_text())
    data["blockers"][0]["resolution"] += " Ignore rows where member.card_status is 'void'."
    reg.write_text(json.dumps(data))
    full = root / "harbor_sql" / "sql_0" / "full_info" / "instruction.md"
    full.write_text(full.read_text().replace("member.joined_year <= 2015.",
                                             "member.joined_year <= 2015. Ignore rows where member.card_status is 'void'."))
    r = by_id(import_hilbench(root, database=build_db(tmp_path / "library.sqlite")))["sql_0"]
    assert r.status == "refused" and "column member.card_status" in r.reason


def test_empty_or_other_data_databases_are_refused(tmp_path):
    root = release(tmp_path, warm=False)
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()
    for r in import_hilbench(root / "harbor_sql", database=empty):
        assert r.status == "refused" and "holds no tables" in r.reason
    other = build_db(tmp_path / "other" / "library.sqlite", delete="DELETE FROM loan WHERE loan_id % 3 = 0")
    for r in import_hilbench(root / "harbor_sql", database=other.parent):  # a folder with <database_name>.sqlite
        assert r.status == "refused" and "differ from golden_output.csv" in r.reason


def test_bad_tasks_are_reported_one_by_one(tmp_path):
    root = release(tmp_path)
    (root / "harbor_sql" / "sql_0" / "full_info" / "instruction.md").unlink()
    reg = root / "harbor_swe" / "swe_0" / "shared" / "ask-human-data" / "blocker_registry.json"
    data = json.loads(reg.read_text())
    data["blockers"][0]["resolution"] = "The default retry_delay is 2 seconds."  # drifted from full_info
    reg.write_text(json.dumps(data))
    res = _cli("ask", "import", str(root), "--out", str(tmp_path / "out"))
    assert res.exit_code == 0, res.output
    assert "validated 1/3 task(s): 1 written" in res.output and "2 invalid" in res.output
    assert "sql_0/full_info/instruction.md: missing" in res.output
    assert "lacks the resolution of blocker 'missing_retry_delay_default'" in res.output
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["fixture_sql_2"]


def test_missing_descriptions_are_said(tmp_path):
    root = release(tmp_path, descriptions=False)
    res = _cli("ask", "import", str(root / "harbor_sql" / "sql_0"), "--out", str(tmp_path / "out"))
    assert res.exit_code == 0, res.output
    assert "column descriptions are absent" in res.output and "['classic_genre_code']" in res.output


def test_release_layout_imports_runs_in_all_modes_and_scores(tmp_path):
    root = release(tmp_path)
    out = tmp_path / "tasks"
    res = _cli("ask", "import", str(root), "--out", str(out))
    assert res.exit_code == 0, res.output
    t = load_task(out / "fixture_sql_2")
    assert t.sql.database_path == str((root / "harbor_sql" / "sql_2" / "shared" / "data" / "database.sqlite").resolve())
    assert t.sql.descriptions is not None
    run = tmp_path / "run"
    res = _cli("run", "--suite", "ask", "--task-dir", str(out), "--agent", "targeted-asker,silent-guesser",
               "--jobs", "1", "--out", str(run), "--matcher", "lexical")  # the figures below are the word-overlap judge's
    assert res.exit_code == 0, res.output
    assert len(list((run / "episodes").glob("*.jsonl"))) == 2 * 3 * 2 * 3  # tasks x modes x agents x passes
    res = _cli("report", str(run), "--json", str(tmp_path / "r.json"))
    assert res.exit_code == 0, res.output
    rows = {(r["agent"].removeprefix("reference/"), r["domain"]): r
            for r in json.loads((tmp_path / "r.json").read_text())["summary"]["table"]}
    for agent in ("targeted-asker", "silent-guesser"):
        r = rows[(agent, "sql")]
        assert r["tasks"] == 2 and r["full_info_pass@3"] == 1.0 and r["baseline_pass@3"] == 0.0
    t = rows[("targeted-asker", "sql")]  # its questions come from the statement's words: 5 of 6 gaps reached
    assert t["ask_human_pass@3"] == 0.5 and t["recall"] == pytest.approx(5 / 6) and t["precision"] == pytest.approx(5 / 6)
    assert rows[("silent-guesser", "sql")]["ask_human_pass@3"] == 0.0


def test_run_refuses_a_task_dir_with_an_imported_swe_task(tmp_path):
    res = _cli("run", "--suite", "ask", "--task-dir", str(FIXTURE / "harbor_swe"), "--out", str(tmp_path / "r"))
    assert res.exit_code == 2
    assert "example__widgets-101" in res.output and "not runnable here" in res.output
    assert "hilbench-swe:fixture101" in res.output
    assert not (tmp_path / "r").exists()


def test_run_refuses_task_dir_outside_the_ask_suite(tmp_path):
    res = _cli("run", "--task-dir", str(tmp_path), "--out", str(tmp_path / "r"))
    assert res.exit_code == 2 and "--task-dir is for --suite ask" in res.output


@pytest.mark.skipif(not os.environ.get("IMPASSE_HILBENCH"), reason="IMPASSE_HILBENCH names no checkout of the release")
def test_public_release_validates_all_200_tasks():
    results = import_hilbench(Path(os.environ["IMPASSE_HILBENCH"]))
    assert len(results) == 200
    bad = [(r.path.name, r.reason) for r in results if not r.valid]
    assert not bad, bad[:5]
    assert sum(r.task.domain == "sql" for r in results) == 100
