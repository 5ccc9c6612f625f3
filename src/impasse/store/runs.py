"""The cache's register of run directories, and what state each run is in.

A run directory can be anywhere (``runs/…``, ``--out DIR``), but what it needs to go on (its
pinned task image builds and instance layers) lives in the cache, so ``impasse cache prune``
must know it. Every process that runs or resumes a run registers its directory here
(``<cache>/runs/<id>.json``, written once); prune keeps what every run that is not provably
finished needs, and forgets a registration only once its directory is gone.

States, decided from the directory alone (no pid is trusted; the run lock decides liveness):

- ``live``: a process holds ``RUN/.lock`` (it is running or resuming the run);
- ``paused``: the last session stopped on a ceiling or an endpoint outage (a summary row says
  ``paused``); ``--resume`` goes on;
- ``interrupted``: killed or stopped before its summary was written (or since the last one);
- ``resumable``: ended, with harness errors or planned episodes left (``--resume`` reruns them);
- ``finished``: every planned episode has a trajectory and a final summary row;
- ``gone``: no manifest there any more.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from impasse import locks, paths
from impasse.store.rundir import RunDir

KEEPING = ("live", "paused", "interrupted", "resumable")
"""The states whose needs ``cache prune`` keeps."""


def register_dir() -> Path:
    return paths.cache_root() / "runs"


def register(run_dir: Path) -> None:
    """Record ``run_dir`` in this cache's register (idempotent; atomic, never rewritten)."""
    where = run_dir.resolve()
    entry = register_dir() / f"{hashlib.sha256(str(where).encode()).hexdigest()[:16]}.json"
    if entry.exists():
        return
    register_dir().mkdir(parents=True, exist_ok=True)
    tmp = entry.with_name(f".{entry.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps({"path": str(where)}) + "\n")
    os.replace(tmp, entry)


def registered() -> list[tuple[Path, Path]]:
    """(register entry, run directory) for every registered run."""
    out = []
    for entry in sorted(register_dir().glob("*.json")) if register_dir().is_dir() else []:
        try:
            out.append((entry, Path(json.loads(entry.read_text())["path"])))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a torn or foreign file: never a reason to fail a listing
    return out


@dataclass(frozen=True)
class RunState:
    path: Path
    state: str
    detail: str
    config: dict[str, Any]


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def classify(planned: list[str], have: set[str], summary: dict[str, str] | None, summary_fresh: bool) -> tuple[str, str]:
    """A run's state when nobody holds its lock (pure): ``planned`` episode ids, those with a
    trajectory, the summary's final ending per episode (None: no summary)."""
    if summary is None or not summary_fresh:
        return "interrupted", "no summary since its last session started" if summary is not None else "no summary"
    paused = [e for e in planned if summary.get(e) == "paused"]
    if paused:
        return "paused", f"{len(paused)} of {len(planned)} episodes paused"
    left = [e for e in planned if e not in have or summary.get(e) in (None, "harness_error")]
    if left:
        return "resumable", f"{len(left)} of {len(planned)} episodes not finished"
    return "finished", f"{len(planned)} episodes"


def state_of(run_dir: Path) -> RunState:
    rd = RunDir(run_dir)
    manifest = rd.manifest
    live = bool(locks.held([rd.lock]))  # first: a run just started has no manifest yet
    try:
        doc = json.loads(manifest.read_text())
    except FileNotFoundError:
        doc = None
    except (OSError, ValueError):
        doc = {}
    config = (doc or {}).get("config") or {}
    if live:
        owner = rd.lock.read_text(errors="replace").strip()
        return RunState(run_dir, "live", f"held by {owner}" if owner else "its owner holds the lock", config)
    if doc is None:
        return RunState(run_dir, "gone", "no run there any more (no manifest)", {})
    if not doc:
        return RunState(run_dir, "interrupted", "unreadable manifest: kept to be safe", {})
    planned = [e.get("episode_id", "") for e in doc.get("episodes", [])]
    have = {p.stem for p in rd.episodes.glob("*.jsonl")} if rd.episodes.is_dir() else set()
    summary_file = rd.summary
    summary = None
    if summary_file.is_file():
        try:
            summary = {r["episode_id"]: r.get("final_ending") for r in json.loads(summary_file.read_text())}
        except (OSError, ValueError, KeyError, TypeError):
            summary = None
    newest = max([_mtime(manifest), *(_mtime(rd.trajectory(e)) for e in have)])
    state, detail = classify(planned, have, summary, _mtime(summary_file) >= newest)
    return RunState(run_dir, state, detail, config)
