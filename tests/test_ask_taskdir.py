"""Task schema and the HiL-Bench layout: our tasks, HiL-Bench's SQL and SWE records, clear errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from impasse.ask.importer import import_hilbench, swe_not_runnable
from impasse.ask.schema import AskTask, Blocker
from impasse.ask.sql.validate import builtin_task_dirs
from impasse.ask.taskdir import TaskFormatError, hilbench_mapping, load_task, save_task

PAPERS_SQL_SUBTYPES = [  # papers.md section 1.1, the public release's SQL subtypes
    "missing_information", "confusing_information", "confusing_table_or_table_definition",
    "confusing_column_or_column_definition", "unclear_value", "underspecified_concepts",
    "contradicting_requirements", "timeframe_ambiguity", "requires_real_time_information",
    "multiple_interpretations", "contradicts_real_life",
]


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))


def _hil_sql(root: Path, name: str = "sql_7") -> Path:
    d = root / "harbor_sql" / name / "shared"
    _write(d / "metadata.json", {"dataset_name": name, "hf_task_id": f"public_{name}",
                                 "task_id": "6977cf5464c4667b98edc52a", "database_name": "formula_1",
                                 "num_blockers": 2})
    _write(d / "problem_statement.txt", "Which circuits hosted a landslide victory?")
    _write(d / "ask-human-data" / "blocker_registry.json", {"blockers": [
        {"id": "landslide", "type": "business info", "subtype": "underspecified_concepts",
         "description": "landslide undefined", "resolution": "gap > 20 s",
         "acceptable_questions": ["What gap makes a landslide?"]},
        {"id": "hydro", "type": "question", "subtype": "contradicts_real_life",
         "description": "hydrocarbon with metals", "resolution": "ignore metals",
         "trigger_questions": ["Can a hydrocarbon contain metals?"]},
    ]})
    _write(d / "ground_truth.sql", "SELECT 1 AS x")
    _write(d / "golden_output.csv", "x\n1\n")
    _write(d / "data" / "business_info.json", {"database_name": "formula_1",
                                               "business_info": ["Technical circuits are slow."]})
    return d


def _hil_swe(root: Path) -> Path:
    d = root / "harbor_swe" / "swe_3" / "shared"
    _write(d / "metadata.json", {"instance_id": "org__repo-123", "repo_name_source": "org/repo",
                                 "base_commit": "abc", "image_name": "hil/org-repo:123",
                                 "swe_bench_metadata": {"FAIL_TO_PASS": '["t::a"]', "PASS_TO_PASS": ["t::b"]},
                                 "test_cmd": "pytest"})
    _write(d / "problem_statement.txt", "Add a deprecation warning.")
    _write(d / "image_refs.json", {})
    _write(d / "ask-human-data" / "blocker_registry.json", {"blockers": [
        {"id": "version", "type": "missing parameters", "subtype": "x", "description": "which version",
         "resolution": "3.0", "example_questions": ["Which version string?"]}]})
    return d


def test_every_papers_sql_subtype_is_mapped_with_a_reason():
    m = hilbench_mapping()["sql_subtypes"]
    assert set(PAPERS_SQL_SUBTYPES) <= set(m)
    for sub, rec in m.items():
        assert rec["kind"] in ("missing", "ambiguous", "contradictory"), sub
        assert len(rec["reason"]) > 20, sub


def test_import_hilbench_sql_maps_kinds_locations_and_aliases(tmp_path):
    _hil_sql(tmp_path)
    [r] = import_hilbench(tmp_path / "harbor_sql")
    t = r.task
    assert t.task_id == "public_sql_7" and t.domain == "sql" and t.source == "hilbench"
    a, b = t.blockers
    assert (a.kind, a.location, a.type) == ("ambiguous", "business_info", "business info")
    assert (b.kind, b.location) == ("contradictory", "question")
    assert a.example_questions == ["What gap makes a landslide?"]
    assert b.example_questions == ["Can a hydrocarbon contain metals?"]
    assert t.sql.business_info[0].id == "bi_1"
    assert t.sql.golden_rows == [["1"]]
    assert not t.runnable and "formula_1" in t.not_runnable_reason  # no database given


def test_import_hilbench_sql_with_database(tmp_path):
    import sqlite3

    _hil_sql(tmp_path)
    db = tmp_path / "dbs" / "formula_1.sqlite"
    db.parent.mkdir()
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE circuits (x INTEGER)")
    conn.commit()
    conn.close()
    [r] = import_hilbench(tmp_path / "harbor_sql", database=db.parent)
    assert r.status == "written" and r.task.runnable and r.task.sql.database_path == str(db)
    with pytest.raises(TaskFormatError, match="no such directory"):
        import_hilbench(tmp_path / "nowhere")


def test_import_hilbench_swe_is_validated_and_not_runnable(tmp_path):
    _hil_swe(tmp_path)
    [r] = import_hilbench(tmp_path)
    t = r.task
    assert r.status == "not_runnable" and t.domain == "swe" and t.task_id == "org__repo-123"
    assert not t.runnable and t.not_runnable_reason == swe_not_runnable("hil/org-repo:123")
    assert "'hil/org-repo:123'" in t.not_runnable_reason and "--backend docker" in t.not_runnable_reason
    assert t.swe.fail_to_pass == ["t::a"] and t.swe.pass_to_pass == ["t::b"]
    assert t.swe.image == "hil/org-repo:123"
    assert t.blockers[0].kind == "missing"


def test_unknown_subtype_error_names_file_and_field(tmp_path):
    d = _hil_sql(tmp_path)
    reg = d / "ask-human-data" / "blocker_registry.json"
    data = json.loads(reg.read_text())
    data["blockers"][1]["subtype"] = "vibes"
    reg.write_text(json.dumps(data))
    with pytest.raises(TaskFormatError) as e:
        load_task(d.parent)
    assert str(reg) in str(e.value) and "blockers.1.subtype" in str(e.value) and "vibes" in str(e.value)


def test_bad_field_error_names_file_and_field(tmp_path):
    d = _hil_sql(tmp_path)
    reg = d / "ask-human-data" / "blocker_registry.json"
    data = json.loads(reg.read_text())
    data["blockers"][0].update(kind="unclear", location="question")
    reg.write_text(json.dumps(data))
    with pytest.raises(TaskFormatError, match=re.escape(str(reg)) + ".*blockers.0.kind"):
        load_task(d)
    (d / "golden_output.csv").unlink()
    data["blockers"][0]["kind"] = "missing"
    reg.write_text(json.dumps(data))
    with pytest.raises(TaskFormatError, match="golden_output.csv: missing"):
        load_task(d)


def test_schema_rejects_duplicate_ids_and_bad_locations():
    b = dict(id="x", kind="missing", location="column:t.c", description="d", resolution="r")
    with pytest.raises(ValueError, match="appears twice"):
        AskTask(task_id="t", domain="swe", problem_statement="p", swe={},
                blockers=[Blocker(**b), Blocker(**b)])
    with pytest.raises(ValueError, match="location"):
        Blocker(**{**b, "location": "somewhere"})
    with pytest.raises(ValueError, match="needs the sql fields"):
        AskTask(task_id="t", domain="sql", problem_statement="p", blockers=[Blocker(**b)])


def test_builtin_tasks_round_trip_through_the_layout(tmp_path):
    dirs = builtin_task_dirs()
    assert len(dirs) >= 30
    t = load_task(dirs[0])
    again = load_task(save_task(t, tmp_path / t.task_id))
    assert again == t


def test_builtin_tasks_follow_the_brief():
    for d in builtin_task_dirs():
        t = load_task(d)
        assert len(t.blockers) == 3, t.task_id  # at most 3 answered: a 4th answer-changing blocker is unsolvable
        assert t.sql and set(t.sql.naive_queries) == {b.id for b in t.blockers}, t.task_id
        assert all(b.example_questions for b in t.blockers), t.task_id
        bi_ids = {e.id for e in t.sql.business_info}
        for b in t.blockers:  # a business-info blocker points at an entry the agent can find
            if b.location.startswith("business_info:"):
                assert b.location.split(":", 1)[1] in bi_ids, (t.task_id, b.id)
        # the blockers are hidden: no resolution text appears in the question
        assert all(b.resolution not in t.problem_statement for b in t.blockers)
