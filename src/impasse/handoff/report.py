"""The handoff report: the switch points (the step each resolved to, how many instances
switched), then a table per direction (QRec, CSRet with bootstrap CIs and the reason when
undefined, the single models' R and C, suffix steps and cost per suffix step) and a
QRec-vs-cost plot. Reference-agent runs are labelled as a mechanics demonstration."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from impasse.handoff.metrics import Cell, table

DEMO = "reference agents: a demonstration of the mechanics, not findings"
COLUMNS = ("strategy", "K", "n", "R_m", "R_LC", "R_HC", "QRec %", "C_m $", "C_LC $", "C_HC $", "CSRet %",
           "suffix steps", "$/suffix step")


def _fmt(v: float | None, ci: tuple[float, float] | None, reason: str | None) -> str:
    if v is None:
        return f"n/a ({reason})" if reason else "n/a"
    return f"{v:.0f}" + (f" [{ci[0]:.0f}, {ci[1]:.0f}]" if ci else "")


def _num(v: float | None, digits: int) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def cells_for(rows: list[dict], plan: Any, direction: str, reps: int) -> list[Cell]:
    from impasse.handoff.runner import CONTROLS

    strategies = [f"{direction}:{i}" for i in plan.interfaces] + [f"{direction}:{c}" for c in CONTROLS]
    return table(rows, strategies, "alone:" + plan.lc.label, "alone:" + plan.hc.label, reps)


def row_cells(c: Cell) -> list[str]:
    return [c.strategy, c.k, str(c.n), _num(c.r_m, 2), _num(c.r_lc, 2), _num(c.r_hc, 2),
            _fmt(c.qrec, c.qrec_ci, c.qrec_reason), _num(c.c_m, 4), _num(c.c_lc, 4), _num(c.c_hc, 4),
            _fmt(c.csret, c.csret_ci, c.csret_reason), _num(c.suffix_steps, 1), _num(c.suffix_cost_per_step, 4)]


def switch_points(rows: list[dict], direction: str) -> list[list[str]]:
    """Per switch point of a direction: the step(s) it resolved to and how many instances switched
    (and how many of those prefixes went on live past the end of a recorded run cut short)."""
    out = []
    for k in sorted({r["k"] for r in rows if r["strategy"].startswith(direction + ":") and r.get("k")}, key=str):
        mine = {r["instance"]: r for r in rows if r["strategy"].startswith(direction + ":") and r.get("k") == k}
        steps = sorted({r["k_step"] for r in mine.values() if r.get("k_step") is not None})
        switched = sum(1 for r in mine.values() if r["switched"])
        live = len({r["instance"] for r in rows if r["strategy"].startswith(direction + ":") and r.get("k") == k
                    and r["switched"] and r.get("prefix_live_calls")})
        shown = ", ".join(map(str, steps)) if steps else ("at the prefix's escalation" if k == "escalation" else "–")
        out.append([k, shown, f"{switched} of {len(mine)}" + (f" ({live} with a prefix gone on live past its "
                                                               "recorded run)" if live else "")])
    return out


def markdown(cells: list[Cell], points: list[list[str]]) -> str:
    lines = ["| switch | step | instances switched |", "|---|---|---|", *(f"| {' | '.join(p)} |" for p in points), "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row_cells(c)) + " |" for c in cells]
    return "\n".join(lines)


def write_report(rows: list[dict], plan: Any, out: Path, reps: int = 1000) -> str:
    from rich.console import Console
    from rich.table import Table

    demo = plan.lc.spec.startswith("reference") or plan.hc.spec.startswith("reference")
    parts = []
    import sys

    console = Console(width=None if sys.stdout.isatty() else 220)  # piped: the table stays whole
    for direction in plan.directions:
        cells = cells_for(rows, plan, direction, reps)
        points = switch_points(rows, direction)
        title = f"Handoff, {direction}" + (f" ({DEMO})" if demo else "")
        k_table = Table(title=f"{direction}: switch points")
        for col in ("switch", "step", "instances switched"):
            k_table.add_column(col)
        for p in points:
            k_table.add_row(*p)
        console.print(k_table)
        t = Table(title=title)
        for col in COLUMNS:
            t.add_column(col)
        for c in cells:
            t.add_row(*row_cells(c))
        console.print(t)
        parts.append(f"### {title}\n\n{markdown(cells, points)}\n")
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
    pooled = [c for c in cells if c.k == "pooled" and c.qrec is not None and c.c_m is not None]
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
