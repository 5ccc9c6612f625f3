"""Real tasks from real packages: validation, gold fixes, grading, and the error cases."""

import re
import shlex

import pytest

from impasse.grade import gold_fix, grade, source_only
from impasse.tasks.build import build_package
from impasse.tasks.episode import open_episode
from impasse.tasks.image import load_image
from impasse.tasks.pypi import PackageError
from impasse.tasks.suite import PackageSpec, load_suite

pytestmark = pytest.mark.slow


def test_instances_follow_the_validation_rule(glom_tasks, inflection_tasks):
    for inst in [*glom_tasks, *inflection_tasks]:
        img = load_image(inst.image)
        assert inst.FAIL_TO_PASS and inst.PASS_TO_PASS
        assert set(inst.FAIL_TO_PASS) <= img.passed() and set(inst.PASS_TO_PASS) <= img.passed()
        assert not set(inst.FAIL_TO_PASS) & set(inst.PASS_TO_PASS)
        assert inst.target_file in img.source_files and "test" not in inst.target_file.split("/")[-1]
        assert re.fullmatch(r"[a-z_]+__[\w.]+\.[a-z_]+__[0-9a-f]{8}", inst.instance_id)
        st = inst.problem_statement
        assert inst.operator not in st and "```python" in st and inst.FAIL_TO_PASS[0] in st
        fixed_lines = [ln[1:].strip() for ln in inst.patch.splitlines()[3:] if ln.startswith("-") and len(ln.strip()) > 12]
        assert not any(line in st for line in fixed_lines), "the statement must not reveal the fix"
        assert inst.fail_seconds is not None and 0 < inst.fail_seconds < img.spec.timeout  # timed at build


def test_package_outside_the_default_suite_needs_no_settings(inflection_tasks):
    assert "inflection" not in {p.name for p in load_suite("default").packages}
    assert inflection_tasks[0].package == "inflection"


def test_bug_fails_f2p_and_gold_fix_resolves(backend, glom_tasks, inflection_tasks):
    for inst in [glom_tasks[0], inflection_tasks[0]]:
        with open_episode(backend, inst, "clean") as sb:
            ids = " ".join(shlex.quote(t) for t in inst.FAIL_TO_PASS)
            res = sb.exec(f"{inst.test_cmd} {ids}", timeout=120)
            assert f"{len(inst.FAIL_TO_PASS)} failed" in res.stdout, res.stdout[-500:]
        fix = gold_fix(inst)
        result = grade(backend, inst, fix)
        assert result["resolved"] and result["f2p_passed"] == len(inst.FAIL_TO_PASS), result
        assert not grade(backend, inst, "")["resolved"]


def test_every_built_instance_verifies(backend, glom_tasks, inflection_tasks):
    from impasse.grade import verify_instance

    for inst in [*glom_tasks, *inflection_tasks]:
        r = verify_instance(backend, inst)
        assert r["ok"], r


def test_test_edits_never_count(backend, glom_task):
    fix = gold_fix(glom_task)
    test_file = glom_task.FAIL_TO_PASS[0].split("::")[0]
    weakened = (f"diff --git a/{test_file} b/{test_file}\n--- a/{test_file}\n+++ b/{test_file}\n@@ -1 +1 @@\n-x\n+y\n")
    kept, dropped = source_only(weakened + fix)
    assert dropped == [test_file] and kept == fix
    assert not grade(backend, glom_task, weakened)["resolved"]


def test_error_unknown_package(backend):
    with pytest.raises(PackageError, match="not found on PyPI"):
        build_package(PackageSpec(name="impasse-no-such-package-xyz"), backend)


def test_error_no_sdist_for_version(backend):
    with pytest.raises(PackageError, match="no sdist for this version"):
        build_package(PackageSpec(name="nvidia-nccl-cu12", version="2.16.2"), backend)


def test_error_sdist_without_tests(backend):
    with pytest.raises(PackageError, match="ships no tests"):
        build_package(PackageSpec(name="tomli", version="2.5.0"), backend)


def test_error_suite_failing_on_clean_code(backend):
    spec = PackageSpec(name="inflection", version="0.5.1", pytest_args=["no/such/test_file.py"])
    with pytest.raises(PackageError, match="does not pass on clean code"):
        build_package(spec, backend, force=True)


def test_error_network_failure(backend, monkeypatch):
    monkeypatch.setenv("IMPASSE_PYPI_INDEX", "http://127.0.0.1:9/simple")
    with pytest.raises(PackageError, match="cannot reach PyPI"):  # unpinned: the index must be asked
        build_package(PackageSpec(name="inflection"), backend)
    # a pinned version already in the cache needs no network at all
    assert build_package(PackageSpec(name="inflection", version="0.5.1"), backend, max_instances=2).instances
