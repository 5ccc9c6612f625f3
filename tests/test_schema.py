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


# Shaped like a SWE-bench Verified row on Hugging Face (test lists as JSON strings, no impasse fields).
VERIFIED = {
    "repo": "psf/requests", "instance_id": "psf__requests-1234",
    "base_commit": "0123456789abcdef0123456789abcdef01234567",
    "patch": "diff --git a/requests/models.py b/requests/models.py\n--- a/requests/models.py\n+++ b/requests/models.py\n"
             "@@ -1,3 +1,3 @@\n-x = 1\n+x = 2\n",
    "test_patch": "diff --git a/test_requests.py b/test_requests.py\n--- a/test_requests.py\n+++ b/test_requests.py\n"
                  "@@ -1,1 +1,2 @@\n+def test_x(): pass\n",
    "problem_statement": "Header values are not stripped\n\nSteps to reproduce: ...",
    "hints_text": "", "created_at": "2014-01-01T12:00:00Z", "version": "2.3",
    "FAIL_TO_PASS": "[\"test_requests.py::RequestsTestCase::test_header_strip\"]",
    "PASS_TO_PASS": "[\"test_requests.py::RequestsTestCase::test_basic\", \"test_requests.py::test_x\"]",
    "environment_setup_commit": "fedcba9876543210fedcba9876543210fedcba98", "difficulty": "<15 min fix",
}


def test_plain_swe_bench_verified_row_loads_validates_and_exports_back(tmp_path):
    from impasse.tasks.schema import to_standard, write_standard_jsonl

    (tmp_path / "verified.jsonl").write_text(json.dumps(VERIFIED) + "\n")
    (inst,) = read_instances(tmp_path / "verified.jsonl")
    assert inst.FAIL_TO_PASS == ["test_requests.py::RequestsTestCase::test_header_strip"]
    assert inst.missing_impasse_fields() == ["package", "package_version", "test_cmd", "image"]
    assert to_standard(inst) == VERIFIED  # same keys, same values, same string-encoded lists
    write_standard_jsonl([inst], tmp_path / "out.jsonl")
    assert json.loads((tmp_path / "out.jsonl").read_text()) == VERIFIED


def test_swe_smith_row_without_version_validates_and_built_rows_export_standard():
    from impasse.tasks.schema import IMPASSE_FIELDS, to_standard

    smith = {k: VERIFIED[k] for k in ("instance_id", "repo", "patch", "FAIL_TO_PASS", "PASS_TO_PASS", "created_at",
                                      "base_commit", "problem_statement")} | {"image_name": "swesmith.x86_64.psf"}
    inst = TaskInstance.model_validate(smith)
    assert inst.version == "" and to_standard(inst)["image_name"] == "swesmith.x86_64.psf"
    ours = to_standard(TaskInstance.model_validate(ROW))
    assert not set(IMPASSE_FIELDS) & set(ours) and json.loads(ours["FAIL_TO_PASS"]) == ["t.py::a"]
    assert TaskInstance.model_validate(ROW).missing_impasse_fields() == []
