"""``impasse report`` for an ask run: annotate its trajectories, HiL-Bench's Table 1 per agent and
domain, the excluded (invalid) episodes listed, and a precision-recall plot (thin I/O shell over
:mod:`impasse.ask.annotate`)."""

from __future__ import annotations

import base64
import html
import io
from typing import Any

from impasse.ask.annotate import MODE_COLUMNS, TABLE_COLUMNS, mode_table, table

FORMAT = "impasse.ask-report/1"


def build(rows: list[dict[str, Any]], sources: list[str]) -> dict[str, Any]:
    t, excluded = table(rows)
    return {"format": FORMAT, "summary": {"sources": sources, "episodes": len(rows), "table": t,
                                          "modes": mode_table(rows),
                                          "excluded": excluded, "excluded_count": len(excluded),
                                          "note": "reference agents are scripted baselines, not model results"
                                          if all(r["agent"].startswith("reference/") for r in rows) else ""},
            "episodes": rows}


def _cell(row: dict[str, Any], column: str) -> str:
    """A table cell; ``ask_f1_per_pass`` shows HiL-Bench's mean ± std over the passes."""
    if column == "ask_f1_per_pass":
        return "-" if row.get("ask_f1_mean") is None else f"{row['ask_f1_mean']:.2f} ± {row['ask_f1_std']:.2f}"
    v = row[column]
    return "-" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v).removeprefix("reference/")


def print_terminal(report: dict[str, Any], console: Any) -> None:
    from rich.table import Table

    s = report["summary"]
    tab = Table(title=f"ask suite: HiL-Bench Table 1 ({s['episodes']} episodes) {s['note']}")
    for c in TABLE_COLUMNS:
        tab.add_column(c, no_wrap=True)
    for r in s["table"]:
        tab.add_row(*[_cell(r, c) for c in TABLE_COLUMNS])
    console.print(tab)
    console.print("ask_f1 is the pooled (micro) figure; ask_f1_per_pass the mean ± std of each pass's micro Ask-F1")
    modes = Table(title="per mode: pass@3 and the shaped reward (mean per episode)")
    for c in MODE_COLUMNS:
        modes.add_column(c, no_wrap=True)
    for r in s["modes"]:
        modes.add_row(*[_cell(r, c) for c in MODE_COLUMNS])
    console.print(modes)
    console.print(f"excluded episodes (invalid passes and their siblings): {s['excluded_count']}")
    for x in s["excluded"][:20]:
        console.print(f"  {x['episode_id']}: {x['why']}")


def pr_plot(report: dict[str, Any]) -> str:
    """Precision (y) vs recall (x) per agent and domain, as a PNG data URI."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4))
    for r in report["summary"]["table"]:
        if r["recall"] is None:
            continue
        ax.scatter(r["recall"], r["precision"], marker={"sql": "o", "swe": "s"}.get(r["domain"], "^"))
        ax.annotate(f"{r['agent'].removeprefix('reference/')} ({r['domain']})", (r["recall"], r["precision"]),
                    fontsize=7)
    ax.set(xlabel="recall (blockers found)", ylabel="precision (useful questions)", xlim=(-0.05, 1.05),
           ylim=(-0.05, 1.05), title="ask_human: precision vs recall")
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def render_html(report: dict[str, Any]) -> str:
    s = report["summary"]

    def rows_html(columns: tuple[str, ...], rows: list[dict[str, Any]]) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(r, c))}</td>" for c in columns) + "</tr>"
                       for r in rows)
        return f"<table border=1><tr>{head}</tr>{body}</table>"

    excl = "".join(f"<li>{html.escape(x['episode_id'])}: {html.escape(x['why'])}</li>" for x in s["excluded"])
    return (f"<!doctype html><meta charset=utf-8><title>impasse ask report</title><h1>Ask suite</h1>"
            f"<p>{html.escape(s['note'])}</p>{rows_html(TABLE_COLUMNS, s['table'])}"
            f"<p>ask_f1: pooled (micro); ask_f1_per_pass: mean ± std of each pass's micro Ask-F1</p>"
            f"<h2>Per mode: pass@3 and the shaped reward</h2>{rows_html(MODE_COLUMNS, s['modes'])}"
            f"<h2>Excluded episodes ({s['excluded_count']})</h2><ul>{excl}</ul>"
            f"<h2>Precision vs recall</h2><img src='{pr_plot(report)}'>")
