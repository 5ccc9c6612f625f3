"""Merged reports: several runs pooled (per-model rows + pooled rows), and Cohen's kappa between
the ticket rubric and an LLM judge served over real HTTP."""

import json
import subprocess
import sys

import pytest
from test_model_http import ScriptedServer

from impasse.metrics.agreement import cohen_kappa, kappa_by_dimension

IMPASSE = [sys.executable, "-m", "impasse.cli"]


def test_cohen_kappa_by_hand():
    # 10 items: both say yes 4, both no 3, a-yes/b-no 2, a-no/b-yes 1: p_o=.7, p_e=.6*.5+.4*.5=.5 -> .4
    pairs = [("y", "y")] * 4 + [("n", "n")] * 3 + [("y", "n")] * 2 + [("n", "y")]
    assert cohen_kappa(pairs) == pytest.approx(0.4)
    assert cohen_kappa([("full", "full")] * 3) is None and cohen_kappa([]) is None
    rows = [{"agent": "m1", "ticket_scores": {"blocker": "full", "overall": "good"},
             "ticket_scores_llm": {"blocker": "full", "overall": "bad"}},
            {"agent": "m2", "ticket_scores": {"blocker": "partial", "overall": "bad"},
             "ticket_scores_llm": {"blocker": "full", "overall": "bad"}}]
    by_dim = {r["dimension"]: r for r in kappa_by_dimension(rows)}
    assert set(by_dim) == {"blocker", "overall"} and by_dim["overall"]["agreement"] == 0.5
    assert {r["agent"] for r in kappa_by_dimension(rows, by="agent")} == {"m1", "m2"}


@pytest.mark.slow
def test_two_runs_pooled_with_judge_agreement(glom_task, tmp_path):
    runs = []
    for name, agent in (("a", "escalator"), ("b", "premature")):
        run = tmp_path / name
        p = subprocess.run(IMPASSE + ["run", "--tasks", glom_task.instance_id, "--conditions", "clean,read_only_source",
                                      "--interfaces", "tool", "--agent", agent, "--jobs", "2", "--out", str(run)],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr[-2000:]
        runs.append(str(run))
    verdict = {"blocker": "full", "progress": "partial", "request": "full", "resume_condition": "missing"}
    server = ScriptedServer([json.dumps(verdict)])
    try:
        rep = subprocess.run(IMPASSE + ["report", *runs, "--judge-model", "judge", "--judge-base-url", server.url,
                                        "--json", "-"], capture_output=True, text=True)
    finally:
        server.close()
    assert rep.returncode == 0, rep.stderr[-2000:]
    report = json.loads(rep.stdout)
    merged, episodes = report["merged"], report["episodes"]
    assert merged["models"] == ["reference/escalator", "reference/premature"] and len(merged["runs"]) == 2
    assert sum(g["episodes"] for g in merged["pooled"]) == len(episodes) == 4
    assert {g["agent"] for g in merged["per_model"]} == set(merged["models"])
    judged = [e for e in episodes if e.get("ticket_scores_llm")]
    assert judged and len(server.requests) == 1 + len(judged)  # the judge's preflight, then one call per ticket
    for row in merged["judge_agreement"]["pooled"]:
        d = row["dimension"]
        if d == "overall":  # the reply has none: the rubric's rule over the judge's dimensions
            continue
        agree = sum(e["ticket_scores"][d] == verdict[d] for e in judged) / len(judged)
        assert row["n"] == len(judged) and row["agreement"] == pytest.approx(agree)
    assert {r["dimension"] for r in merged["judge_agreement"]["pooled"]} == set(verdict) | {"overall"}
