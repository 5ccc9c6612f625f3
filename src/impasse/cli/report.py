"""``impasse annotate`` and ``impasse report``: metrics, paired statistics, HTML and JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from impasse.cli.common import console, fail, out


def annotate_cmd(run_dir: Path) -> None:
    """Annotate every trajectory of a run: writes <episode>.annotation.json beside each one."""
    from impasse.report.report import annotate_run

    try:
        rows, problems = annotate_run(run_dir, write=True)
    except (FileNotFoundError, ValueError) as e:
        raise fail(str(e)) from e
    for p in problems:
        console.print(f"[yellow]skipped[/] {p}")
    if not rows:
        raise fail(f"{run_dir}: annotated nothing ({len(problems)} trajectories skipped, see above)")
    console.print(f"annotated {len(rows)} trajectories in {run_dir}")


def report_cmd(
    run_dirs: Annotated[list[Path], typer.Argument(help="One run, or several (e.g. one per model) pooled into one "
                                                        "report with per-model and pooled rows")],
    compare: Annotated[Path | None, typer.Option(help="A second run to compare against (paired by task/condition)")] = None,
    html: Annotated[Path | None, typer.Option(help="Write a self-contained HTML page here")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the report's JSON here ('-' = stdout)")] = None,
    judge_model: Annotated[str | None, typer.Option(help="Also score tickets with this LLM (OpenAI-compatible)")] = None,
    judge_base_url: Annotated[str | None, typer.Option(help="Base URL for --judge-model; key from $IMPASSE_API_KEY")] = None,
    prices: Annotated[Path | None, typer.Option(help="--judge-model: a price table (YAML) pricing the judge, needed "
                                                     "when a run has a cost ceiling (its calls are booked there)")] = None,
    review_curve: Annotated[Path | None, typer.Option(help="A directory `impasse review curve` wrote: its load curve "
                                                           "and flooding table join the JSON and the HTML page")] = None,
) -> None:
    """Annotate, aggregate the suite's metrics (the paper's tables and paired statistics for the
    blockers suite, HiL-Bench's for the ask suite), as terminal tables, JSON and HTML."""
    from impasse.env.registry import SUITES

    for flag, path in (("--json", json_out), ("--html", html)):
        if path is not None and str(path) != "-" and (path.is_dir() or not path.parent.is_dir()):
            raise fail(f"{flag} {path}: " + ("is a directory; give a file name" if path.is_dir() else
                                            f"its directory {path.parent} does not exist"))
    curve = _review_curve(review_curve) if review_curve is not None else None
    rows, other, skipped = _annotated(run_dirs, compare)
    suites = sorted({r["suite"] for r in rows})
    if len(suites) > 1:
        raise fail(f"{', '.join(map(str, run_dirs))} mix suites ({', '.join(suites)}); report each suite's runs apart")
    suite = SUITES.get(suites[0])
    paused = _judge(rows, judge_model, judge_base_url, prices) if judge_model else None
    try:
        report = suite.report(rows, [str(r) for r in run_dirs] + ([str(compare)] if compare else []), compare=other,
                              judge_model=judge_model, judge_base_url=judge_base_url)
    except ValueError as e:
        raise fail(str(e)) from e
    report["usage"] = usage_of(run_dirs)
    report["skipped"] = skipped  # trajectories left out, each with the file, line and reason
    if curve is not None:
        report["review_curve"] = curve[0]
    if json_out is not None:
        text = json.dumps(report, indent=1)
        if str(json_out) == "-":
            sys.stdout.write(text + "\n")
            return
        json_out.write_text(text)
        console.print(f"JSON report: {json_out}")
    suite.show(report, out)
    show_usage(report["usage"])
    if html is not None:
        page = with_usage(suite.html(report), report["usage"])
        if curve is not None:
            from impasse.review.page import render_curve_section

            page = page.replace("</body>", render_curve_section(*curve) + "</body>", 1)
        html.write_text(page)
        console.print(f"HTML report: {html}")
    if paused:
        raise typer.Exit(3)


