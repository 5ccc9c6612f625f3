"""CLI for the integrations, as typer sub-apps the main ``impasse`` command mounts:

- ``mcp_app``     -> ``impasse mcp``              (the MCP server; extra ``impasse[mcp]``)
- ``monitor_app`` -> ``impasse monitor hook|replay``
- ``tickets_app`` -> ``impasse tickets list|show|answer|decide``
- ``export_app``  -> ``impasse export inspect``    (extra ``impasse[inspect]``)

Heavy imports stay inside the commands so ``impasse --help`` stays fast.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from impasse.cli.common import Guarded, console, fail, out

STORE_HELP = "SQLite file with escalations and questions (default $IMPASSE_TICKETS or ./impasse-tickets.sqlite)"
StoreOpt = Annotated[Path | None, typer.Option("--store", help=STORE_HELP)]


def store_path(given: Path | None) -> Path:
    return given or Path(os.environ.get("IMPASSE_TICKETS") or "impasse-tickets.sqlite")


def _open_store(given: Path | None, must_exist: bool = True):
    from impasse.tickets.store import StoreError, TicketStore

    path = store_path(given)
    if must_exist and not path.exists():
        raise fail(f"no ticket store at {path}; pass --store FILE (the one `impasse mcp --store` writes)")
    try:
        return TicketStore(path)
    except StoreError as e:
        raise fail(str(e)) from e


# ------------------------------------------------------------------------------------------ mcp
mcp_app = typer.Typer(help="Serve escalate_to_human / ask_human to any MCP client.", invoke_without_command=True)


@mcp_app.callback()
def mcp_cmd(
    transport: Annotated[str, typer.Option(help="stdio (spawned by the agent) or http (streamable HTTP)")] = "stdio",
    store: StoreOpt = None,
    workspace: Annotated[Path | None, typer.Option(help="git repo the agent works in: tickets' saved-changes "
                                                       "claims are checked against its diff vs HEAD")] = None,
    registry: Annotated[Path | None, typer.Option(help="blocker_registry.json: answer ask_human from it")] = None,
    matcher: Annotated[str, typer.Option(help="how questions are matched to registered blockers")] = "overlap",
    answer_timeout: Annotated[float, typer.Option(min=0, help="seconds ask_human waits for a person")] = 30.0,
    host: Annotated[str, typer.Option(help="HTTP bind address")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="HTTP port")] = 8765,
    token: Annotated[str | None, typer.Option(help="bearer token HTTP clients must send (or $IMPASSE_MCP_TOKEN)")]
    = None,
    env: Annotated[str | None, typer.Option("--env", help="serve one benchmark episode's tools instead: "
                                                          "SUITE:key=value,... (e.g. blockers:task=ID,condition="
                                                          "read_only_source,interface=monitor) or @FILE")] = None,
) -> None:
    """Run the MCP server (stdio, or streamable HTTP at http://HOST:PORT/mcp with a bearer token):
    the handoff tools for any agent, or with --env one benchmark episode (every call one Env step)."""
    try:
        import anyio

        from impasse.integrations import mcp_server as ms
    except ImportError as e:
        raise fail(f"the MCP server needs the mcp extra: pip install 'impasse[mcp]' ({e})") from e
    from impasse.integrations.matcher import MATCHERS, load_registry

    if transport not in ("stdio", "http"):
        raise fail(f"--transport must be stdio or http, not {transport!r}")
    if matcher not in MATCHERS:
        raise fail(f"unknown --matcher {matcher!r}; available: {', '.join(MATCHERS)}")
    if workspace is not None and not (workspace / ".git").is_dir():
        raise fail(f"--workspace {workspace} is not a git repository; point it at the repository the agent edits")
    token = token or os.environ.get("IMPASSE_MCP_TOKEN")
    if transport == "http" and not token:
        raise fail("the HTTP transport needs a bearer token: pass --token or set $IMPASSE_MCP_TOKEN")
    if env is not None:
        service = _episode_service(env)
    else:
        try:
            reg = load_registry(registry) if registry else None
        except ValueError as e:
            raise fail(str(e)) from e
        service = ms.HandoffService(_open_store(store, must_exist=False), workspace=workspace.resolve() if workspace
                                    else None, registry=reg, matcher=MATCHERS[matcher](), answer_timeout=answer_timeout)
    try:
        if transport == "stdio":
            anyio.run(ms.serve_stdio, service)
        else:
            console.print(f"impasse MCP server on http://{host}:{port}/mcp"
                          + (f" (episode {service.env.episode_id})" if env else f" (store {store_path(store)})"))
            anyio.run(ms.serve_http, service, token, host, port)
    finally:
        if env is not None:
            service.close()


def _episode_service(spec: str):
    """The Env the spec names, reset (its sandbox open, its trajectory started or resumed)."""
    import impasse.env
    from impasse.integrations.mcp_env import EpisodeService, parse_env_spec
    from impasse.sandbox.base import SandboxError

    try:
        suite, fields = parse_env_spec(spec)
        return EpisodeService(impasse.env.make(suite, **{"agent": "mcp/client", "agent_kind": "external", **fields}))
    except (ValueError, OSError, SandboxError) as e:
        raise fail(str(e)) from e


# ------------------------------------------------------------------------------------------ tickets
tickets_app = typer.Typer(help="Escalations and questions filed through `impasse mcp` (or a run's human reviewer).",
                          no_args_is_help=True)


def _ratings(r) -> str:
    if r.kind != "escalation":
        return ""
    return " ".join(f"{d[:8]}={v}" for d, v in (r.ratings or {}).items())


@tickets_app.command("list")
def tickets_list(store: StoreOpt = None, kind: Annotated[str | None, typer.Option(help="escalation|question")] = None,
                 as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Every record, oldest first, with the judge's ratings."""
    records = _open_store(store).list(kind)
    if as_json:
        print(json.dumps([r.to_json() for r in records], indent=1))
        return
    table = Table("id", "kind", "session", "status", "sufficient", "ratings / answer", "summary")
    for r in records:
        summary = (r.payload.get("blocker", {}).get("error_feedback", "") if r.kind == "escalation"
                   else r.payload.get("question", ""))
        verdict = "" if r.sufficient is None else ("yes" if r.sufficient else "no")
        detail = _ratings(r) if r.kind == "escalation" else (r.answer or "")
        table.add_row(str(r.id), r.kind, r.session[:20], r.status, verdict, escape(detail[:60]), escape(summary[:60]))
    out.print(table)


@tickets_app.command("show")
def tickets_show(record_id: int, store: StoreOpt = None,
                 as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """One record in full: the ticket as a person reads it, ratings and contradictions."""
    from impasse.tickets.store import StoreError
    from impasse.tickets.ticket import Ticket

    try:
        r = _open_store(store).get(record_id)
    except StoreError as e:
        raise fail(str(e)) from e
    if as_json:
        print(json.dumps(r.to_json(), indent=1))
        return
    print(f"#{r.id} {r.kind} ({r.status}) session {r.session}")
    if r.kind == "escalation":
        print(Ticket.from_arguments(r.payload).render())
        print("RATINGS  " + _ratings(r) + f"  sufficient={'yes' if r.sufficient else 'no'}")
        for issue in r.issues:
            print(f"CONTRADICTION  {issue}")
    else:
        print(f"QUESTION  {r.payload.get('question')}")
        print(f"ANSWER    {r.answer if r.answer is not None else '(none yet)'}"
              + (f"  [{r.answered_by}]" if r.answered_by else ""))


@tickets_app.command("answer")
def tickets_answer(record_id: int, text: str, store: StoreOpt = None) -> None:
    """Answer a queued ask_human question (the agent gets it from its waiting call or check_answer)."""
    from impasse.tickets.store import StoreError

    try:
        r = _open_store(store).answer(record_id, text)
    except StoreError as e:
        raise fail(str(e)) from e
    console.print(f"answered question {r.id}")


@tickets_app.command("decide")
def tickets_decide(record_id: int, decision: Annotated[str, typer.Argument(help="accept or reject")],
                   message: Annotated[str, typer.Argument(help="your answer (accept) or why (reject)")] = "",
                   store: StoreOpt = None) -> None:
    """Accept or reject a queued escalation (the agent reads it through check_answer); the same
    action as the review page's."""
    from impasse.tickets.store import StoreError

    verb = {"accept": "accepted", "reject": "rejected"}.get(decision)
    if verb is None:
        raise fail(f"decision {decision!r}: use accept or reject")
    if verb == "rejected" and not message.strip():
        raise fail("a rejection needs a message: the agent reads it through check_answer")
    try:
        r = _open_store(store).decide(record_id, verb, message.strip())
    except StoreError as e:
        raise fail(str(e)) from e
    console.print(f"escalation {r.id} {r.status}")


# ------------------------------------------------------------------------------------------ monitor
monitor_app = typer.Typer(help="The evidence monitor outside impasse's own loop.", no_args_is_help=True)


@monitor_app.command("hook", context_settings={"allow_extra_args": False})
def monitor_hook(
    agent: Annotated[str, typer.Option(help="payload format (see integrations/hook_agents.yaml)")] = "claude-code",
    state_dir: Annotated[Path | None, typer.Option(help="per-session monitor state (default $IMPASSE_HOOK_STATE "
                                                        "or ~/.cache/impasse/hook-sessions)")] = None,
) -> None:
    """Read ONE tool event as JSON on stdin; print the monitor's nudge in the agent's hook format, or nothing.
    On a core install (no typer) run `python -m impasse.integrations.hook` instead."""
    from impasse.integrations import hook

    raise typer.Exit(hook.run(sys.stdin.read(), agent, state_dir or hook.state_dir(), sys.stdout))


@monitor_app.command("replay")
def monitor_replay(trajectory: Path, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """What the monitor would say at each step of a recorded run (beside what was recorded)."""
    from impasse.integrations.replay import replay
    from impasse.store.trajectory import TrajectoryError

    if not trajectory.is_file():
        raise fail(f"no trajectory file {trajectory}; give RUN/episodes/<episode>.jsonl")
    try:
        rows = replay(trajectory)
    except TrajectoryError as e:
        raise fail(str(e)) from e
    if as_json:
        print(json.dumps(rows, indent=1))
        return
    table = Table("step", "tool", "call", "monitor now", "recorded")
    for row in rows:
        now = f"{row['rule']} ({row['advice']})" if row["rule"] else ""
        table.add_row(str(row["step"]), row["tool"], escape(row["call"][:70]), now, row["recorded"] or "")
    out.print(table)
    for row in rows:
        if row["text"]:
            out.print(f"\n[bold]step {row['step']}[/]\n{escape(row['text'])}", highlight=False)


# ------------------------------------------------------------------------------------------ export
export_app = typer.Typer(help="Write runs in other tools' formats.", no_args_is_help=True)


@export_app.command("inspect")
def export_inspect(
    run_dir: Path,
    output: Annotated[Path | None, typer.Option("--out", help="log directory (default RUN/inspect)")] = None,
) -> None:
    """One inspect_ai eval log per (agent, interface), one sample per episode, annotations as scores.
    Open with `inspect view --log-dir OUT`."""
    try:
        from impasse.integrations.inspect_export import export_run
    except ImportError as e:
        raise fail(f"exporting needs the inspect extra: pip install 'impasse[inspect]' ({e})") from e
    if not (run_dir / "episodes").is_dir():
        raise fail(f"{run_dir} has no episodes/ directory; give a run directory made by `impasse run`")
    try:
        paths, problems = export_run(run_dir, output or run_dir / "inspect")
    except ValueError as e:
        raise fail(str(e)) from e
    for problem in problems:
        console.print(f"[yellow]skipped[/] {escape(problem)}")
    for p in paths:
        print(p)


# The same commands under one app, for running them before (or without) the main CLI's wiring:
# `python -m impasse.integrations.cli mcp --transport http ...`.
app = typer.Typer(help="impasse integrations: MCP server, monitor hook, ticket store, inspect export.",
                  no_args_is_help=True, pretty_exceptions_enable=False, cls=Guarded)
app.add_typer(mcp_app, name="mcp")
app.add_typer(monitor_app, name="monitor")
app.add_typer(tickets_app, name="tickets")
app.add_typer(export_app, name="export")

if __name__ == "__main__":
    app()
