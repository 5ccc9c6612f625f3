"""``impasse ask import``: HiL-Bench task directories -> tasks ``impasse run --suite ask --task-dir`` runs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from impasse.cli.common import console, fail, out

ask_app = typer.Typer(help="The ask_human suite's tasks (HiL-Bench layout).", no_args_is_help=True)

LABELS = {"not_runnable": "not runnable here", "refused": "refused", "invalid": "invalid"}


@ask_app.command("import")
def import_cmd(
    source: Annotated[Path, typer.Argument(help="A HiL-Bench task directory, a harbor_sql/harbor_swe folder, or a "
                                                "checkout of the release")],
    out_dir: Annotated[Path, typer.Option("--out", help="Where the runnable tasks are written, one directory each")],
    database: Annotated[Path | None, typer.Option(help="The SQL tasks' SQLite database: a .sqlite file, or a folder "
                                                       "holding <database_name>.sqlite, <dataset_name>/database.sqlite "
                                                       "or <hf_task_id>/<database_name>.sqlite (default: each task's "
                                                       "own shared/data/database.sqlite)")] = None,
) -> None:
    """Validate HiL-Bench tasks and write the runnable ones for `impasse run --suite ask --task-dir OUT`.

    Every task is checked on its own (errors name the file and the field); a bad one is reported and
    the batch goes on. A SQL task is written only with a database that holds every table and column
    its ground truth and blockers use and reproduces its golden output. SWE tasks are validated and
    listed: they need their authors' container images. Exit 1 when nothing could be written."""
    from impasse.ask.importer import import_hilbench, write_imported
    from impasse.ask.taskdir import TaskFormatError

    try:
        results = write_imported(import_hilbench(source, database=database), out_dir)
    except TaskFormatError as e:
        raise fail(str(e)) from e
    for r in results:
        if r.status == "written":
            for note in r.notes:
                console.print(f"[yellow]note[/] {r.task_id}: {note}", soft_wrap=True, highlight=False)
            continue
        domain = f" ({r.task.domain})" if r.task else ""
        colour = "red" if r.status == "invalid" else "yellow"
        console.print(f"[{colour}]{LABELS[r.status]}[/] {r.task_id}{domain}: {r.reason}", soft_wrap=True,
                      highlight=False)
    n = Counter(r.status for r in results)
    valid = sum(r.valid for r in results)
    out.print(f"validated {valid}/{len(results)} task(s): {n['written']} written to {out_dir}, "
              f"{n['not_runnable']} not runnable here, {n['refused']} refused (wrong database), "
              f"{n['invalid']} invalid", soft_wrap=True, highlight=False)
    if n["written"]:
        out.print(f"next: impasse run --suite ask --task-dir {out_dir}", soft_wrap=True, highlight=False)
    else:
        raise typer.Exit(1)
