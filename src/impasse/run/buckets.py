"""Rate limits as token buckets: pure functions over a small state dict, so that every worker of
a run (processes, Ray tasks) shares one bucket through the run's ledger state and a test can
drive them with a fake clock.

A bucket for "at most ``L`` per 60 s" holds at most ``B`` units (the burst) and refills at
``(L - B + 1) / 60`` units per second for requests (whole units, ``B >= 1``): requests in any
half-open 60 s window are then at most ``floor(B + (L - B + 1) * t/60)`` for some ``t < 60``,
i.e. at most ``L``. The default burst of 1 spaces requests evenly (``60 / L`` s apart), which gives
the full sustained rate of ``L`` a minute (less :data:`MARGIN_S`). Tokens are not whole units: their bucket holds
``L / 4`` (a call's estimate must fit: a larger one is taken whole once the bucket is full, so it
alone can exceed the window) and refills at ``3L / 4`` per minute, so a window sees at most ``L``
*reserved* tokens and a long run sustains 3/4 of them. A
call takes its estimate (prompt + the model's max output: that is how providers count a request
against their own tpm, so a run under its tpm is under theirs); a call that used more than it
took owes the difference (the bucket goes below zero), one that used less gets nothing back.
"""

from __future__ import annotations

from typing import Any

WINDOW_S = 60.0
MARGIN_S = 0.5
"""Refills are spread over 60.5 s: a request reaches its endpoint a little after it leaves the
bucket (the lock, the connection), and that jitter must not move two into the same minute."""


def shape(kind: str, limit: float, burst: float | None = None) -> tuple[float, float]:
    """(capacity, refill per second) of a bucket allowing ``limit`` per minute."""
    if kind == "rpm":
        b = max(1.0, min(float(limit), burst if burst is not None else 1.0))
        return b, (limit - b + 1) / (WINDOW_S + MARGIN_S)
    b = limit / 4 if burst is None else min(float(limit), burst)
    return b, (limit - b) / (WINDOW_S + MARGIN_S)


def level(bucket: dict[str, float] | None, capacity: float, rate: float, now: float) -> float:
    """The bucket's content at ``now`` (a new bucket is full)."""
    if not bucket:
        return capacity
    return min(capacity, bucket["level"] + max(0.0, now - bucket["t"]) * rate)


def wait_for(bucket: dict[str, float] | None, capacity: float, rate: float, need: float, now: float) -> float:
    """Seconds until ``need`` units are in the bucket (0: now). ``need`` above the capacity is
    served when the bucket is full (it could never be otherwise)."""
    need = min(need, capacity)
    have = level(bucket, capacity, rate, now)
    if have >= need:
        return 0.0
    return (need - have) / rate if rate > 0 else float("inf")


def take(bucket: dict[str, float] | None, capacity: float, rate: float, amount: float, now: float) -> dict[str, float]:
    """The bucket after ``amount`` units left it at ``now`` (it may go below zero: a debt)."""
    return {"level": level(bucket, capacity, rate, now) - amount, "t": now}


def limits_of(limits: Any, model: str | None = None) -> dict[str, tuple[str, tuple[float, float]]]:
    """The buckets a call of ``model`` draws from, by state key: ``{"rpm": ("rpm", (capacity,
    rate)), "tpm:m": ("tpm", ...)}``: the run's limits and the model's own."""
    out = {}
    own = limits.ceiling_of(model) if model is not None and hasattr(limits, "ceiling_of") else None
    for prefix, holder in (("", limits), (f":{model}", own)):
        for kind in ("rpm", "tpm"):
            value = getattr(holder, kind, None) if holder is not None else None
            if value:
                out[f"{kind}{prefix}"] = (kind, shape(kind, value, getattr(holder, f"{kind}_burst", None)))
    return out
