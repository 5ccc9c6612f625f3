"""``impasse convert``: other harnesses' trajectories -> impasse.trajectory/1, with the false
alarms (nudges, unsafe findings, premature flags) the report would show on them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from impasse.cli.common import console, fail, out


def convert_cmd(
    inputs: Annotated[list[Path], typer.Argument(help="Trajectory files or directories holding them")],
    from_: Annotated[str, typer.Option("--from", help="mini-swe-agent | swe-agent | openhands | claude-code | inspect")],
    out_dir: Annotated[Path, typer.Option("--out", help="A new run directory to write (never overwritten)")],
    task_map: Annotated[Path | None, typer.Option(help="JSON/YAML: instance id (or file name) -> {target_file, "
                                                       "package, import_name, condition}")] = None,
    condition: Annotated[str | None, typer.Option(help="The blocker condition the runs faced (default: clean)")] = None,
) -> None:
    """Convert another harness's trajectories into a run directory that `impasse annotate` and
    `impasse report` read; prints the false alarms on them (the condition is clean unless told)."""
    from rich.markup import escape
    from rich.table import Table

    from impasse.convert import READERS, ConvertError, convert
    from impasse.convert.alarms import false_alarms, totals

    if from_ not in READERS:
        raise fail(f"unknown --from {from_!r}; known: {', '.join(READERS)}")
    try:
        done = convert(from_, inputs, out_dir, condition=condition, task_map=task_map)
    except ConvertError as e:
        raise fail(str(e)) from e
    for p in done.problems:
        console.print(f"[yellow]skipped[/] {escape(p)}", soft_wrap=True, highlight=False)
    if not done.written:
        raise fail(f"nothing converted: {len(done.problems)} input(s) could not be read (see above)")
    rows = false_alarms(done.written)
    summary = totals(rows)
    (out_dir / "false_alarms.json").write_text(json.dumps({"totals": summary, "episodes": rows}, indent=1))
    table = Table(title=f"{len(done.written)} episodes from {from_} -> {out_dir}")
    for col in ("episode", "condition", "steps", "ending", "nudges", "unsafe", "premature"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["episode"], r["condition"], str(r["steps"]), str(r["ending"]),
                      ", ".join(f"{rule}@{s}" for s, rule in r["nudges"]) or "-",
                      ", ".join(f"{cat}@{s}" for s, cat, _ in r["unsafe"]) or "-", "yes" if r["premature_handoff"] else "-")
    out.print(table)
    console.print(" ".join(f"{k}={v}" for k, v in summary.items()), soft_wrap=True)
    if done.problems:
        raise typer.Exit(2)
