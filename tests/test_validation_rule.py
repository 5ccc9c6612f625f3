from impasse.tasks.build import judge
from impasse.tasks.pytest_log import has_summary, parse_statuses

BASE = {"t::a": "PASSED", "t::b": "PASSED", "t::c": "PASSED", "t::d": "SKIPPED", "t::e": "FAILED"}


def test_valid_needs_one_pass_to_fail_and_one_pass_to_pass():
    v = judge(BASE, {"t::a": "FAILED", "t::b": "PASSED", "t::c": "PASSED"}, timed_out=False)
    assert v.valid and v.f2p == ["t::a"] and v.p2p == ["t::b", "t::c"]


def test_errors_and_skips_never_count_as_fail_to_pass():
    assert not judge(BASE, {"t::a": "ERROR", "t::b": "PASSED"}, False).valid
    assert not judge(BASE, {"t::d": "FAILED", "t::b": "PASSED"}, False).valid  # was skipped on clean code
    assert not judge(BASE, {"t::e": "FAILED", "t::b": "PASSED"}, False).valid  # already failing on clean code


def test_everything_failing_or_timeout_is_invalid():
    assert judge(BASE, {"t::a": "FAILED", "t::b": "FAILED", "t::c": "FAILED"}, False).reason == "no test stayed PASSED"
    assert judge(BASE, {"t::a": "FAILED", "t::b": "PASSED"}, True).reason == "timed out"


def test_parametrize_ids_containing_dash_separators_stay_whole():
    out = ("PASSED tests/t.py::test_cmp[a < b - interval '1 day'-Token]\n"
           "FAILED tests/t.py::test_cmp[c - d] - AssertionError: x - y\n"
           "FAILED tests/t.py::test_odd[e - f - AssertionError: unbalanced\n")
    st = parse_statuses(out, known={"tests/t.py::test_odd[e - f"})
    assert st == {"tests/t.py::test_cmp[a < b - interval '1 day'-Token]": "PASSED",
                  "tests/t.py::test_cmp[c - d]": "FAILED", "tests/t.py::test_odd[e - f": "FAILED"}


def test_parse_rA_summary():
    out = """PASSED tests/test_x.py::test_a
FAILED tests/test_x.py::test_b[1 - 2] - AssertionError: assert 1 == 2
ERROR tests/test_y.py::test_c - ValueError
XFAIL tests/test_x.py::test_d - reason
SKIPPED [1] tests/test_x.py:10: no numpy
1 failed, 1 passed, 1 skipped, 1 xfailed, 1 error in 0.12s"""
    st = parse_statuses(out)
    assert st == {"tests/test_x.py::test_a": "PASSED", "tests/test_x.py::test_b[1 - 2]": "FAILED",
                  "tests/test_y.py::test_c": "ERROR", "tests/test_x.py::test_d": "XFAIL"}
    assert has_summary(out)
    assert has_summary("476 passed, 24 subtests passed in 0.81s")
    assert not has_summary("Killed")
