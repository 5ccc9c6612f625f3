"""Paired comparisons between interfaces on the same (agent, task, condition).

Binary outcomes: McNemar's exact test (statsmodels). Counts: Wilcoxon signed-rank (scipy).
Effect sizes with paired bootstrap confidence intervals (scipy.stats.bootstrap). The whole
family of tests in one report is Holm-adjusted (statsmodels.multipletests).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

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
    results = []
    for metric, label in BINARY.items():
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
        results.append({"metric": metric, "label": label, "test": "McNemar exact", "n_pairs": len(pairs),
                        "a": float(x[:, 0].mean()), "b": float(x[:, 1].mean()), "diff": float(diff.mean()),
                        "ci_low": lo, "ci_high": hi, "p": p, "discordant": [n10, n01]})
    for metric, label in COUNTS.items():
        pairs = _pairs(rows, a, b, metric)
        if not pairs:
            continue
        arr = np.array(pairs, dtype=float)
        diff = arr[:, 1] - arr[:, 0]
        p = float(sps.wilcoxon(arr[:, 1], arr[:, 0], zero_method="zsplit").pvalue) if np.any(diff != 0) else 1.0
        lo, hi = _bootstrap_ci(diff)
        results.append({"metric": metric, "label": label, "test": "Wilcoxon signed-rank", "n_pairs": len(pairs),
                        "a": float(arr[:, 0].mean()), "b": float(arr[:, 1].mean()), "diff": float(diff.mean()),
                        "ci_low": lo, "ci_high": hi, "p": p})
    if results:
        adj = multipletests([r["p"] for r in results], method="holm")[1]
        for r, q in zip(results, adj, strict=True):
            r["p_holm"] = float(q)
    return results
