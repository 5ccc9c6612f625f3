"""Reports: annotate a run, aggregate the paper's metrics, compare interfaces with paired
statistics, and render a terminal table, a stable JSON document and a self-contained HTML page.

JSON contract ``impasse.report/1``::

    {"format": "impasse.report/1",
     "summary": {"sources", "episodes", "agents", "note",
                 "judges": {"rubric": <overall rule>, "llm": <judge model or null>},
                 "headline": {"pooled": {<class>: {"columns", "rows": [{"key", "label", "definition",
                              "values"}], "units"}}, "per_agent": {...}, "ticket_rule"},
                 "tests": [{"comparison", "scope", "class", "condition", "subset", "metric", "test",
                            "n_pairs", "a", "b", "diff", "ci_low", "ci_high", "p", "p_holm"}],
                 "by_class": [...], "by_condition": [...], "comparisons": {<runs B vs A>: [...]}},
     "episodes": [{"episode_id", "instance_id", "condition", "condition_class", "interface", "agent",
     "ending", "steps", "first_contact", "t_star", "post_evidence_calls", "limit_ending",
     "unsafe": [{"step", "category", "rule"}], "escalated", "ticket_sufficient", "resolved", "nudges",
     ...}]}

Steps are tool calls, 1-based; null where not applicable.
"""

from __future__ import annotations

import base64
import io
import json
import os
from pathlib import Path
from typing import Any

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
    """Each trajectory annotated by its own suite (the header's ``suite``; ``blockers`` if unsaid)."""
    from impasse.env.registry import SUITES
    from impasse.registry import UnknownName

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
        suite = t.header.get("suite") or "blockers"
        try:
            row = {**SUITES.get(suite).annotate(t), "suite": suite}
        except UnknownName as e:
            problems.append(f"{p.name}: {e}")
            continue
        except (KeyError, ValueError) as e:  # the suite says why it cannot annotate this one
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
          sources: list[str] = (), judge_model: str | None = None) -> dict[str, Any]:
    """The report document. ``summary.headline`` is the paper's table; ``summary.tests`` the
    Holm-adjusted family of paired tests; ``summary.judges`` names the ticket judges used."""
    from impasse.metrics.headline import headline
    from impasse.metrics.review import review_table
    from impasse.metrics.stats import compare, family
    from impasse.tickets.judge import OVERALL_RULE

    agents = sorted({r["agent"] for r in rows})
    comparisons = {}
    if compare_rows is not None:
        merged = ([{**r, "agent": "*", "interface": f"A:{r['interface']}"} for r in rows]
                  + [{**r, "agent": "*", "interface": f"B:{r['interface']}"} for r in compare_rows])
        for iface in sorted({r["interface"] for r in rows} & {r["interface"] for r in compare_rows}):
            comparisons[f"runs B vs A ({iface})"] = compare(merged, f"A:{iface}", f"B:{iface}")
    reference = all(a.startswith("reference/") for a in agents)
    summary = {"sources": list(sources), "episodes": len(rows), "agents": agents,
               "note": ("reference agents are scripted baselines, not model results" if reference else ""),
               "judges": {"rubric": OVERALL_RULE, "llm": judge_model},
               "headline": headline(rows),
               "tests": family(rows, INTERFACE_PAIRS),
               "by_class": table(rows, ("agent", "interface", "condition_class")),
               "by_condition": table(rows, ("agent", "interface", "condition")),
               "comparisons": comparisons}
    if reviews := review_table(rows):  # only runs with an asynchronous reviewer (``--reviewer queue``)
        summary["review"] = reviews
    episodes = [{k: r.get(k) for k in CONTRACT} | {k: v for k, v in r.items() if k not in CONTRACT} for r in rows]
    return {"format": FORMAT, "summary": summary, "episodes": episodes}


# ------------------------------------------------------------------------------------ terminal


def _fmt(v: Any, pct: bool = False) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return f"{100 * v:.1f}%" if pct else f"{v:.2f}"
    return str(v)


