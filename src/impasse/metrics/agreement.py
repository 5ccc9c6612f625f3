"""Agreement between two raters (the ticket rubric and an LLM judge): Cohen's kappa per
dimension. Generic over dimension names: whatever keys both raters scored are compared, so a
judge that adds a dimension (e.g. an overall rating) is covered without a change here."""

from __future__ import annotations

from collections import Counter
from typing import Any


def cohen_kappa(pairs: list[tuple[Any, Any]]) -> float | None:
    """kappa = (p_o - p_e) / (1 - p_e); None when undefined (no pairs, or chance agreement is 1)."""
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(a == b for a, b in pairs) / n
    ca, cb = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(ca[k] * cb[k] for k in ca.keys() | cb.keys()) / (n * n)
    if expected == 1:
        return None
    return (observed - expected) / (1 - expected)


def kappa_by_dimension(rows: list[dict[str, Any]], a: str = "ticket_scores", b: str = "ticket_scores_llm",
                       by: str | None = None) -> list[dict[str, Any]]:
    """One row per (group,) dimension: n, observed agreement and kappa, over rows scored by both."""
    groups: dict[Any, list[dict[str, Any]]] = {}
    for r in rows:
        if isinstance(r.get(a), dict) and isinstance(r.get(b), dict):
            groups.setdefault(r.get(by) if by else "*", []).append(r)
    out = []
    for group, rs in sorted(groups.items(), key=lambda kv: str(kv[0])):
        dims = sorted({d for r in rs for d in r[a]} & {d for r in rs for d in r[b]})
        for d in dims:
            pairs = [(r[a][d], r[b][d]) for r in rs if d in r[a] and d in r[b]]
            kappa = cohen_kappa(pairs)
            out.append({**({by: group} if by else {}), "dimension": d, "n": len(pairs),
                        "agreement": sum(x == y for x, y in pairs) / len(pairs),
                        "kappa": None if kappa is None else round(kappa, 4)})
    return out
