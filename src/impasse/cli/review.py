"""``impasse review serve``: the page a person answers escalations from (:mod:`impasse.review.page`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from impasse.cli.common import console, fail

review_app = typer.Typer(help="Review escalations: a page over the ticket store (serve).", no_args_is_help=True)


@review_app.command("serve")
def serve_cmd(
    store: Annotated[Path, typer.Option(help="The SQLite ticket store (what `impasse mcp --store` and "
                                             "`impasse run --reviewer human:FILE` write)")],
    port: Annotated[int, typer.Option(min=1, max=65535, help="HTTP port")] = 8780,
    host: Annotated[str, typer.Option(help="Bind address (default: this machine only)")] = "127.0.0.1",
    token: Annotated[str | None, typer.Option(help="Access token (or $IMPASSE_REVIEW_TOKEN): a bearer token, or "
                                                   "typed into the login form")] = None,
    budget: Annotated[int, typer.Option(min=1, help="Decisions per hour you mean to make (the load shown)")] = 20,
) -> None:
    """Serve the review queue at http://HOST:PORT/ (always behind the token)."""
    token = token or os.environ.get("IMPASSE_REVIEW_TOKEN")
    if not token:
        raise fail("the review page needs an access token: pass --token or set $IMPASSE_REVIEW_TOKEN")
    try:
        import uvicorn

        from impasse.review.page import create_app
    except ImportError as e:
        raise fail(f"the review page needs the review extra: pip install 'impasse[review]' ({e})") from e
    from impasse.tickets.store import StoreError

    if not store.exists():
        raise fail(f"--store {store}: no such file; give the store a run or `impasse mcp` writes")
    try:
        app = create_app(store, token, budget)
    except (StoreError, ValueError) as e:
        raise fail(str(e)) from e
    console.print(f"impasse review page on http://{host}:{port}/ (store {store})")
    uvicorn.run(app, host=host, port=port, log_level="warning")
