"""``impasse conditions`` (the blocker cards) and ``impasse sandbox`` (look inside an episode)."""

from __future__ import annotations

import json
import shlex
import sys
from typing import Annotated

import typer
from rich.table import Table

from impasse.cli.common import console, fail, find_instance, out

conditions_app = typer.Typer(help="The twelve blocker conditions (+ clean) and their cards.", no_args_is_help=True)
sandbox_app = typer.Typer(help="Look inside an episode sandbox with your own eyes.", no_args_is_help=True)


@conditions_app.command("list")
def conditions_list(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """List conditions with their class and summary."""
    from impasse.conditions.cards import load_cards

    cards = load_cards()
    if as_json:
        out.print_json(json.dumps([{"name": c.name, "class": c.cls, "summary": c.summary, "requires": c.requires}
                                   for c in cards.values()]))
        return
    table = Table(title="conditions")
    for col in ("name", "class", "summary"):
        table.add_column(col)
    for c in cards.values():
        table.add_row(c.name, c.cls, c.summary + (f" [only tasks with {c.requires}]" if c.requires else ""))
    out.print(table)


@conditions_app.command("show")
def conditions_show(name: str) -> None:
    """Print a blocker card (YAML)."""
    import yaml

    from impasse.conditions.cards import card

    try:
        c = card(name)
    except KeyError as e:
        raise fail(str(e).strip("'\"")) from e
    out.print(yaml.safe_dump(c.model_dump(by_alias=True), sort_keys=False, width=110), markup=False)


def _episode(instance_id: str, condition: str, backend: str = "local"):
    from impasse.conditions.cards import card
    from impasse.sandbox.base import SandboxError
    from impasse.sandbox.registry import get_backend
    from impasse.tasks.episode import NotApplicable, open_episode

    inst = find_instance(instance_id)
    try:
        card(condition)
        return open_episode(get_backend(backend), inst, condition)
    except (KeyError, NotApplicable, SandboxError, FileNotFoundError) as e:
        raise fail(str(e).strip("'\"")) from e


def calls_of(argv: list[str]) -> list[str]:
    """The agent calls a command line names: ``;;`` as its own argument separates calls; a call
    given as one argument is a shell string (as the agent's bash tool gets it, and it may hold
    ``;;`` separators itself), one given as several arguments is an argv, quoted as such."""
    chunks: list[list[str]] = [[]]
    for arg in argv:
        if arg == ";;":
            chunks.append([])
        else:
            chunks[-1].append(arg)
    out: list[str] = []
    for chunk in chunks:
        if len(chunk) == 1:
            out += [c.strip() for c in chunk[0].split(";;") if c.strip()]
        elif chunk:
            out.append(shlex.join(chunk))
    return out


def exit_status(code: int) -> int:
    """A command's status as a process exit code: killed by signal N -> 128 + N, as a shell says."""
    return 128 - code if code < 0 else min(code, 255)


@sandbox_app.command("exec", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def sandbox_exec(
    instance_id: str,
    command: Annotated[list[str], typer.Argument(help="Command (after --), run by bash as the agent")],
    condition: Annotated[str, typer.Option(help="Condition to inject")] = "clean",
    restore_after: Annotated[int | None, typer.Option(min=0, help="Restore the environment after K commands")] = None,
    timeout: Annotated[float, typer.Option(min=0.1, help="Seconds")] = 60.0,
    backend: Annotated[str, typer.Option(help="Where the sandbox lives: local, plain, docker")] = "local",
) -> None:
    """Run CMD in a fresh episode exactly as the agent's bash tool would; exit with its exit code
    (a command killed by a signal exits 128 + the signal, as in a shell).

    Several commands separated by a ';;' argument run in the same episode, one call each."""
    calls = calls_of(command)
    if not calls:
        raise fail("no command given: impasse sandbox exec ID -- CMD [;; CMD ...]")
    code = 0
    with _episode(instance_id, condition, backend) as sb:
        for k, cmd in enumerate(calls, 1):
            res = sb.exec(cmd, timeout=timeout)
            sys.stdout.write(res.stdout)
            sys.stderr.write(res.stderr)
            sys.stdout.flush()
            code = res.exit_code
            if restore_after is not None and k == restore_after:
                sb.restore()
                console.print(f"[dim]-- restored {condition} after {k} command(s) --[/]")
    raise typer.Exit(exit_status(code))


@sandbox_app.command("shell")
def sandbox_shell(instance_id: str, condition: Annotated[str, typer.Option()] = "clean",
                  backend: Annotated[str, typer.Option(help="Where the sandbox lives")] = "local") -> None:
    """An interactive prompt: each line runs as one agent tool call. 'restore' clears the fault."""
    with _episode(instance_id, condition, backend) as sb:
        console.print(f"episode {sb.id}: {condition} on {instance_id}. Lines run as the agent; "
                      "'restore' clears the fault, 'exit' ends.")
        while True:
            try:
                line = input("agent$ ")
            except EOFError:
                break
            if line.strip() in ("exit", "quit"):
                break
            if line.strip() == "restore":
                sb.restore()
                continue
            res = sb.exec(line, timeout=120)
            sys.stdout.write(res.output + ("" if res.output.endswith("\n") or not res.output else "\n"))
            console.print(f"[dim][exit {res.exit_code}][/]")


