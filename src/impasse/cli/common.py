"""What every command shares: the consoles, clear failures, a progress bar."""

from __future__ import annotations

import sys

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

console = Console(stderr=True)
out = Console(width=None if sys.stdout.isatty() else 160)  # tables stay readable when piped


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print ``message`` (what was wrong and what to do) and return the exit to raise."""
    from rich.markup import escape

    console.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True, highlight=False)
    return typer.Exit(code)


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
