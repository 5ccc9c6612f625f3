"""Execution match for SQL answers, as HiL-Bench scores them, with one documented relaxation.

HiL-Bench compares result rows as multisets, numbers within 1e-2. We do the same, after one
normalisation applied to both sides: numeric strings become floats (the golden rows come from a CSV,
so ``"3"`` and ``3`` must meet), ``""`` is NULL (the CSV cannot tell them apart).

Column order: by default we also accept the right columns in another order. The questions never
fix an order, and an answer that lists (carrier, n) where the key lists (n, carrier) is the same
answer. The match is not per-row shuffling: one column permutation must map the whole result onto
the expected one, so swapped values inside a row still fail. ``column_order=True`` gives the strict
HiL-Bench behaviour. Column names are ignored (aliases are free).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

TOL = 1e-2
MAX_PERMUTED_COLUMNS = 7


def norm_cell(v: Any) -> Any:
    if v is None or v == "":
        return None
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, bytes):
        return v.hex()
    s = str(v)
    try:
        f = float(s)
    except ValueError:
        return s
    return f if math.isfinite(f) else s


def _key(cell: Any) -> tuple:
    if cell is None:
        return (0, 0.0, "")
    if isinstance(cell, float):
        return (1, round(cell, 2), "")
    return (2, 0.0, cell)


def _cells_equal(a: Any, b: Any, tol: float) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= tol
    return a == b


def _multiset_equal(exp: list[tuple], got: list[tuple], tol: float) -> bool:
    """Rows as multisets: sort both by a tolerance-aware key, then compare pairwise."""
    if len(exp) != len(got):
        return False
    se = sorted(exp, key=lambda r: tuple(_key(c) for c in r))
    sg = sorted(got, key=lambda r: tuple(_key(c) for c in r))
    return all(_cells_equal(a, b, tol) for re_, rg in zip(se, sg, strict=True)
               for a, b in zip(re_, rg, strict=True))


def _column_candidates(exp: list[tuple], got: list[tuple], n: int, tol: float) -> list[list[int]]:
    def col(rows: list[tuple], j: int) -> list[tuple]:
        return [(r[j],) for r in rows]
    return [[i for i in range(n) if _multiset_equal(col(exp, j), col(got, i), tol)] for j in range(n)]


def results_match(expected: Sequence[Sequence[Any]], got: Sequence[Sequence[Any]], *,
                  tol: float = TOL, column_order: bool = False) -> bool:
    """True when ``got`` equals ``expected`` as a multiset of rows (see module doc)."""
    exp = [tuple(norm_cell(c) for c in r) for r in expected]
    gt = [tuple(norm_cell(c) for c in r) for r in got]
    if len(exp) != len(gt):
        return False
    if not exp:
        return True
    n = len(exp[0])
    if any(len(r) != n for r in exp) or any(len(r) != n for r in gt):
        return False
    if _multiset_equal(exp, gt, tol):
        return True
    if column_order or n < 2 or n > MAX_PERMUTED_COLUMNS:
        return False
    cands = _column_candidates(exp, gt, n, tol)
    if any(not c for c in cands):
        return False
    for perm in itertools.product(*cands):
        if len(set(perm)) == n and _multiset_equal(exp, [tuple(r[i] for i in perm) for r in gt], tol):
            return True
    return False
