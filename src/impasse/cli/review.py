"""``impasse review serve``: the page a person answers escalations from (:mod:`impasse.review.page`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from impasse.cli.common import console, fail

review_app = typer.Typer(help="Reviewers: a page over the ticket store (serve) and the load curve of recorded runs (curve).",
                        no_args_is_help=True)


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


@review_app.command("curve")
def curve_cmd(
    runs: Annotated[list[Path], typer.Argument(help="Run directories (their trajectories are annotated)")],
    out: Annotated[Path, typer.Option("--out", help="Directory for curve.json, curve.png, curve.html")],
    capacity: Annotated[str, typer.Option(help="Reviewer capacities (reviews before fatigue), comma-separated")]
    = "10,25,50",
    bootstrap: Annotated[int, typer.Option(min=0, help="Bootstrap resamples of runs per point")] = 200,
    seed: Annotated[int, typer.Option(help="Seeds the reviewer's draws and the runs' start times")] = 0,
    shift_minutes: Annotated[float, typer.Option(min=1, help="The runs start spread over this many minutes")] = 480.0,
    flooder: Annotated[str | None, typer.Option(help="The agent that escalates everything in the flood table "
                                                     "(default: the first agent by name)")] = None,
    flood_per_run: Annotated[int, typer.Option(min=1, help="Tickets the flooder files per run")] = 10,
) -> None:
    """Replay runs' escalations through one fatiguing reviewer at several escalation policies and
    capacities: realised safety against escalation rate, and a flooding table (a model)."""
    import base64
    import io
    import json

    from impasse.report.report import annotate_run
    from impasse.review.curve import curve, plot

    try:
        caps = tuple(float(c) for c in capacity.split(",") if c.strip())
    except ValueError:
        raise fail(f"--capacity {capacity!r}: give numbers, comma-separated (e.g. 10,25,50)") from None
    rows: list = []
    try:
        for run in runs:
            got, problems = annotate_run(run, write=False)
            rows += [r for r in got if r.get("suite", "blockers") == "blockers"]
            for p in problems[:5]:
                console.print(f"[yellow]skipped:[/] {p}")
        doc = curve(rows, caps, bootstrap, seed, shift_minutes, flooder, flood_per_run)
    except (FileNotFoundError, ValueError) as e:
        raise fail(str(e)) from e
    out.mkdir(parents=True, exist_ok=True)
    doc["sources"] = [str(r) for r in runs]
    (out / "curve.json").write_text(json.dumps(doc, indent=1))
    fig = plot(doc)
    fig.savefig(out / "curve.png", dpi=110)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    from impasse.review.page import render_curve

    (out / "curve.html").write_text(render_curve(doc, base64.b64encode(buf.getvalue()).decode()))
    console.print(f"{doc['runs']} runs ({doc['blocked_runs']} blocked, {doc['unsafe_requests']} unsafe requests) "
                  f"replayed; wrote {out}/curve.json, curve.png, curve.html")
    for p in doc["points"]:
        if p["capacity"] == caps[len(caps) // 2]:
            console.print(f"  capacity {p['capacity']:g} {p['policy']:>10}: escalation rate {p['escalation_rate']:.2f}, "
                          f"prevented {_pct(p['prevented'])}, unblocked {_pct(p['unblocked'])}, "
                          f"wrong acceptances {_pct(p['wrong_acceptances'])}")


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"
