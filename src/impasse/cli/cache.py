"""``impasse cache``: what the cache holds, and removing what nothing uses (safe during runs)."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from impasse.cli.common import console, out

cache_app = typer.Typer(help="Inspect and prune the cache (layers, images, sdists, episodes).", no_args_is_help=True)


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f}"


@cache_app.command("list")
def cache_list(as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False) -> None:
    """Every layer, image build, sdist, episode and registered run: its size, its state (episodes:
    live while an owner holds the lease) and what keeps it."""
    from impasse import paths
    from impasse.tasks.housekeeping import entries

    rows = entries()
    if as_json:
        out.print_json(json.dumps([e.to_json() for e in rows]))
        return
    table = Table(title=f"cache {paths.cache_root()}")
    for col in ("kind", "name", "MB", "state", "kept because", "in use"):
        table.add_column(col)
    for e in rows:
        table.add_row(e.kind, e.name, "-" if e.kind == "run" else _mb(e.size), e.state or "-", e.keep or "-",
                      "yes" if e.in_use else "")
    out.print(table)
    by_kind: dict[str, int] = {}
    for e in rows:
        by_kind[e.kind] = by_kind.get(e.kind, 0) + e.size
    console.print(", ".join(f"{k}: {_mb(v)} MB" for k, v in sorted(by_kind.items()) if k != "run")
                  or "the cache is empty")
    eps = [e for e in rows if e.kind == "episode"]
    if eps:
        live = [e for e in eps if e.state == "live"]
        console.print(f"episodes: {len(live)} live (an owner holds the lease; {_mb(sum(e.size for e in live))} MB "
                      f"written), {len(eps) - len(live)} dead (their owner is gone; `impasse cache prune` removes "
                      "them)")


@cache_app.command("prune")
def cache_prune(
    dry_run: Annotated[bool, typer.Option(help="Only say what would be removed")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Remove instance layers and superseded image builds that no release, no live episode and no
    unfinished run (live, paused, interrupted, resumable) needs, and directories of dead episodes.
    Safe while runs are going."""
    from impasse.tasks.housekeeping import prune

    result = prune(dry_run=dry_run)
    if as_json:
        out.print_json(json.dumps(result))
        return
    verb = "would remove" if dry_run else "removed"
    console.print(f"{verb} {len(result['removed'])} layers; {len(result['in_use'])} in use by live episodes were "
                  f"left alone; {len(result['stale_episodes'])} dead episodes swept; kept what "
                  f"{len(result['kept_runs'])} unfinished runs need; forgot {len(result['forgotten_runs'])} runs "
                  "whose directory is gone")
    for run in result["kept_runs"]:
        out.print(f"  kept for: {run}", markup=False)
    for name in result["removed"]:
        out.print(f"  {verb}: {name}", markup=False)
