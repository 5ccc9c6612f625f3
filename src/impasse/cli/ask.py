"""``impasse ask import``: HiL-Bench task directories -> tasks ``impasse run --suite ask --task-dir`` runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from impasse.cli.common import console, fail, out

ask_app = typer.Typer(help="The ask_human suite's tasks (HiL-Bench layout).", no_args_is_help=True)


@ask_app.command("import")
def import_cmd(
    source: Annotated[Path, typer.Argument(help="A HiL-Bench task directory, a harbor_sql/harbor_swe folder, or a checkout")],
    out_dir: Annotated[Path, typer.Option("--out", help="Where the runnable tasks are written, one directory each")],
    database: Annotated[Path | None, typer.Option(help="The SQL tasks' SQLite database: a .sqlite file, or a folder "
                                                       "holding <database_name>.sqlite")] = None,
) -> None:
    """Validate HiL-Bench tasks and write the runnable ones for `impasse run --suite ask --task-dir OUT`.

    Every task is checked (errors name the file and the field). Tasks that cannot run here are listed
    with the reason and not written (SQL without its database; SWE tasks, which need their authors'
    container images)."""
    from impasse.ask.taskdir import TaskFormatError, import_hilbench, write_imported

    try:
        tasks = import_hilbench(source, database=database)
    except TaskFormatError as e:
        raise fail(str(e)) from e
    written, left = write_imported(tasks, out_dir)
    for t in left:
        console.print(f"[yellow]not runnable here[/] {t.task_id} ({t.domain}): {t.not_runnable_reason}",
                      soft_wrap=True, highlight=False)
    out.print(f"imported {len(tasks)} task(s): {len(written)} written to {out_dir}, {len(left)} not runnable here")
    if written:
        out.print(f"next: impasse run --suite ask --task-dir {out_dir}")
    elif left:
        raise typer.Exit(1)
