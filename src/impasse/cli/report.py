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
    run_dir: Path,
    compare: Annotated[Path | None, typer.Option(help="A second run to compare against (paired by task/condition)")] = None,
    html: Annotated[Path | None, typer.Option(help="Write a self-contained HTML page here")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the impasse.report/1 JSON here ('-' = stdout)")] = None,
    judge_model: Annotated[str | None, typer.Option(help="Also score tickets with this LLM (OpenAI-compatible)")] = None,
    judge_base_url: Annotated[str | None, typer.Option(help="Base URL for --judge-model; key from $IMPASSE_API_KEY")] = None,
) -> None:
    """Annotate, aggregate the paper's metrics, compare interfaces with paired statistics."""
    from impasse.ask.report import report_ask, run_suite
    from impasse.report.report import annotate_run, build, print_terminal, render_html

    if run_dir.is_dir() and run_suite(run_dir) == "ask":  # dispatch on the trajectory header's suite
        try:
            return report_ask(run_dir, html, json_out, console, out)
        except ValueError as e:
            raise fail(str(e)) from e
    try:
        rows, problems = annotate_run(run_dir, write=True)
        other = annotate_run(compare, write=True)[0] if compare else None
    except (FileNotFoundError, ValueError) as e:
        raise fail(str(e)) from e
    for p in problems:
        console.print(f"[yellow]skipped[/] {p}")
    if not rows:
        raise fail(f"{run_dir}: no finished episodes to report on")
    if judge_model:
        _llm_judge_rows(rows, judge_model, judge_base_url)
    report = build(rows, other, [str(run_dir)] + ([str(compare)] if compare else []))
    if json_out is not None:
        text = json.dumps(report, indent=1)
        if str(json_out) == "-":
            sys.stdout.write(text + "\n")
            return
        json_out.write_text(text)
        console.print(f"JSON report: {json_out}")
    print_terminal(report, out)
    if html is not None:
        html.write_text(render_html(report))
        console.print(f"HTML report: {html}")


def _llm_judge_rows(rows: list[dict], model: str, base_url: str | None) -> None:
    """Adds ticket_scores_llm / ticket_sufficient_llm to escalated episodes."""
    from impasse.agent.models import ModelConfig, OpenAIModel
    from impasse.store.trajectory import read_trajectory
    from impasse.tickets.judge import llm_judge, sufficient
    from impasse.tickets.ticket import Ticket

    client = OpenAIModel(ModelConfig(model=model, base_url=base_url))
    for row in rows:
        if not row["escalated"]:
            continue
        ticket = Ticket.from_arguments(read_trajectory(Path(row["trajectory"])).endings[0].get("ticket"))
        scores = llm_judge(ticket, client)
        row["ticket_scores_llm"], row["ticket_sufficient_llm"] = scores, sufficient(scores)


