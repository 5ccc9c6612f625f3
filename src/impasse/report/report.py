"""Reports: annotate a run, aggregate the paper's metrics, compare interfaces with paired
statistics, and render a terminal table, a stable JSON document and a self-contained HTML page.

JSON contract ``impasse.report/1``::

    {"format": "impasse.report/1", "summary": {...}, "episodes": [{"episode_id", "instance_id",
     "condition", "condition_class", "interface", "agent", "ending", "steps", "first_contact",
     "t_star", "post_evidence_calls", "limit_ending", "unsafe": [{"step", "category", "rule"}],
     "escalated", "ticket_sufficient", "resolved", "nudges", ...}]}

Steps are tool calls, 1-based; null where not applicable.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
from pathlib import Path
from typing import Any

from impasse.annotate.annotator import annotate
from impasse.metrics.metrics import table
from impasse.store.trajectory import TrajectoryError, read_trajectory

FORMAT = "impasse.report/1"
CONTRACT = ("episode_id", "instance_id", "condition", "condition_class", "interface", "agent", "ending", "steps",
            "first_contact", "t_star", "post_evidence_calls", "limit_ending", "unsafe", "escalated",
            "ticket_sufficient", "resolved", "nudges")
INTERFACE_PAIRS = (("baseline", "tool"), ("tool", "monitor"), ("baseline", "monitor"))


def trajectory_paths(run_dir: Path) -> list[Path]:
    from impasse.store.rundir import RunDir

    paths = RunDir(run_dir).trajectories()
    if not paths:
        raise FileNotFoundError(f"{run_dir}: no trajectories (*.jsonl) found; is this a run directory?")
    return paths


def _annotate_files(paths: list[Path], write: bool) -> tuple[list[dict[str, Any]], list[str]]:
    rows, problems = [], []
    for p in paths:
        try:
            t = read_trajectory(p)
        except TrajectoryError as e:
            problems.append(str(e))
            continue
        if t.failed:
            problems.append(f"{p.name}: harness error ({t.events[-1].get('error', '')}); not the agent's doing, "
                            "not reported: rerun it with `impasse run --resume`")
            continue
        if not t.endings:
            problems.append(f"{p.name}: no ending yet (interrupted run? use `impasse run --resume`)")
            continue
        try:
            row = annotate(t).to_json()
        except KeyError as e:
            problems.append(f"{p.name}: {e}")
            continue
        row["trajectory"] = str(p)
        rows.append(row)
        if write:
            p.with_suffix(".annotation.json").write_text(json.dumps(row, indent=1))
    return rows, problems


def annotate_run(run_dir: Path, write: bool = True, jobs: int | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """-> (annotation rows, problems). Incomplete or malformed trajectories are reported, never
    silently dropped and never fatal. Large runs are annotated on every core."""
    paths = trajectory_paths(run_dir)
    jobs = jobs or min(os.cpu_count() or 1, 8)
    if jobs <= 1 or len(paths) < 200:
        return _annotate_files(paths, write)
    from concurrent.futures import ProcessPoolExecutor

    chunks = [paths[k::jobs] for k in range(jobs)]
    rows, problems = [], []
    with ProcessPoolExecutor(jobs) as pool:
        for r, pr in pool.map(_annotate_files, chunks, [write] * jobs):
            rows += r
            problems += pr
    rows.sort(key=lambda r: r["trajectory"])
    return rows, problems


def build(rows: list[dict[str, Any]], compare_rows: list[dict[str, Any]] | None = None,
          sources: list[str] = ()) -> dict[str, Any]:
    from impasse.metrics.stats import compare

    agents = sorted({r["agent"] for r in rows})
    comparisons = {}
    for agent in agents:
        mine = [r for r in rows if r["agent"] == agent]
        ifaces = {r["interface"] for r in mine}
        for a, b in INTERFACE_PAIRS:
            if a in ifaces and b in ifaces:
                comparisons[f"{agent}: {b} vs {a}"] = compare(mine, a, b)
    if compare_rows is not None:
        merged = ([{**r, "agent": "*", "interface": f"A:{r['interface']}"} for r in rows]
                  + [{**r, "agent": "*", "interface": f"B:{r['interface']}"} for r in compare_rows])
        for iface in sorted({r["interface"] for r in rows} & {r["interface"] for r in compare_rows}):
            comparisons[f"runs B vs A ({iface})"] = compare(merged, f"A:{iface}", f"B:{iface}")
    reference = all(a.startswith("reference/") for a in agents)
    summary = {"sources": list(sources), "episodes": len(rows), "agents": agents,
               "note": ("reference agents are scripted baselines, not model results" if reference else ""),
               "by_class": table(rows, ("agent", "interface", "condition_class")),
               "by_condition": table(rows, ("agent", "interface", "condition")),
               "comparisons": comparisons}
    episodes = [{k: r.get(k) for k in CONTRACT} | {k: v for k, v in r.items() if k not in CONTRACT} for r in rows]
    return {"format": FORMAT, "summary": summary, "episodes": episodes}


# ------------------------------------------------------------------------------------ terminal


def _fmt(v: Any, pct: bool = False) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{100 * v:.1f}%" if pct else f"{v:.2f}"
    return str(v)


HTML_COLUMNS = [("episodes", "n", False), ("evidence_coverage", "coverage", True), ("mean_t_star", "t*", False),
                    ("mean_post_evidence_calls", "post-ev calls", False), ("ended_within_10", "end<=10", True),
                    ("limit_endings", "limit", True), ("escalation_rate", "escalated", True),
                    ("premature_handoff_rate", "premature", True), ("post_evidence_unsafe", "unsafe post-ev", True),
                    ("ticket_sufficient", "ticket ok", True), ("resolved_clean", "clean solved", True),
                    ("resolved_after_restore", "solved after restore", True)]


BLOCKED_COLUMNS = [("episodes", "n", False), ("evidence_coverage", "coverage", True), ("mean_t_star", "t*", False),
                   ("mean_post_evidence_calls", "post-ev calls", False), ("ended_within_10", "end<=10", True),
                   ("limit_endings", "limit", True), ("escalation_rate", "escalated", True),
                   ("post_evidence_unsafe", "unsafe post-ev", True), ("ticket_sufficient", "ticket ok", True),
                   ("resolved_after_restore", "solved after restore", True)]
OTHER_COLUMNS = [("episodes", "n", False), ("premature_handoff_rate", "premature handoff", True),
                 ("escalation_rate", "escalated", True), ("limit_endings", "limit", True),
                 ("resolved_clean", "clean solved", True), ("mean_nudges", "nudges/ep", False)]


def headline_tables(rows: list[dict[str, Any]]) -> list[tuple[str, list, list[dict[str, Any]]]]:
    """(title, columns, rows per agent x interface): the paper's table on blocked conditions,
    then the controls. Shared by the terminal and the HTML page."""
    out = []
    for title, classes, columns in (
            ("blocked conditions (persistent + verification)", ("persistent", "verification"), BLOCKED_COLUMNS),
            ("controls (temporary, mismatch, clean)", ("temporary", "mismatch", "clean"), OTHER_COLUMNS)):
        groups = table([r for r in rows if r["condition_class"] in classes], ("agent", "interface"))
        if groups:
            out.append((f"{title}: {sum(g['episodes'] for g in groups)} episodes", columns, groups))
    return out


def print_terminal(report: dict[str, Any], console) -> None:
    from rich.table import Table

    s = report["summary"]
    if s["note"]:
        console.print(f"[yellow]{s['note']}[/]")
    for title, columns, groups in headline_tables(report["episodes"]):
        t = Table(title=title)
        t.add_column("agent", no_wrap=True)
        t.add_column("interface", no_wrap=True)
        for _, label, _ in columns:
            t.add_column(label, justify="right")
        for g in groups:
            t.add_row(g["agent"].removeprefix("reference/"), g["interface"], *(_fmt(g[k], pct) for k, _, pct in columns))
        console.print(t)
    ct = Table(title="paired comparisons (rows where the interfaces differ; p Holm-adjusted per comparison)")
    for col in ("comparison", "metric", "test", "pairs", "A", "B", "B-A [95% CI]", "p"):
        ct.add_column(col)
    shown = 0
    for name, tests in s["comparisons"].items():
        for r in tests:
            if r["a"] == r["b"]:
                continue
            shown += 1
            ci = f"{r['diff']:+.2f} [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]"
            ct.add_row(name.removeprefix("reference/"), r["label"], r["test"], str(r["n_pairs"]), f"{r['a']:.2f}",
                       f"{r['b']:.2f}", ci, f"{r['p_holm']:.3g}")
    if shown:
        console.print(ct)


# ---------------------------------------------------------------------------------------- html


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def plots(rows: list[dict[str, Any]]) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = {}
    ifaces = [i for i in ("baseline", "tool", "monitor") if any(r["interface"] == i for r in rows)] or \
        sorted({r["interface"] for r in rows})
    with_t = [r for r in rows if r["t_star"] is not None]
    fig, ax = plt.subplots(figsize=(6, 3.2))
    data = [[r["post_evidence_calls"] for r in with_t if r["interface"] == i] for i in ifaces]
    if any(data):
        ax.boxplot([d or [0] for d in data], tick_labels=ifaces, showmeans=True)
    ax.set_ylabel("tool calls after t*")
    ax.set_title("Post-evidence calls per interface")
    out["post_evidence"] = _png(fig)

    fig, ax = plt.subplots(figsize=(6, 3.2))
    kmax = max([r["post_evidence_calls"] or 0 for r in with_t] + [10])
    for i in ifaces:
        sub = [r for r in with_t if r["interface"] == i]
        if sub:
            ks = list(range(kmax + 1))
            ax.step(ks, [sum(1 for r in sub if r["post_evidence_calls"] >= k) / len(sub) for k in ks], where="post",
                    label=i)
    ax.axvline(10, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("k tool calls after t*")
    ax.set_ylabel("runs still going")
    ax.set_title("Survival after the evidence step")
    ax.legend()
    out["survival"] = _png(fig)

    classes = [c for c in ("persistent", "verification", "temporary", "mismatch", "clean")
               if any(r["condition_class"] == c for r in rows)]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
    width = 0.8 / max(1, len(ifaces))
    for j, (key, title) in enumerate((("limit_ending", "limit endings"), ("escalated", "escalations"))):
        for k, i in enumerate(ifaces):
            vals = []
            for c in classes:
                sub = [r for r in rows if r["interface"] == i and r["condition_class"] == c]
                vals.append(sum(bool(r[key]) for r in sub) / len(sub) if sub else 0)
            axes[j].bar([x + k * width for x in range(len(classes))], vals, width, label=i)
        axes[j].set_xticks([x + width * (len(ifaces) - 1) / 2 for x in range(len(classes))], classes, fontsize=8)
        axes[j].set_title(title)
        axes[j].set_ylim(0, 1)
    axes[0].legend(fontsize=8)
    out["classes"] = _png(fig)
    return out


def _table_html(rows: list[dict[str, Any]], columns=HTML_COLUMNS, group: str | None = "group") -> str:
    head = "".join(f"<th>{html.escape(label)}</th>" for _, label, _ in columns)
    body = []
    for r in rows:
        cells = "".join(f"<td>{_fmt(r[k], pct)}</td>" for k, _, pct in columns)
        key = f"<td>{r.get('condition_class') or r.get('condition')}</td>" if group else ""
        body.append(f"<tr><td>{html.escape(r['agent'])}</td><td>{r['interface']}</td>{key}{cells}</tr>")
    gh = f"<th>{group}</th>" if group else ""
    return f"<table><tr><th>agent</th><th>interface</th>{gh}{head}</tr>{''.join(body)}</table>"


def _drilldown(row: dict[str, Any]) -> str:
    eid = html.escape(row["episode_id"])
    traj = read_trajectory(Path(row["trajectory"])) if row.get("trajectory") else None
    unsafe = {u["step"]: u for u in row["unsafe"]}
    nudges = {e["step"] for e in traj.of_type("nudge")} if traj else set()
    items = []
    for s in traj.steps if traj else []:
        cls = []
        if s.index == row["first_contact"]:
            cls.append("contact")
        if s.index == row["t_star"]:
            cls.append("tstar")
        if s.index in unsafe:
            cls.append("unsafe")
        tags = " ".join(f"<span class='tag {c}'>{c}</span>" for c in cls)
        if s.index in unsafe:
            tags += f" <span class='tag unsafe'>{unsafe[s.index]['category']} ({unsafe[s.index]['rule']})</span>"
        if s.index in nudges:
            tags += " <span class='tag nudge'>nudge</span>"
        items.append(f"<li id='{eid}-s{s.index}' class='{' '.join(cls)}'><b>{s.index}</b> <code>{s.tool}</code> "
                     f"<code>{html.escape(s.command[:300])}</code> {tags}<pre>{html.escape(s.output[-1500:])}</pre></li>")
    summary = (f"{html.escape(row['agent'])} · {row['interface']} · {row['condition']} · {html.escape(row['instance_id'])}"
               f" → {row['ending']} at {row['steps']} (contact {row['first_contact']}, t* {row['t_star']}, "
               f"unsafe {len(row['unsafe'])})")
    return f"<details id='{eid}'><summary>{summary}</summary><ol>{''.join(items)}</ol></details>"


CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}table{border-collapse:collapse;font-size:12px}
td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}td:first-child,th:first-child{text-align:left}
pre{background:#f6f6f6;padding:4px;max-height:12em;overflow:auto;font-size:11px}li.tstar{background:#fff4d6}
li.contact{background:#e8f0ff}li.unsafe{background:#ffe3e3}.tag{font-size:10px;border-radius:3px;padding:1px 4px;
background:#ddd}.tag.unsafe{background:#f99}.tag.tstar{background:#fc6}.tag.contact{background:#9bf}.tag.nudge{background:#bdb}
.note{color:#a60}"""


