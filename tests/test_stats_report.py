"""Metrics, paired statistics and the report contract, on the hand-checked corpus and on
synthetic paired data whose answer is known."""

import json
import re
import shutil
from pathlib import Path

import pytest
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar

from impasse.metrics.metrics import cell
from impasse.metrics.stats import compare
from impasse.report.report import CONTRACT, annotate_run, build, render_html

CORPUS = Path(__file__).parent / "corpus"


def rows_for(pairs):
    """pairs: list of (limit_a, limit_b, post_a, post_b) for (task i, condition c)."""
    rows = []
    for i, (la, lb, pa, pb) in enumerate(pairs):
        for iface, lim, post in (("baseline", la, pa), ("tool", lb, pb)):
            rows.append({"agent": "m", "instance_id": f"t{i}", "condition": "read_only_source", "interface": iface,
                         "condition_class": "persistent", "limit_ending": lim, "escalated": not lim,
                         "ended_within_10": not lim, "post_evidence_unsafe": False, "premature_handoff": False,
                         "resolved": False, "post_evidence_calls": post, "t_star": 5, "first_contact": 3,
                         "unsafe": [], "ticket_sufficient": None, "nudges": 0})
    return rows


def test_paired_tests_match_scipy_and_statsmodels_directly():
    pairs = [(True, False, 70, 3)] * 9 + [(True, True, 72, 70)] * 4 + [(False, True, 4, 60)] * 1 + \
            [(False, False, 3, 2)] * 6
    res = {r["metric"]: r for r in compare(rows_for(pairs), "baseline", "tool")}
    lim = res["limit_ending"]
    assert lim["discordant"] == [9, 1] and lim["n_pairs"] == 20
    assert lim["p"] == pytest.approx(mcnemar([[6, 1], [9, 4]], exact=True).pvalue)
    assert lim["diff"] == pytest.approx((5 - 13) / 20) and lim["ci_low"] < lim["diff"] < lim["ci_high"]
    post = res["post_evidence_calls"]
    a = [p[2] for p in pairs]
    b = [p[3] for p in pairs]
    assert post["p"] == pytest.approx(sps.wilcoxon(b, a, zero_method="zsplit").pvalue)
    ps = sorted(r["p"] for r in res.values())
    holm = sorted(r["p_holm"] for r in res.values())
    assert all(h >= p for h, p in zip(holm, ps, strict=True)) and max(holm) <= 1


def test_no_difference_gives_p_one():
    res = compare(rows_for([(True, True, 70, 70)] * 5), "baseline", "tool")
    assert all(r["p"] == 1.0 for r in res)


def test_cell_metrics_on_known_rows():
    rows = rows_for([(True, False, 70, 3)] * 3)
    base = cell([r for r in rows if r["interface"] == "baseline"])
    tool = cell([r for r in rows if r["interface"] == "tool"])
    assert base["limit_endings"] == 1.0 and tool["limit_endings"] == 0.0
    assert base["mean_post_evidence_calls"] == 70 and tool["ended_within_10"] == 1.0
    assert base["evidence_coverage"] == 1.0


def test_report_json_contract_and_self_contained_html(tmp_path):
    run = tmp_path / "run" / "episodes"
    run.mkdir(parents=True)
    for p in CORPUS.glob("*.jsonl"):
        shutil.copy(p, run / p.name)
    (run / "broken.jsonl").write_text('{"type": "header"}\n{oops\n{"type": "final"}\n')
    rows, problems = annotate_run(tmp_path / "run")
    assert len(rows) == 8 and any("broken.jsonl" in p for p in problems)
    assert (run / "variant-hidden-unsafe.annotation.json").exists()
    report = build(rows)
    text = json.dumps(report)
    back = json.loads(text)
    assert back["format"] == "impasse.report/1"
    for ep in back["episodes"]:
        assert list(ep)[: len(CONTRACT)] == list(CONTRACT)
        for u in ep["unsafe"]:
            assert set(u) == {"step", "category", "rule"}
    page = render_html(report)
    assert not re.search(r"(src|href)=[\"']https?://", page)  # nothing fetched from outside
    assert page.count("data:image/png;base64,") == 3
    assert "id='variant-hidden-unsafe-s8'" in page and "href='#variant-hidden-unsafe-s8'" in page


def test_compare_two_runs_pairs_by_task_condition_and_interface(tmp_path):
    for name in ("a", "b"):
        run = tmp_path / name / "episodes"
        run.mkdir(parents=True)
        for p in CORPUS.glob("*.jsonl"):
            shutil.copy(p, run / p.name)
    rows_a, _ = annotate_run(tmp_path / "a")
    rows_b, _ = annotate_run(tmp_path / "b")
    report = build(rows_a, rows_b)
    comps = {k: v for k, v in report["summary"]["comparisons"].items() if k.startswith("runs B vs A")}
    assert comps and all(t["p"] == 1.0 and t["diff"] == 0 for tests in comps.values() for t in tests)
    assert max(t["n_pairs"] for tests in comps.values() for t in tests) >= 3
