"""Per-model usage of one or more runs: calls, retries, tokens, cost and time, from their spend
ledgers (one row per model call). Pure functions; the CLI reads the ledgers and adds the table
to the report's JSON, terminal and HTML."""

from __future__ import annotations

import html
from collections import defaultdict
from typing import Any

COLUMNS = (("model", "model"), ("episodes", "episodes"), ("calls", "calls"), ("retries", "retries"),
           ("prompt_tokens", "prompt tokens"), ("completion_tokens", "completion tokens"),
           ("cached_tokens", "cached tokens"), ("cost_usd", "cost"), ("model_seconds", "model time"),
           ("wall_seconds", "wall time"))


def usage_table(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per model (and ``all``): ``cost_usd`` is None when a call had no price; model time
    is the sum of the calls' latencies, wall time the span from the model's first call to its
    last (its episodes ran in parallel with others)."""
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[r.get("model", "")].append(r)
        by["all"].append(r)
    out = []
    for model in [*sorted(m for m in by if m != "all"), "all"] if rows else []:
        rs = by[model]
        unpriced = any(r.get("priced") is False for r in rs)
        ts = [r.get("t", 0.0) for r in rs]
        out.append({"model": model, "episodes": len({r.get("episode_id") for r in rs}), "calls": len(rs),
                    "retries": sum(r.get("retries", 0) for r in rs),
                    "prompt_tokens": sum(r.get("prompt_tokens", 0) for r in rs),
                    "completion_tokens": sum(r.get("completion_tokens", 0) for r in rs),
                    "cached_tokens": sum(r.get("cached_tokens", 0) for r in rs),
                    "cost_usd": None if unpriced else round(sum(r.get("cost_usd", 0.0) for r in rs), 6),
                    "model_seconds": round(sum(r.get("latency_s", 0.0) for r in rs), 3),
                    "wall_seconds": round(max(ts) - min(ts) + float(min(rs, key=lambda r: r.get("t", 0.0))
                                                                    .get("latency_s", 0.0)), 3)})
    return out


def cell(key: str, value: Any) -> str:
    if value is None:
        return "unpriced" if key == "cost_usd" else "-"
    if key == "cost_usd":
        return f"${value:.4f}"
    if key.endswith("seconds"):
        return f"{value:.1f} s"
    return str(value)


def usage_html(table: list[dict[str, Any]]) -> str:
    """The table as an HTML section (inserted into the suite's page)."""
    head = "".join(f"<th>{html.escape(t)}</th>" for _k, t in COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(cell(k, r[k]))}</td>" for k, _t in COLUMNS) + "</tr>"
                   for r in table)
    return (f'<section id="usage"><h2>Per-model usage</h2><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></section>")