def render_html(report: dict[str, Any], max_drilldown: int = 400) -> str:
    """One self-contained page. Trajectories are re-read only for the drill-down episodes (those
    with unsafe requests or escalations first), so memory stays flat on large runs."""
    s = report["summary"]
    rows = report["episodes"]
    figs = plots([r for r in rows if r["condition_class"] in ("persistent", "verification")] or rows)
    comp = []
    for name, tests in s["comparisons"].items():
        if not tests:
            continue
        lines = "".join(f"<tr><td>{t['label']}</td><td>{t['test']}</td><td>{t['n_pairs']}</td><td>{t['a']:.2f}</td>"
                        f"<td>{t['b']:.2f}</td><td>{t['diff']:+.2f} [{_fmt(t['ci_low'])}, {_fmt(t['ci_high'])}]</td>"
                        f"<td>{t['p_holm']:.3g}</td></tr>" for t in tests)
        comp.append(f"<h3>{html.escape(name)}</h3><table><tr><th>metric</th><th>test</th><th>pairs</th><th>A</th>"
                    f"<th>B</th><th>B−A [95% CI]</th><th>p (Holm)</th></tr>{lines}</table>")
    unsafe_rows = "".join(
        f"<tr><td><a href='#{html.escape(r['episode_id'])}-s{u['step']}'>{html.escape(r['episode_id'])}</a></td>"
        f"<td>{u['step']}</td><td>{u['category']}</td><td>{u['rule']}</td><td>{r['t_star']}</td></tr>"
        for r in rows for u in r["unsafe"][:5])
    interesting = sorted(rows, key=lambda r: (not r["unsafe"], not r["escalated"], r["episode_id"]))[:max_drilldown]
    drill = "".join(_drilldown(r) for r in interesting)
    more = len(rows) - len(interesting)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>impasse report</title><style>{CSS}</style></head><body>
<h1>impasse report</h1><p>{s['episodes']} episodes · agents: {html.escape(', '.join(s['agents']))}</p>
<p class="note">{html.escape(s['note'])}</p>
{''.join(f"<h2>{html.escape(t)}</h2>{_table_html(g, c, None)}" for t, c, g in headline_tables(rows))}
<h2>Plots (blocked conditions, all agents pooled)</h2><img src="{figs['post_evidence']}"> <img src="{figs['survival']}"><br><img src="{figs['classes']}">
<h2>Paired comparisons</h2>{''.join(comp) or '<p>none (needs two interfaces on the same tasks)</p>'}
<h2>By condition class</h2>{_table_html(s['by_class'])}
<h2>By condition</h2>{_table_html(s['by_condition'])}
<h2>Unsafe requests</h2><table><tr><th>episode</th><th>step</th><th>category</th><th>rule</th><th>t*</th></tr>{unsafe_rows}</table>
<h2>Episodes</h2><p>Highlighted: <span class="tag contact">contact</span> <span class="tag tstar">tstar</span>
<span class="tag unsafe">unsafe</span> <span class="tag nudge">nudge</span>.{f' {more} more episodes are in the JSON report.' if more > 0 else ''}</p>
{drill}</body></html>"""
