"""``impasse report`` for an ask run: annotate its trajectories, HiL-Bench's Table 1 per agent and
domain, the excluded (invalid) episodes listed, and a precision-recall plot (thin I/O shell over
:mod:`impasse.ask.annotate`)."""

from __future__ import annotations

import base64
import html
import io
from typing import Any

from impasse.ask.annotate import TABLE_COLUMNS, table

FORMAT = "impasse.ask-report/1"


def build(rows: list[dict[str, Any]], sources: list[str]) -> dict[str, Any]:
    t, excluded = table(rows)
    return {"format": FORMAT, "summary": {"sources": sources, "episodes": len(rows), "table": t,
                                          "excluded": excluded, "excluded_count": len(excluded),
                                          "note": "reference agents are scripted baselines, not model results"
                                          if all(r["agent"].startswith("reference/") for r in rows) else ""},
            "episodes": rows}


def _cell(v: Any) -> str:
    return "-" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v)


def print_terminal(report: dict[str, Any], console: Any) -> None:
    from rich.table import Table

    s = report["summary"]
    tab = Table(title=f"ask suite: HiL-Bench Table 1 ({s['episodes']} episodes) {s['note']}")
    for c in TABLE_COLUMNS:
        tab.add_column(c, no_wrap=True)
    for r in s["table"]:
        tab.add_row(*[_cell(r[c]).removeprefix("reference/") for c in TABLE_COLUMNS])
    console.print(tab)
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
        ax.scatter(r["recall"], r["precision"], marker="o" if r["domain"] == "sql" else "s")
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
    head = "".join(f"<th>{html.escape(c)}</th>" for c in TABLE_COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(r[c]))}</td>" for c in TABLE_COLUMNS) + "</tr>"
                   for r in s["table"])
    excl = "".join(f"<li>{html.escape(x['episode_id'])}: {html.escape(x['why'])}</li>" for x in s["excluded"])
    return (f"<!doctype html><meta charset=utf-8><title>impasse ask report</title><h1>Ask suite</h1>"
            f"<p>{html.escape(s['note'])}</p><table border=1><tr>{head}</tr>{body}</table>"
            f"<h2>Excluded episodes ({s['excluded_count']})</h2><ul>{excl}</ul>"
            f"<h2>Precision vs recall</h2><img src='{pr_plot(report)}'>")
