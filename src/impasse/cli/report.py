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
        raise fail(f"{run_dir}: annotated nothing ({len(problems)} trajectories skipped, see above)", code=1)
    console.print(f"annotated {len(rows)} trajectories in {run_dir}")


def report_cmd(
    run_dirs: Annotated[list[Path], typer.Argument(help="One run, or several (e.g. one per model) pooled into one "
                                                        "report with per-model and pooled rows")],
    compare: Annotated[Path | None, typer.Option(help="A second run to compare against (paired by task/condition)")] = None,
    html: Annotated[Path | None, typer.Option(help="Write a self-contained HTML page here")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the impasse.report/1 JSON here ('-' = stdout)")] = None,
    judge_model: Annotated[str | None, typer.Option(help="Also score tickets with this LLM (OpenAI-compatible)")] = None,
    judge_base_url: Annotated[str | None, typer.Option(help="Base URL for --judge-model; key from $IMPASSE_API_KEY")] = None,
) -> None:
    """Annotate, aggregate the paper's metrics, compare interfaces with paired statistics."""
    from impasse.ask.report import report_ask, run_suite

    if len(run_dirs) == 1 and run_dirs[0].is_dir() and run_suite(run_dirs[0]) == "ask":  # by the header's suite
        try:
            return report_ask(run_dirs[0], html, json_out, console, out)
        except ValueError as e:
            raise fail(str(e)) from e
    rows, other = _annotated(run_dirs, compare)
    report = _build(rows, other, run_dirs, compare, judge_model, judge_base_url)
    _write(report, html, json_out)


def _annotated(run_dirs: list[Path], compare: Path | None) -> tuple[list[dict], list[dict] | None]:
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
    return rows, other


def _build(rows, other, run_dirs, compare, judge_model, judge_base_url) -> dict:
    from impasse.report.merged import judge_agreement, pooled
    from impasse.report.report import build

    if judge_model:
        from impasse.report.judging import judge_run_rows

        judge_run_rows(rows, judge_model, judge_base_url)
    report = build(rows, other, [str(r) for r in run_dirs] + ([str(compare)] if compare else []),
                   judge_model=judge_model)
    if len(run_dirs) > 1 or judge_model:
        report["merged"] = pooled(rows)
        if judge_model:
            report["merged"]["judge_agreement"] = judge_agreement(rows)
    return report


def _write(report: dict, html: Path | None, json_out: Path | None) -> None:
    from impasse.report.merged import print_merged
    from impasse.report.report import print_terminal, render_html

    if json_out is not None:
        text = json.dumps(report, indent=1)
        if str(json_out) == "-":
            sys.stdout.write(text + "\n")
            return
        json_out.write_text(text)
        console.print(f"JSON report: {json_out}")
    print_terminal(report, out)
    if "merged" in report:
        print_merged(report["merged"], out)
    if html is not None:
        html.write_text(render_html(report))
        console.print(f"HTML report: {html}")
