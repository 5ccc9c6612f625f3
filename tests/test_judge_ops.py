"""The LLM ticket judge operated for real: a run of the escalator reference agent on a real task
under three blockers, then reports whose judge is a scripted OpenAI-compatible endpoint over real
HTTP: preflighted, cached per (ticket, judge model, prompt version), metered into the run's
ledger under its ceiling, kappa for every dimension and the overall rating, and a dead endpoint
that is a clear error."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from test_model_http import ScriptedServer

IMPASSE = [sys.executable, "-m", "impasse.cli"]
VERDICT = {"blocker": "full", "progress": "partial", "request": "full", "resume_condition": "missing",
           "overall": "partial"}


@pytest.fixture(scope="module")
def escalated_run(glom_task, tmp_path_factory):
    run = tmp_path_factory.mktemp("judge") / "run"
    p = subprocess.run(IMPASSE + ["run", "--tasks", glom_task.instance_id, "--conditions",
                                  "read_only_source,read_only_fs,unreadable_file", "--interfaces", "tool",
                                  "--agent", "escalator", "--jobs", "2", "--out", str(run)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    return run


def report(run, *extra):
    return subprocess.run(IMPASSE + ["report", str(run), *map(str, extra)], capture_output=True, text=True)


def copy(run, tmp_path):
    dst = tmp_path / "run"
    shutil.copytree(run, dst)
    return dst


@pytest.mark.slow
def test_the_judge_is_preflighted_cached_metered_and_kappa_covers_overall(escalated_run, tmp_path):
    run = copy(escalated_run, tmp_path)
    server = ScriptedServer([json.dumps(VERDICT)])
    try:
        first = report(run, "--judge-model", "judge-1", "--judge-base-url", server.url, "--json", tmp_path / "a.json")
        after_first = len(server.requests)
        second = report(run, "--judge-model", "judge-1", "--judge-base-url", server.url, "--json", tmp_path / "b.json")
    finally:
        server.close()
    assert first.returncode == 0 and second.returncode == 0, first.stderr[-2000:] + second.stderr[-2000:]
    a = json.loads((tmp_path / "a.json").read_text())
    judged = [e for e in a["episodes"] if e.get("ticket_scores_llm")]
    assert len(judged) >= 2
    assert after_first == 1 + len(judged)  # the preflight, then one call per ticket
    assert len(server.requests) == after_first + 1  # the second report: its preflight only, verdicts cached
    assert "0 judged" in second.stdout + second.stderr
    b = json.loads((tmp_path / "b.json").read_text())
    assert [e.get("ticket_scores_llm") for e in b["episodes"]] == [e.get("ticket_scores_llm") for e in a["episodes"]]
    dims = {r["dimension"]: r for r in a["merged"]["judge_agreement"]["pooled"]}
    assert set(dims) == set(VERDICT)
    agree = sum(e["ticket_overall"] == "partial" for e in judged) / len(judged)
    assert dims["overall"]["agreement"] == pytest.approx(agree) and dims["overall"]["n"] == len(judged)
    ledger = [json.loads(line) for line in (run / "usage.jsonl").read_text().splitlines()]
    assert [r["model"] for r in ledger] == ["judge-1"] * len(judged)  # metered into the run's ledger
    usage = {u["model"]: u for u in a["usage"]}
    assert usage["judge-1"]["calls"] == len(judged)
    # another judge model is not served from this one's cache
    server = ScriptedServer([json.dumps(VERDICT)])
    try:
        third = report(run, "--judge-model", "judge-2", "--judge-base-url", server.url)
    finally:
        server.close()
    assert third.returncode == 0 and len(server.requests) == 1 + len(judged)


@pytest.mark.slow
def test_a_dead_judge_is_a_clear_error(escalated_run, tmp_path):
    res = report(copy(escalated_run, tmp_path), "--judge-model", "judge-1", "--judge-base-url",
                 "http://127.0.0.1:9/v1")
    assert res.returncode == 2, res.stderr[-2000:]
    assert "the ticket judge" in res.stderr and "cannot reach" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.slow
def test_the_judge_stops_at_the_runs_ceiling_and_needs_a_price_under_one(escalated_run, tmp_path):
    run = copy(escalated_run, tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    # a judge call is reserved at ~0.014 (4096 output tokens at $3/M) and costs ~0.001: not all fit
    manifest["config"]["spend"]["max_cost"] = 0.015
    (run / "manifest.json").write_text(json.dumps(manifest))
    server = ScriptedServer([json.dumps(VERDICT)])
    try:
        unpriced = report(run, "--judge-model", "judge-1", "--judge-base-url", server.url)
        assert unpriced.returncode == 2 and "has no price" in unpriced.stderr
        assert not server.requests
        prices = tmp_path / "prices.yaml"
        prices.write_text("judge-1: {input: 1, output: 3}\n")
        res = report(run, "--judge-model", "judge-1", "--judge-base-url", server.url, "--prices", prices,
                     "--json", tmp_path / "r.json")
    finally:
        server.close()
    assert res.returncode == 3, res.stderr[-2000:]
    assert "ticket judging stopped" in res.stdout + res.stderr
    ledger = [json.loads(line) for line in (run / "usage.jsonl").read_text().splitlines()]
    assert sum(r["cost_usd"] for r in ledger) <= 0.015
    doc = json.loads((tmp_path / "r.json").read_text())
    escalated = [e for e in doc["episodes"] if e.get("escalated")]
    judged = [e for e in escalated if e.get("ticket_scores_llm")]
    assert 1 <= len(judged) == len(ledger) < len(escalated)


@pytest.mark.slow
def test_a_reply_without_a_verdict_is_not_cached_as_one(escalated_run, tmp_path):
    """A judge that answers with no verdict at all (here: "OK") is not a judge's rating of
    'insufficient': those tickets are left unjudged, said aloud, and nothing is cached, so the
    next report (with a judge that answers) asks again."""
    run = copy(escalated_run, tmp_path)
    junk = ScriptedServer(["OK"])
    try:
        first = report(run, "--judge-model", "judge-1", "--judge-base-url", junk.url, "--json", tmp_path / "a.json")
    finally:
        junk.close()
    assert first.returncode == 0, first.stderr[-2000:]
    said = " ".join((first.stdout + first.stderr).split())
    assert "held no verdict" in said, said[-1500:]
    a = json.loads((tmp_path / "a.json").read_text())
    assert not [e for e in a["episodes"] if e.get("ticket_scores_llm")]
    assert not (run / "judge-cache.jsonl").exists() or not (run / "judge-cache.jsonl").read_text().strip()
    good = ScriptedServer([json.dumps(VERDICT)])
    try:
        second = report(run, "--judge-model", "judge-1", "--judge-base-url", good.url, "--json", tmp_path / "b.json")
    finally:
        good.close()
    b = json.loads((tmp_path / "b.json").read_text())
    judged = [e for e in b["episodes"] if e.get("ticket_scores_llm")]
    assert second.returncode == 0 and judged and len(good.requests) == 1 + len(judged)
    assert all(e["ticket_overall_llm"] == "partial" for e in judged)
