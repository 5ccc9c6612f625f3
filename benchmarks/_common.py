"""Small helpers shared by the benchmark scripts (figures are printed, never asserted)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def percentiles(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)

    def q(p: float) -> float:
        return s[min(len(s) - 1, int(p * len(s)))]

    return {"median": statistics.median(s), "p95": q(0.95), "p99": q(0.99), "n": len(s)}


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def show(title: str, rows: list[tuple[str, dict[str, float]]], unit: str = "ms") -> None:
    print(f"\n{title}")
    for name, st in rows:
        print(f"  {name:<46} median {st['median']:8.3f} {unit}   p95 {st['p95']:8.3f} {unit}   (n={st['n']})")
