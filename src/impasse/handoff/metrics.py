"""Handoff metrics (pure): the switched subset, QRec and CSRet with bootstrap CIs.

QRec(m,K)  = (R_m - R_LC) / (R_HC - R_LC) x 100   (share of the strong model's quality advantage kept)
CSRet(m,K) = (C_HC - C_m) / (C_HC - C_LC) x 100   (share of the cost saving kept)

R = resolved rate, C = mean USD cost, both on the matched switched subset: the instances where
every compared strategy actually switched at K (Handoff Tax §3.2). Undefined (None, with the
reason) when the denominator is zero (the two single models tie) or when a cost is unknown (a
model the price table does not price: :mod:`impasse.prices`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import mean
from typing import Any


def rate(values: Iterable[float | None]) -> float | None:
    """The mean; None if any value is unknown (a cost the price table cannot give)."""
    v = list(values)
    if any(x is None for x in v):
        return None
    return mean(v) if v else float("nan")


def qrec(r_m: float, r_lc: float, r_hc: float) -> float | None:
    return None if r_hc == r_lc else (r_m - r_lc) / (r_hc - r_lc) * 100


def csret(c_m: float | None, c_lc: float | None, c_hc: float | None) -> float | None:
    if c_m is None or c_lc is None or c_hc is None or c_hc == c_lc:
        return None
    return (c_hc - c_m) / (c_hc - c_lc) * 100


def switched_subset(rows: Sequence[dict[str, Any]], strategies: Sequence[str], k: str) -> list[str]:
    """Instances where every strategy in ``strategies`` has a row at switch point ``k`` that switched."""
    by: dict[str, set[str]] = {}
    for r in rows:
        if r.get("k") == k and r["strategy"] in strategies and r.get("switched"):
            by.setdefault(r["instance"], set()).add(r["strategy"])
    return sorted(i for i, s in by.items() if s >= set(strategies))


@dataclass
class Cell:
    strategy: str
    k: str
    n: int
    r_m: float
    c_m: float
    r_lc: float
    r_hc: float
    c_lc: float
    c_hc: float
    qrec: float | None
    csret: float | None
    qrec_ci: tuple[float, float] | None
    csret_ci: tuple[float, float] | None
    suffix_steps: float
    suffix_cost_per_step: float | None
    qrec_reason: str | None = None
    csret_reason: str | None = None
    """Why QRec / CSRet is undefined (None when it is defined)."""


def _q(trip: Sequence[tuple[dict, dict, dict]]) -> tuple[float | None, float | None]:
    r = [rate(t[i]["resolved"] for t in trip) for i in range(3)]
    c = [rate(t[i]["cost_usd"] for t in trip) for i in range(3)]
    return qrec(r[0], r[1], r[2]), csret(c[0], c[1], c[2])


def bootstrap(trip: Sequence[tuple[dict, dict, dict]], reps: int = 1000, seed: int = 0, level: float = 0.95):
    """Percentile CIs of (QRec, CSRet) resampling instances (with their matched LC/HC rows)."""
    rng = random.Random(seed)
    qs, cs = [], []
    for _ in range(reps):
        sample = [trip[rng.randrange(len(trip))] for _ in trip]
        q, c = _q(sample)
        if q is not None:
            qs.append(q)
        if c is not None:
            cs.append(c)

    def ci(v: list[float]) -> tuple[float, float] | None:
        if len(v) < reps // 2:  # the ratio is undefined in most resamples: no interval
            return None
        v.sort()
        lo, hi = int((1 - level) / 2 * len(v)), int((1 + level) / 2 * len(v)) - 1
        return v[lo], v[hi]
    return ci(qs), ci(cs)


def cell(rows: Sequence[dict[str, Any]], strategy: str, k: str | None, lc: str, hc: str, instances: Sequence[str],
         reps: int = 1000) -> Cell:
    """QRec/CSRet of ``strategy`` at ``k`` (None = pooled over every k given in ``instances`` as 'k|instance')."""
    single = {(r["strategy"], r["instance"]): r for r in rows if r["strategy"] in (lc, hc)}
    mine = {(r["k"], r["instance"]): r for r in rows if r["strategy"] == strategy}
    keys = [tuple(i.split("|", 1)) if k is None else (k, i) for i in instances]
    trip = [(mine[key], single[(lc, key[1])], single[(hc, key[1])]) for key in keys]
    if not trip:
        nothing = "no instance switched at this K (every prefix run ended first)"
        nan = float("nan")
        return Cell(strategy, k or "pooled", 0, r_m=nan, c_m=None, r_lc=nan, r_hc=nan, c_lc=None, c_hc=None,
                    qrec=None, csret=None, qrec_ci=None, csret_ci=None, suffix_steps=nan, suffix_cost_per_step=None,
                    qrec_reason=nothing, csret_reason=nothing)
    q, c = _q(trip)
    qci, cci = bootstrap(trip, reps)
    steps = [t[0].get("suffix_steps", 0) for t in trip]
    scost = [t[0].get("suffix_cost_usd", 0.0) for t in trip]
    r_lc, r_hc = rate(t[1]["resolved"] for t in trip), rate(t[2]["resolved"] for t in trip)
    costs = [rate(t[i]["cost_usd"] for t in trip) for i in range(3)]
    unpriced = sorted({m for t in trip for r in t for m in r.get("unpriced") or ()})
    csret_reason = (f"no price for {', '.join(unpriced)}" if unpriced or None in costs
                    else "C_HC = C_LC" if c is None else None)
    return Cell(strategy, k or "pooled", len(trip), rate(t[0]["resolved"] for t in trip), costs[0], r_lc, r_hc,
                costs[1], costs[2], q, c, qci, cci, rate(steps),
                sum(scost) / sum(steps) if sum(steps) and None not in scost else None,
                "R_HC = R_LC" if q is None else None, csret_reason if c is None else None)


def table(rows: Sequence[dict[str, Any]], strategies: Sequence[str], lc: str, hc: str, reps: int = 1000) -> list[Cell]:
    """One cell per (strategy, k) on that k's switched subset, then one pooled over k per strategy."""
    ks = sorted({r["k"] for r in rows if r["strategy"] in strategies and r.get("k")}, key=_korder)
    cells, pooled = [], []
    for k in ks:  # a K that switches no instance keeps its rows (n = 0), it does not vanish
        subset = switched_subset(rows, strategies, k)
        pooled += [f"{k}|{i}" for i in subset]
        cells += [cell(rows, s, k, lc, hc, subset, reps) for s in strategies]
    if pooled:
        cells += [cell(rows, s, None, lc, hc, pooled, reps) for s in strategies]
    return cells


