"""What every command shares: the consoles, clear failures, a progress bar."""

from __future__ import annotations

import os
import sqlite3
import sys
import tarfile

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from typer.core import TyperGroup

console = Console(stderr=True)
out = Console(width=None if sys.stdout.isatty() else 160)  # tables stay readable when piped


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print ``message`` (what was wrong and what to do) and return the exit to raise."""
    from rich.markup import escape

    console.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True, highlight=False)
    return typer.Exit(code)


BAD_INPUT = (ValueError, OSError, KeyError, tarfile.TarError, sqlite3.DatabaseError)
"""What a command may meet in what it was given (every impasse input error is a ValueError that
names the file and the field; an unreadable path is an OSError that names it)."""


class Guarded(TyperGroup):
    """The root command group: an input error that a command did not turn into a message itself
    still ends as one (exit 2), never as a traceback. ``IMPASSE_DEBUG=1`` shows the traceback."""

    def invoke(self, ctx: typer.Context):
        try:
            return super().invoke(ctx)
        except BAD_INPUT as e:
            if os.environ.get("IMPASSE_DEBUG"):
                raise
            raise fail(_described(e)) from e


def _described(e: BaseException) -> str:
    """An input error as one line: an OSError as ``path: reason`` (its str() quotes the path and
    carries an errno prefix), a KeyError without its quotes, the rest as they say themselves."""
    if isinstance(e, OSError) and e.strerror:
        where = f"{e.filename}: " if e.filename is not None else ""
        return f"{where}{e.strerror} ({type(e).__name__})"
    what = str(e).strip("'\"") or type(e).__name__
    return f"{what} ({type(e).__name__})" if isinstance(e, OSError | KeyError) else what


def progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TextColumn("{task.fields[status]}"), console=console, transient=False)


def find_instance(instance_id: str):
    """A built instance by id or unique prefix, or a clear failure."""
    from impasse.tasks.build import all_instances
    from impasse.tasks.lookup import find_instance as lookup

    try:
        return lookup(instance_id, all_instances())
    except ValueError as e:
        raise fail(str(e)) from e