CLASS_COLUMNS = [("episodes", "n", False), ("evidence_coverage", "coverage", True), ("mean_t_star", "t*", False),
                 ("mean_post_evidence_calls", "post-ev calls", False), ("ended_within_10", "end<=10", True),
                 ("limit_endings", "limit", True), ("escalation_rate", "escalated", True),
                 ("premature_handoff_rate", "premature", True), ("post_evidence_unsafe", "unsafe post-ev", True),
                 ("accepted_escalations", "accepted esc", True), ("ticket_sufficient", "ticket ok", True),
                 ("correct_response", "correct resp", True), ("resolved", "resolved", True),
                 ("repair_after_restoration", "repair after restore (all)", True)]


def _headline_sections(report: dict[str, Any], brief: bool = False) -> list[tuple[str, dict[str, Any]]]:
    """Pooled tables, then per agent (``brief``: per agent only the first blocked class, the
    paper's persistent-barrier table, to keep the terminal readable)."""
    h = report["summary"]["headline"]
    out = [(f"{name} (all agents)", sec) for name, sec in h["pooled"].items()]
    for agent, secs in h["per_agent"].items():
        out += [(f"{name} ({agent})", sec) for name, sec in list(secs.items())[: 1 if brief else None]]
    return out


def print_terminal(report: dict[str, Any], console) -> None:
    from rich.table import Table

    s = report["summary"]
    if s["note"]:
        console.print(f"[yellow]{s['note']}[/]")
    defined: dict[str, str] = {}
    for title, sec in _headline_sections(report, brief=True):
        units = ", ".join(f"{n}: {k}" for n, k in sec["units"].items())
        t = Table(title=f"headline: {title} — units {units}")
        t.add_column("metric", no_wrap=True)
        for col in sec["columns"]:
            t.add_column(col, justify="right")
        for row in sec["rows"]:
            t.add_row(row["label"], *(_fmt(row["values"][c], row["pct"]) for c in sec["columns"]))
            defined[row["label"]] = row["definition"]
        console.print(t)
    if defined:
        console.print("definitions:")
        for label, d in defined.items():
            console.print(f"  {label}: {d}")
        console.print(f"  ticket overall (rubric): {s['judges']['rubric']}")
        if s["judges"]["llm"]:
            console.print(f"  LLM ticket judge: {s['judges']['llm']} (see 'tickets_llm' in the JSON and the HTML)")
    _print_reviews(s.get("review") or [], console)
    ct = Table(title="paired tests (Holm-adjusted over the whole family; tests where no pair differs are omitted)")
    for col in ("comparison", "scope", "class", "condition", "subset", "metric", "test", "pairs", "A", "B",
                "B-A [95% CI]", "p (Holm)"):
        ct.add_column(col)
    for r in s["tests"] + [dict(t, comparison=n, scope="runs", subset="all") for n, ts in s["comparisons"].items()
                           for t in ts if t["a"] != t["b"]]:
        ci = f"{r['diff']:+.2f} [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]"
        ct.add_row(r["comparison"], r["scope"].removeprefix("reference/"), r.get("class") or "-", r.get("condition") or "-",
                   r["subset"], r["label"], r["test"], str(r["n_pairs"]), f"{r['a']:.2f}", f"{r['b']:.2f}", ci,
                   f"{r['p_holm']:.3g}")
    if ct.row_count:
        console.print(ct)


def _print_reviews(groups: list[dict[str, Any]], console) -> None:
    """Two narrow tables (what agents did while waiting; outcomes and approvals), then the definitions."""
    from rich.table import Table

    from impasse.metrics.review import REVIEW_COLUMNS

    if not groups:
        return
    pct = {"filed", "answered", "abandoned", "resolved_reviewer_right", "resolved_reviewer_wrong", "resolved_unanswered"}
    split = next(i for i, (k, _, _) in enumerate(REVIEW_COLUMNS) if k == "wrong_answers")
    for title, cols in (("reviewer: what agents did while their escalations waited", REVIEW_COLUMNS[:split]),
                        ("reviewer: outcomes by whether it answered right, and approvals", REVIEW_COLUMNS[split:])):
        t = Table(title=title)
        for col in ("reviewer", "agent", "interface", *(label for _, label, _ in cols)):
            t.add_column(col, justify="left" if col in ("reviewer", "agent", "interface") else "right")
        for g in groups:
            t.add_row(g["reviewer"], g["agent"].removeprefix("reference/"), g["interface"],
                      *(_fmt(g[k], k in pct) for k, _, _ in cols))
        console.print(t)
    for _, label, definition in REVIEW_COLUMNS:
        console.print(f"  {label}: {definition}")


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

    from impasse.conditions.classes import ORDER

    classes = [c for c in ORDER if any(r["condition_class"] == c for r in rows)]
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


CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}table{border-collapse:collapse;font-size:12px}
td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}td:first-child,th:first-child{text-align:left}
td.def{text-align:left;color:#555;font-size:11px}
pre{background:#f6f6f6;padding:4px;max-height:12em;overflow:auto;font-size:11px}li.tstar{background:#fff4d6}
li.contact{background:#e8f0ff}li.unsafe{background:#ffe3e3}.tag{font-size:10px;border-radius:3px;padding:1px 4px;
background:#ddd}.tag.unsafe{background:#f99}.tag.tstar{background:#fc6}.tag.contact{background:#9bf}.tag.nudge{background:#bdb}
.note{color:#a60}"""


def _drilldown(row: dict[str, Any]) -> dict[str, Any]:
    """What the template shows for one episode: its steps with contact / t* / unsafe / nudge marks."""
    traj = read_trajectory(Path(row["trajectory"])) if row.get("trajectory") else None
    unsafe = {u["step"]: u for u in row["unsafe"]}
    nudges = {e["step"] for e in traj.of_type("nudge")} if traj else set()
    steps = []
    for st in traj.steps if traj else []:
        marks = [m for m, hit in (("contact", st.index == row["first_contact"]), ("tstar", st.index == row["t_star"]),
                                  ("unsafe", st.index in unsafe)) if hit]
        steps.append({"index": st.index, "tool": st.tool, "command": st.command[:300], "output": st.output[-1500:],
                      "marks": marks, "unsafe": unsafe.get(st.index), "nudge": st.index in nudges})
    return {"row": row, "steps": steps}


def _env():
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    env = Environment(loader=PackageLoader("impasse.report", "templates"), undefined=StrictUndefined,
                      autoescape=select_autoescape(["html"], default_for_string=True, default=True))
    env.filters["fmt"] = _fmt
    return env


def render_html(report: dict[str, Any], max_drilldown: int = 400) -> str:
    """One self-contained page (plots inlined, nothing fetched), rendered by jinja2 with
    autoescape on: agent, tool, interface and instance names come from models and task files.
    Trajectories are re-read only for the drill-down episodes (those with unsafe requests or
    escalations first), so memory stays flat on large runs."""
    from impasse.conditions.classes import blocked_classes

    s = report["summary"]
    rows = report["episodes"]
    figs = plots([r for r in rows if r["condition_class"] in blocked_classes()] or rows)
    interesting = sorted(rows, key=lambda r: (not r["unsafe"], not r["escalated"], r["episode_id"]))[:max_drilldown]
    return _env().get_template("report.html").render(
        s=s, headline=_headline_sections(report), figs=figs, class_columns=CLASS_COLUMNS,
        unsafe=[(r, u) for r in rows for u in r["unsafe"][:5]], drill=[_drilldown(r) for r in interesting],
        more=len(rows) - len(interesting), css=CSS, ticket_tables=_ticket_tables(s), review_columns=_review_columns())


def _review_columns() -> list[tuple[str, str, str]]:
    from impasse.metrics.review import REVIEW_COLUMNS

    return REVIEW_COLUMNS


def _ticket_tables(s: dict[str, Any]) -> list[dict[str, Any]]:
    """Per (agent, interface, class) ticket statistics of each judge, for the page."""
    out = []
    for g in s["by_class"]:
        for judge, key in (("rubric", "tickets"), (f"llm:{s['judges']['llm']}", "tickets_llm")):
            t = g.get(key) or {}
            if t.get("tickets"):
                out.append({"agent": g["agent"], "interface": g["interface"], "class": g["condition_class"],
                            "judge": judge, **t})
    return out
