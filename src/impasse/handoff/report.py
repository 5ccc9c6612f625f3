"""The handoff report: a terminal table per direction (QRec, CSRet with bootstrap CIs, suffix
steps and cost per step) and a QRec-vs-cost plot. Reference-agent runs are labelled as a
mechanics demonstration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from impasse.handoff.metrics import Cell, table

DEMO = "reference agents: a demonstration of the mechanics, not findings"


def _fmt(v: float | None, ci: tuple[float, float] | None = None) -> str:
    if v is None:
        return "n/a (R_HC = R_LC)" if ci is None else "n/a"
    return f"{v:.0f}" + (f" [{ci[0]:.0f}, {ci[1]:.0f}]" if ci else "")


def cells_for(rows: list[dict], plan: Any, direction: str, reps: int) -> list[Cell]:
    from impasse.handoff.runner import CONTROLS

    strategies = [f"{direction}:{i}" for i in plan.interfaces] + [f"{direction}:{c}" for c in CONTROLS]
    return table(rows, strategies, "alone:" + plan.lc.label, "alone:" + plan.hc.label, reps)


def markdown(cells: list[Cell]) -> str:
    lines = ["| strategy | K | n | R_m | R_LC | R_HC | QRec % | C_m $ | C_LC $ | C_HC $ | CSRet % | suffix steps | $/suffix step |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        lines.append(f"| {c.strategy} | {c.k} | {c.n} | {c.r_m:.2f} | {c.r_lc:.2f} | {c.r_hc:.2f} | "
                     f"{_fmt(c.qrec, c.qrec_ci)} | {c.c_m:.4f} | {c.c_lc:.4f} | {c.c_hc:.4f} | "
                     f"{_fmt(c.csret, c.csret_ci)} | {c.suffix_steps:.1f} | {c.suffix_cost_per_step:.4f} |")
    return "\n".join(lines)


def write_report(rows: list[dict], plan: Any, out: Path, reps: int = 1000) -> str:
    from rich.console import Console
    from rich.table import Table

    demo = plan.lc.spec.startswith("reference") or plan.hc.spec.startswith("reference")
    parts = []
    console = Console()
    for direction in plan.directions:
        cells = cells_for(rows, plan, direction, reps)
        title = f"Handoff, {direction}" + (f" ({DEMO})" if demo else "")
        t = Table(title=title)
        for col in ("strategy", "K", "n", "R_m", "QRec %", "C_m $", "CSRet %", "suffix steps", "$/step"):
            t.add_column(col)
        for c in cells:
            t.add_row(c.strategy, c.k, str(c.n), f"{c.r_m:.2f}", _fmt(c.qrec, c.qrec_ci), f"{c.c_m:.4f}",
                      _fmt(c.csret, c.csret_ci), f"{c.suffix_steps:.1f}", f"{c.suffix_cost_per_step:.4f}")
        console.print(t)
        parts.append(f"### {title}\n\n{markdown(cells)}\n")
        plot(cells, out / f"handoff-{direction}.png", title)
    text = "\n".join(parts)
    (out / "report.md").write_text(text)
    return text


def plot(cells: list[Cell], path: Path, title: str) -> None:
    """QRec (y) against mean cost (x), pooled over K, one point per strategy."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # the plot is optional (the 'report' extra); the table is always written
        return
    pooled = [c for c in cells if c.k == "pooled" and c.qrec is not None]
    if not pooled:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for c in pooled:
        ax.scatter(c.c_m, c.qrec)
        ax.annotate(c.strategy.split(":", 1)[1], (c.c_m, c.qrec), fontsize=8)
    ref = pooled[0]
    ax.scatter([ref.c_lc, ref.c_hc], [0, 100], marker="x", color="black")
    ax.annotate("LC alone", (ref.c_lc, 0), fontsize=8)
    ax.annotate("HC alone", (ref.c_hc, 100), fontsize=8)
    ax.set_xlabel("mean cost per instance (USD)")
    ax.set_ylabel("QRec (%)")
    ax.set_title(title, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