def _korder(k: str) -> tuple[int, float]:
    if k.startswith("p") and k[1:].isdigit():
        return (1, float(k[1:]))
    return (0, float(k)) if k.isdigit() else (2, 0.0)


def percentile_steps(steps: Sequence[int], percentiles: Sequence[int]) -> dict[int, int]:
    """Nearest-rank percentiles of termination steps (each at least 1)."""
    if not steps:
        raise ValueError("no termination steps of the prefix model to take percentiles of")
    s = sorted(steps)
    return {p: max(1, s[max(0, -(-p * len(s) // 100) - 1)]) for p in percentiles}


def bucket_percentile_steps(records: Sequence[dict[str, Any]], percentile: int, bucket: str | None = None) -> dict[str, int]:
    """The switch step of each instance: the nearest-rank ``percentile`` of the prefix's own
    termination steps, taken over all of ``records`` (``bucket`` None) or over the records in
    the instance's own difficulty bucket (:data:`BUCKETS`).

    ``records``: the prefix model's single-model runs, ``{"instance", "steps", "resolved"}`` each.
    Why buckets: termination steps on tasks a model solves (it stops when the tests pass) and on
    tasks it fails (it wanders until it gives up) are different distributions; a percentile of
    their mixture switches late on the one and early on the other. Within a bucket, pK means
    "K percent of the way into this kind of run" for every instance.
    """
    if bucket is None:
        k = percentile_steps([r["steps"] for r in records], [percentile])[percentile]
        return {r["instance"]: k for r in records}
    of = BUCKETS.get(bucket)
    if of is None:
        raise ValueError(f"difficulty bucket {bucket!r}: use one of {', '.join(BUCKETS)} (or none)")
    groups: dict[str, list[int]] = {}
    for r in records:
        groups.setdefault(of(r), []).append(r["steps"])
    ks = {b: percentile_steps(v, [percentile])[percentile] for b, v in groups.items()}
    return {r["instance"]: ks[of(r)] for r in records}


def _outcome_bucket(record: dict[str, Any]) -> str:
    return "solved" if record.get("resolved") else "unsolved"


BUCKETS: dict[str, Any] = {"outcome": _outcome_bucket}
"""Difficulty buckets from data a prior single-model run has. ``outcome``: whether the prefix
model resolved the instance on its own (the difficulty *for that model*, which is what its own
termination steps measure)."""
