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
    rows, other = _annotated(run_dirs, compare)
    suites = sorted({r["suite"] for r in rows})
    if len(suites) > 1:
        raise fail(f"{', '.join(map(str, run_dirs))} mix suites ({', '.join(suites)}); report each suite's runs apart")
    suite = SUITES.get(suites[0])
    try:
        report = suite.report(rows, [str(r) for r in run_dirs] + ([str(compare)] if compare else []), compare=other,
                              judge_model=judge_model, judge_base_url=judge_base_url)
    except ValueError as e:
        raise fail(str(e)) from e
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
    if html is not None:
        page = suite.html(report)
        if curve is not None:
            from impasse.review.page import render_curve_section

            page = page.replace("</body>", render_curve_section(*curve) + "</body>", 1)
        html.write_text(page)
        console.print(f"HTML report: {html}")


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
