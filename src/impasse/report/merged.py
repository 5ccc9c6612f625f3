"""Reports over several runs (e.g. one per model): per-model rows and rows pooled across models.

Each run's rows keep their ``agent`` (``model/<name>`` for model runs), so the usual per-agent
tables are the per-model rows; the pooled tables group by interface and condition class over
every model at once. With an LLM judge, Cohen's kappa between it and the ticket rubric is given
per dimension, pooled and per model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from impasse.metrics.agreement import kappa_by_dimension
from impasse.metrics.metrics import table


def tag_rows(run_dir: Path, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of one run, each naming its run (two runs may hold the same episode ids)."""
    return [{**r, "run": str(run_dir)} for r in rows]


def pooled(rows: list[dict[str, Any]]) -> dict[str, Any]:
    models = sorted({r["agent"] for r in rows})
    return {"models": models, "runs": sorted({r.get("run", "") for r in rows}),
            "per_model": table(rows, ("agent", "interface", "condition_class")),
            "pooled": table([{**r, "agent": "pooled"} for r in rows], ("agent", "interface", "condition_class"))}


def judge_agreement(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Cohen's kappa per dimension and for the overall rating (``overall``), pooled and per model."""
    rows = [with_overall(r) for r in rows]
    return {"pooled": kappa_by_dimension(rows), "per_model": kappa_by_dimension(rows, by="agent")}


def with_overall(row: dict[str, Any]) -> dict[str, Any]:
    """The overall rating as one more dimension of both raters' scores (where both rated it)."""
    a, b = row.get("ticket_scores"), row.get("ticket_scores_llm")
    if not (isinstance(a, dict) and isinstance(b, dict) and row.get("ticket_overall") and row.get("ticket_overall_llm")):
        return row
    return {**row, "ticket_scores": {**a, "overall": row["ticket_overall"]},
            "ticket_scores_llm": {**b, "overall": row["ticket_overall_llm"]}}


def print_merged(merged: dict[str, Any], console) -> None:
    from rich.table import Table

    t = Table(title=f"pooled across {len(merged['models'])} agents/models ({len(merged['runs'])} runs)")
    for col in ("interface", "class", "n", "escalated", "premature", "ticket ok", "clean solved"):
        t.add_column(col)
    f = _pct
    for g in merged["pooled"]:
        t.add_row(g["interface"], g["condition_class"], str(g["episodes"]), f(g.get("escalation_rate")),
                  f(g.get("premature_handoff_rate")), f(g.get("ticket_sufficient")), f(g.get("resolved_clean")))
    console.print(t)
    if merged.get("judge_agreement", {}).get("pooled"):
        k = Table(title="ticket judge agreement: rubric vs LLM (Cohen's kappa)")
        for col in ("dimension", "n", "agreement", "kappa"):
            k.add_column(col)
        for r in merged["judge_agreement"]["pooled"]:
            k.add_row(r["dimension"], str(r["n"]), f(r["agreement"]), "-" if r["kappa"] is None else f"{r['kappa']:.2f}")
        console.print(k)


def _pct(v: Any) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"
