"""The SQL ask domain on real data: database builds from PyPI, the tools, the scorer, validation."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from impasse.ask.sql.database import build_database, database_path, load_spec
from impasse.ask.sql.scorer import results_match
from impasse.ask.sql.tools import TOOLS, SqlContext, call_tool, openai_tools
from impasse.ask.sql.validate import load_builtin_tasks, summary, validate
from impasse.ask.taskdir import load_task

DATA = Path(__file__).resolve().parents[1] / "src" / "impasse" / "ask" / "data" / "sql"


def test_scorer_multiset_tolerance_and_column_order():
    assert results_match([["1", "a"], ["2", "b"]], [(2.004, "b"), (1, "a")])
    assert not results_match([["1", "a"], ["1", "a"]], [(1, "a")])  # multiplicity matters
    assert not results_match([["1.0"]], [(1.02,)])  # outside 1e-2
    assert results_match([["1", "a"]], [("a", 1)])  # whole-column permutation
    assert not results_match([["1", "a"]], [("a", 1)], column_order=True)
    # a per-row shuffle is not a column permutation
    assert not results_match([[1, 2], [3, 4]], [(2, 1), (3, 4)])
    assert results_match([[None, "x"]], [("", "x")])


def test_two_processes_building_at_once_get_one_database(tmp_path):
    env = {**os.environ, "IMPASSE_CACHE": str(tmp_path)}
    code = ("from impasse.ask.sql.database import build_database; import sqlite3;"
            "p = build_database('palmerpenguins');"
            "print(p, sqlite3.connect(p).execute('select count(*) from penguins').fetchone()[0])")
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    assert {o[0].strip() for o in outs} == {f"{tmp_path}/ask/db/palmerpenguins.sqlite 344"}
    leftovers = [p.name for p in (tmp_path / "ask" / "db").iterdir() if p.name.endswith((".tmp", ".part"))]
    assert leftovers == []


def test_penguins_types_and_nulls():
    p = build_database("palmerpenguins")
    assert build_database("palmerpenguins") == p == database_path("palmerpenguins")  # idempotent
    c = sqlite3.connect(p)
    assert c.execute("select typeof(body_mass_g), typeof(bill_length_mm), typeof(sex) from penguins "
                     "where sex is not null limit 1").fetchone() == ("integer", "real", "text")
    assert c.execute("select count(*) from penguins where sex is null").fetchone()[0] == 11
    cols = [r[1] for r in c.execute('pragma table_info("penguins_raw")')]
    assert cols == list(load_spec("palmerpenguins").tables["penguins_raw"].columns)


@pytest.fixture(scope="module")
def flights_ctx():
    t = load_task(DATA / "fl04_on_time_by_origin")
    return t, SqlContext.for_task(t, build_database("nycflights13"), row_cap=5, query_seconds=1.0)


@pytest.mark.slow
def test_tools_on_the_real_flights_database(flights_ctx):
    t, ctx = flights_ctx
    assert "flights" in call_tool(ctx, "list_tables", {}).output
    d = call_tool(ctx, "describe_table", {"table": "airports"})
    assert d.ok and "alt INTEGER: Altitude of the airport." in d.output and "1458 rows" in d.output
    col = call_tool(ctx, "describe_column", {"table": "planes", "column": "speed"})
    assert col.ok and "NULL 3299" in col.output
    assert not call_tool(ctx, "describe_table", {"table": "nope"}).ok
    assert "columns:" in call_tool(ctx, "describe_column", {"table": "planes", "column": "x"}).output
    bi = call_tool(ctx, "search_business_info", {"query": "delayed"})
    assert bi.output.startswith("[bi_delayed]")
    q = call_tool(ctx, "execute_query", {"sql": "select carrier from airlines order by carrier"})
    assert q.ok and q.output.splitlines()[1] == "9E" and "capped at 5" in q.output
    w = call_tool(ctx, "execute_query", {"sql": "update flights set dep_delay = 0"})
    assert not w.ok and "read-only" in w.output
    assert not call_tool(ctx, "execute_query", {"sql": "create table x(a)"}).ok
    slow = call_tool(ctx, "execute_query", {"sql": "select count(*) from flights a, flights b"})
    assert not slow.ok and "stopped after" in slow.output
    bad = call_tool(ctx, "submit_final_query", {"sql": "select nope from flights"})
    assert not bad.ok and "not submitted" in bad.output and ctx.submitted == []
    ok = call_tool(ctx, "submit_final_query", {"sql": t.sql.ground_truth_sql})
    assert ok.ok and ok.final_sql == t.sql.ground_truth_sql
    assert "bad arguments" in call_tool(ctx, "execute_query", {}).output


def test_tool_schemas_come_from_the_argument_models():
    schemas = {s["function"]["name"]: s["function"] for s in openai_tools()}
    assert set(schemas) == set(TOOLS) == {"list_tables", "describe_table", "describe_column",
                                         "search_business_info", "execute_query", "submit_final_query"}
    assert schemas["describe_column"]["parameters"]["required"] == ["table", "column"]
    assert schemas["list_tables"]["parameters"]["properties"] == {}


@pytest.mark.slow
def test_every_task_is_sound_and_every_blocker_matters():
    tasks = load_builtin_tasks()
    reports = validate(tasks)
    problems = [f"{r.task_id}: {p}" for r in reports for p in r.problems]
    assert problems == []
    text = summary(tasks)
    print(text)
    assert f"tasks: {len(tasks)}" in text and len(tasks) >= 30
    kinds = {b.kind for t in tasks for b in t.blockers}
    assert kinds == {"missing", "ambiguous", "contradictory"}
