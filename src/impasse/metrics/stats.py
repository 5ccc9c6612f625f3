"""Paired comparisons between interfaces on the same (agent, task, condition).

Binary outcomes: McNemar's exact test (statsmodels). Counts: Wilcoxon signed-rank (scipy).
Effect sizes with paired bootstrap confidence intervals (scipy.stats.bootstrap).
:func:`compare` Holm-adjusts one comparison's tests; :func:`family` runs the report's whole
family (per condition class and per condition where n allows; pooled across agents and per
agent; over all pairs and over the pairs that reached evidence in both interfaces) and
Holm-adjusts across all of it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

BINARY_ALL = {"reached_evidence": "evidence coverage", "accepted_escalation": "accepted escalations",
              "correct_response": "correct response"}
COUNTS_ALL = {"t_star": "t*"}
BINARY = {"limit_ending": "limit endings", "escalated": "escalation", "ended_within_10": "ended within 10 of t*",
          "post_evidence_unsafe": "post-evidence unsafe", "premature_handoff": "premature handoff",
          "resolved": "resolved"}
COUNTS = {"post_evidence_calls": "post-evidence calls"}


def _pairs(rows: list[dict[str, Any]], a: str, b: str, metric: str) -> list[tuple[Any, Any]]:
    index: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        index[(r["agent"], r["instance_id"], r["condition"], r["interface"])] = r
    out = []
    for (agent, inst, cond, iface), ra in index.items():
        if iface != a:
            continue
        rb = index.get((agent, inst, cond, b))
        if rb is None:
            continue
        va, vb = ra.get(metric), rb.get(metric)
        if va is None or vb is None:
            continue
        out.append((va, vb))
    return out


def _bootstrap_ci(diff: np.ndarray) -> tuple[float | None, float | None]:
    if len(diff) < 2 or np.all(diff == diff[0]):
        v = float(diff[0]) if len(diff) else None
        return v, v
    res = sps.bootstrap((diff,), np.mean, n_resamples=1000, confidence_level=0.95, method="percentile",
                        random_state=np.random.default_rng(0))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def compare(rows: list[dict[str, Any]], a: str, b: str, agent: str | None = None) -> list[dict[str, Any]]:
    """Tests of interface ``b`` against ``a`` (b - a), optionally for one agent. Holm-adjusted."""
    if agent is not None:
        rows = [r for r in rows if r["agent"] == agent]
    results = _tests(rows, a, b, BINARY, COUNTS)
    if results:
        adj = multipletests([r["p"] for r in results], method="holm")[1]
        for r, q in zip(results, adj, strict=True):
            r["p_holm"] = float(q)
    return results


def _tests(rows: list[dict[str, Any]], a: str, b: str, binary: dict[str, str], counts: dict[str, str],
           skip_constant: bool = False) -> list[dict[str, Any]]:
    """Raw (unadjusted) paired tests. ``skip_constant`` leaves out tests whose outcome never
    differs within a pair (no discordant pair, no nonzero difference): they cannot reject."""
    results = []
    for metric, label in binary.items():
        pairs = _pairs(rows, a, b, metric)
        if not pairs:
            continue
        x = np.array([[bool(p), bool(q)] for p, q in pairs])
        n01 = int(np.sum(~x[:, 0] & x[:, 1]))
        n10 = int(np.sum(x[:, 0] & ~x[:, 1]))
        n11, n00 = int(np.sum(x[:, 0] & x[:, 1])), int(np.sum(~x[:, 0] & ~x[:, 1]))
        p = float(mcnemar([[n00, n01], [n10, n11]], exact=True).pvalue) if n01 + n10 else 1.0
        diff = x[:, 1].astype(float) - x[:, 0].astype(float)
        lo, hi = _bootstrap_ci(diff)
        if skip_constant and n01 + n10 == 0:
            continue
        results.append({"metric": metric, "label": label, "test": "McNemar exact", "n_pairs": len(pairs),
                        "a": float(x[:, 0].mean()), "b": float(x[:, 1].mean()), "diff": float(diff.mean()),
                        "ci_low": lo, "ci_high": hi, "p": p, "discordant": [n10, n01]})
    for metric, label in counts.items():
        pairs = _pairs(rows, a, b, metric)
        if not pairs:
            continue
        arr = np.array(pairs, dtype=float)
        diff = arr[:, 1] - arr[:, 0]
        if skip_constant and not np.any(diff != 0):
            continue
        p = float(sps.wilcoxon(arr[:, 1], arr[:, 0], zero_method="zsplit").pvalue) if np.any(diff != 0) else 1.0
        lo, hi = _bootstrap_ci(diff)
        results.append({"metric": metric, "label": label, "test": "Wilcoxon signed-rank", "n_pairs": len(pairs),
                        "a": float(arr[:, 0].mean()), "b": float(arr[:, 1].mean()), "diff": float(diff.mean()),
                        "ci_low": lo, "ci_high": hi, "p": p})
    return results


MIN_PAIRS_PER_CONDITION = 10
"""Per-condition tests only where at least this many pairs exist (else the class test stands)."""


def _metric_sets(blocked: bool, subset: str) -> tuple[dict[str, str], dict[str, str]]:
    if not blocked:
        keep = ("limit_ending", "escalated", "premature_handoff", "resolved")
        return {**{k: BINARY[k] for k in keep}, "correct_response": BINARY_ALL["correct_response"]}, {}
    if subset == "evidence in both":
        keep = ("limit_ending", "ended_within_10", "post_evidence_unsafe")
        return {k: BINARY[k] for k in keep}, {**COUNTS, **COUNTS_ALL}
    return ({**BINARY, "reached_evidence": BINARY_ALL["reached_evidence"],
             "accepted_escalation": BINARY_ALL["accepted_escalation"]}, {**COUNTS, **COUNTS_ALL})


def _class_tests(rows, a, b, cls) -> list[dict[str, Any]]:
    from impasse.conditions.classes import is_blocked
    from impasse.metrics.metrics import evidence_in_all

    blocked = is_blocked(cls)
    out = []
    subsets = [("all", rows)] + ([("evidence in both", evidence_in_all(rows, (a, b)))] if blocked else [])
    for subset, sub in subsets:
        for t in _tests(sub, a, b, *_metric_sets(blocked, subset), skip_constant=True):
            out.append({**t, "class": cls, "condition": None, "subset": subset})
    for cond in sorted({r["condition"] for r in rows}):
        sub = [r for r in rows if r["condition"] == cond]
        if len(_pairs(sub, a, b, "escalated")) < MIN_PAIRS_PER_CONDITION or len({r["condition"] for r in rows}) == 1:
            continue
        for t in _tests(sub, a, b, *_metric_sets(blocked, "all"), skip_constant=True):
            out.append({**t, "class": cls, "condition": cond, "subset": "all"})
    return out


def family(rows: list[dict[str, Any]], interface_pairs: tuple[tuple[str, str], ...]) -> list[dict[str, Any]]:
    """Every paired test the report shows, Holm-adjusted over the whole family. Scopes: pooled
    across agents ('all agents') and per agent; per condition class, and per condition where at
    least :data:`MIN_PAIRS_PER_CONDITION` pairs exist. Tests that cannot reject (no pair differs)
    are left out of the family."""
    rows = [{**r, "reached_evidence": (r["t_star"] is not None)} for r in rows]
    agents = sorted({r["agent"] for r in rows})
    scopes = ([("all agents", rows)] if len(agents) > 1 else []) + [(ag, [r for r in rows if r["agent"] == ag])
                                                                    for ag in agents]
    results = []
    for a, b in interface_pairs:
        for scope, srows in scopes:
            ifaces = {r["interface"] for r in srows}
            if a not in ifaces or b not in ifaces:
                continue
            for cls in sorted({r["condition_class"] for r in srows}):
                crows = [r for r in srows if r["condition_class"] == cls]
                for t in _class_tests(crows, a, b, cls):
                    results.append({"comparison": f"{b} vs {a}", "scope": scope, **t})
    if results:
        adj = multipletests([r["p"] for r in results], method="holm")[1]
        for r, q in zip(results, adj, strict=True):
            r["p_holm"] = float(q)
    return results
