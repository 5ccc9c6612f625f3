import json

import pytest

from impasse.tasks.schema import SchemaError, TaskInstance, read_instances, write_jsonl

ROW = {"instance_id": "pkg__1.0.change_constant__deadbeef", "repo": "pypi/pkg", "base_commit": "abc",
       "patch": "diff --git a/x.py b/x.py\n", "problem_statement": "it breaks", "FAIL_TO_PASS": ["t.py::a"],
       "PASS_TO_PASS": ["t.py::b", "t.py::c"], "version": "1.0", "created_at": "2026-01-01T00:00:00Z",
       "package": "pkg", "package_version": "1.0", "operator": "change_constant", "target_file": "x.py",
       "test_cmd": "python -m pytest", "image": "pkg-1.0"}


def test_jsonl_round_trip(tmp_path):
    inst = TaskInstance.model_validate(ROW)
    write_jsonl([inst, inst], tmp_path / "a.jsonl")
    back = read_instances(tmp_path / "a.jsonl")
    assert back == [inst, inst]
    assert json.loads((tmp_path / "a.jsonl").read_text().splitlines()[0])["FAIL_TO_PASS"] == ["t.py::a"]


def test_reads_swe_bench_json_list_with_string_encoded_test_lists(tmp_path):
    row = {**ROW, "FAIL_TO_PASS": json.dumps(["t.py::a"]), "PASS_TO_PASS": json.dumps(["t.py::b"]),
           "hints_text": "", "environment_setup_commit": "abc", "extra_field": 1}
    (tmp_path / "a.json").write_text(json.dumps([row]))
    (inst,) = read_instances(tmp_path / "a.json")
    assert inst.FAIL_TO_PASS == ["t.py::a"] and inst.PASS_TO_PASS == ["t.py::b"]
    assert inst.model_dump()["extra_field"] == 1  # unknown SWE-bench fields survive a round trip


def test_bad_rows_name_file_and_line(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text(json.dumps(ROW) + "\n{not json\n")
    with pytest.raises(SchemaError, match=r"bad.jsonl:2: not valid JSON"):
        read_instances(p)
    p.write_text(json.dumps({k: v for k, v in ROW.items() if k != "patch"}) + "\n")
    with pytest.raises(SchemaError, match=r"bad.jsonl:1: .*patch"):
        read_instances(p)