def _judge(rows: list[dict], model: str, base_url: str | None, prices: Path | None) -> str | None:
    """The LLM ticket judge before the report: the endpoint checked with one request, verdicts
    from each run's cache, new calls metered under the runs' ceilings. A dead endpoint is a clear
    error; a reached ceiling leaves the rest unjudged, said aloud (and the command exits 3)."""
    from impasse.agent.endings import EndpointError
    from impasse.agent.models import ModelConfig, OpenAIModel, preflight
    from impasse.prices import PriceError, load_prices
    from impasse.run.judge import check_prices, judge_metered

    try:
        extra = load_prices(prices).to_json() if prices else {}
        check_prices(rows, model, extra)
    except (PriceError, ValueError) as e:
        raise fail(str(e)) from e
    config = ModelConfig(model=model, base_url=base_url)
    try:
        preflight(config, needs_tools=False)
        outcome = judge_metered(rows, OpenAIModel(config), model, extra)
    except EndpointError as e:
        raise fail(f"the ticket judge (--judge-model {model}): {e}. No report was written; the verdicts received "
                   "so far are cached in each run's judge-cache.jsonl, so a new report does not ask for them again.") from e
    console.print(f"ticket judge {model}: {outcome.judged} judged, {outcome.cached} from the cache"
                  + (f"; [bold yellow]{outcome.unreadable} replies held no verdict[/] (not cached, those tickets "
                     "left out of the judge's agreement: check --judge-model and the endpoint)"
                     if outcome.unreadable else ""), soft_wrap=True)
    if outcome.paused:
        console.print(f"[bold yellow]ticket judging stopped:[/] {outcome.paused}; {len(outcome.unjudged)} ticket(s) "
                      "not judged (left out of the judge's agreement). Raise the run's ceiling (`impasse run --resume "
                      "RUN --max-cost ...`) or report again later.", soft_wrap=True)
    return outcome.paused


def usage_of(run_dirs: list[Path]) -> list[dict]:
    """The runs' per-model usage from their ledgers (a sweep's shared one: only their own rows)."""
    from impasse.report.usage import usage_table
    from impasse.run.budget import Ledger

    rows, seen = [], set()
    for rd in run_dirs:
        try:
            cfg = json.loads((rd / "manifest.json").read_text()).get("config", {})
        except (OSError, json.JSONDecodeError):
            cfg = {}
        path = Path(cfg["ledger"]) if cfg.get("ledger") else rd / "usage.jsonl"
        if (path, rd.name) in seen or not path.exists():
            continue
        seen.add((path, rd.name))
        rows += [r for r in Ledger(path).rows() if not cfg.get("ledger") or r.get("run") == rd.name]
    return usage_table(rows)


def show_usage(table: list[dict]) -> None:
    from rich.table import Table

    from impasse.report.usage import COLUMNS, cell

    if not table:
        return
    t = Table(title="per-model usage (from the spend ledger)")
    for _k, title in COLUMNS:
        t.add_column(title, no_wrap=True)
    for r in table:
        t.add_row(*(cell(k, r[k]) for k, _t in COLUMNS))
    out.print(t)


def with_usage(page: str, table: list[dict]) -> str:
    from impasse.report.usage import usage_html

    if not table:
        return page
    section = usage_html(table)
    return page.replace("</body>", section + "</body>", 1) if "</body>" in page else page + section


def _review_curve(directory: Path) -> tuple[dict, str]:
    """(curve.json, curve.png as base64) of an `impasse review curve` directory."""
    import base64

    try:
        doc = json.loads((directory / "curve.json").read_text())
        png = base64.b64encode((directory / "curve.png").read_bytes()).decode()
    except (OSError, ValueError) as e:
        raise fail(f"--review-curve {directory}: not a directory `impasse review curve --out` wrote ({e})") from e
    if doc.get("format") != "impasse.review-curve/1":
        raise fail(f"--review-curve {directory}: curve.json is not an impasse.review-curve/1 document")
    return doc, png


def _annotated(run_dirs: list[Path], compare: Path | None) -> tuple[list[dict], list[dict] | None, list[str]]:
    from impasse.report.merged import tag_rows
    from impasse.report.report import annotate_run

    try:
        rows, problems = [], []
        for rd in run_dirs:
            got, bad = annotate_run(rd, write=True)
            rows += tag_rows(rd, got) if len(run_dirs) > 1 else got
            problems += bad
        other = annotate_run(compare, write=True)[0] if compare else None
    except (FileNotFoundError, ValueError) as e:
        raise fail(str(e)) from e
    for p in problems:
        console.print(f"[yellow]skipped[/] {p}")
    if not rows:
        raise fail(f"{', '.join(map(str, run_dirs))}: no finished episodes to report on")
    return rows, other, [str(p) for p in problems]
