"""``impasse serve openenv``: a suite as a training environment server (OpenEnv's protocol)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from impasse.cli.common import console, fail

serve_app = typer.Typer(help="Serve a suite's episodes to trainers.", no_args_is_help=True)


@serve_app.command("openenv")
def serve_openenv(
    suite: Annotated[str, typer.Option(help="The suite whose episodes are served: blockers or ask")] = "blockers",
    host: Annotated[str, typer.Option(help="Bind address (127.0.0.1 unless you mean it)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port")] = 8000,
    token: Annotated[str | None, typer.Option(help="Bearer token every request needs (or $IMPASSE_OPENENV_TOKEN)")]
    = None,
    out: Annotated[Path, typer.Option(help="Run directory the sessions' trajectories go to")] = Path("runs/openenv"),
    seed: Annotated[int, typer.Option(help="Seed of the order a bare reset() draws episodes in")] = 0,
    interface: Annotated[str | None, typer.Option(help="blockers: baseline, tool or monitor (default tool); "
                                                       "ask: the mode")] = None,
    conditions: Annotated[str, typer.Option(help="blockers: the conditions a bare reset() draws from")] = "all",
    step_limit: Annotated[int, typer.Option(min=1, help="Tool calls per episode")] = 80,
    backend: Annotated[str, typer.Option(help="Where sandboxes live: local or docker (both fork, for groups); "
                                              "plain (no groups)")] = "local",
    shaping: Annotated[bool, typer.Option(help="Per-step reward shaping (blockers)")] = False,
    max_sessions: Annotated[int, typer.Option(min=1, help="Concurrent sessions")] = 16,
    session_timeout: Annotated[float, typer.Option(min=1, help="Seconds before an idle session is closed")] = 600.0,
) -> None:
    """Serve the suite over OpenEnv's protocol (WebSocket sessions, HTTP reset/step/state)."""
    try:
        from impasse.integrations.openenv_server import Hub, build_app
    except ImportError as e:
        raise fail(f"the OpenEnv server needs the train extra: pip install 'impasse[train]' ({e})") from e
    import uvicorn

    token = token or os.environ.get("IMPASSE_OPENENV_TOKEN")
    if host not in ("127.0.0.1", "localhost", "::1") and not token:
        raise fail(f"--host {host} exposes the sandboxes beyond this machine: give --token (or $IMPASSE_OPENENV_TOKEN)")
    from impasse.sandbox.registry import BACKENDS

    if backend not in BACKENDS.names():
        raise fail(f"--backend {backend!r}: unknown backend; known: {', '.join(BACKENDS.names())}")
    defaults: dict = {"step_limit": step_limit, "backend": backend}
    if suite == "blockers":
        defaults.update(interface=interface or "tool", shaping=shaping, conditions=conditions)
    elif interface:
        defaults["mode"] = interface
    try:
        hub = Hub(suite, out.resolve(), defaults, seed)
        app = build_app(hub, max_sessions=max_sessions, session_timeout=session_timeout, token=token)
    except (ValueError, KeyError) as e:
        raise fail(str(e).strip("'\"")) from e
    console.print(f"impasse {suite} episodes over OpenEnv at http://{host}:{port} ({len(hub.order)} in the seeded "
                  f"order; trajectories in {out})" + (f"; clients without headers: /token/{'*' * 4}" if token else ""))
    # No permessage-deflate: compressing every observation cost the server about as much CPU per
    # step as the rest of its protocol work (benchmarks/env_throughput.py, README "Training on
    # impasse"), and a trainer's sessions are CPU-bound, not bandwidth-bound.
    uvicorn.run(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=10,
                ws_per_message_deflate=False)
