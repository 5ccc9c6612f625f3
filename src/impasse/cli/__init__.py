"""The ``impasse`` command. Subcommands follow the pipeline: tasks -> conditions/sandbox -> run ->
annotate -> report; ``schema`` prints the data formats. Each group lives in its own module."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from impasse.cli.ask import ask_app
from impasse.cli.cache import cache_app
from impasse.cli.common import Guarded, fail, out
from impasse.cli.conditions import conditions_app, sandbox_app
from impasse.cli.convert import convert_cmd
from impasse.cli.release import release_cmd
from impasse.cli.report import annotate_cmd, report_cmd
from impasse.cli.run import run_cmd
from impasse.cli.sweep import status_cmd
from impasse.cli.tasks import tasks_app

app = typer.Typer(help="Benchmark and runtime library for agents that must know when to stop and hand off.",
                  no_args_is_help=True, pretty_exceptions_enable=False, cls=Guarded)
tasks_app.command("release")(release_cmd)
app.add_typer(tasks_app, name="tasks")
app.add_typer(conditions_app, name="conditions")
app.add_typer(sandbox_app, name="sandbox")
app.add_typer(cache_app, name="cache")
app.add_typer(ask_app, name="ask")
app.command("run")(run_cmd)
app.command("status")(status_cmd)
app.command("annotate")(annotate_cmd)
app.command("report")(report_cmd)
app.command("convert")(convert_cmd)


def _integrations() -> None:
    """The doors to other agents and evaluators (MCP server, post-tool hook, tickets, inspect export)."""
    from impasse.cli.integrations import export_app, mcp_app, monitor_app, tickets_app

    app.add_typer(mcp_app, name="mcp")
    app.add_typer(monitor_app, name="monitor")
    app.add_typer(tickets_app, name="tickets")
    app.add_typer(export_app, name="export")


_integrations()


def _serve() -> None:
    from impasse.cli.serve import serve_app

    app.add_typer(serve_app, name="serve")


_serve()


def _review() -> None:
    from impasse.cli.review import review_app

    app.add_typer(review_app, name="review")


_review()


def _handoff() -> None:
    from impasse.handoff.cli import handoff_cmd

    app.command("handoff")(handoff_cmd)


_handoff()

SCHEMAS = ("trajectory", "task")


@app.command("schema")
def schema_cmd(name: Annotated[str, typer.Argument(help=f"One of: {', '.join(SCHEMAS)}")]) -> None:
    """Print the JSON Schema of a data format (trajectory lines, task instances)."""
    if name == "trajectory":
        from impasse.store.events import json_schema

        schema = json_schema()
    elif name == "task":
        from impasse.tasks.schema import TaskInstance

        schema = TaskInstance.model_json_schema()
    else:
        raise fail(f"unknown schema {name!r}; known: trajectory, task")
    out.print_json(json.dumps(schema))


def main() -> None:  # pragma: no cover - console script shim
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
