"""``impasse convert``: other harnesses' trajectories as ``impasse.trajectory/1``.

One reader module per harness (``read(path) -> list[Episode]`` and the file ``PATTERNS`` it looks
for in a directory), registered by name in :data:`READERS` as ``"module:attribute"`` (a new harness
is a new file and a line here); the tool tables are data (``formats.yaml``). The converted run's
condition is ``clean`` unless told otherwise, so its report measures false alarms.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from impasse.convert.base import ConvertError, Episode, episode_events, formats, load_task_map, task_for

READERS = {
    "mini-swe-agent": "impasse.convert.minisweagent",
    "swe-agent": "impasse.convert.sweagent",
    "openhands": "impasse.convert.openhands",
    "claude-code": "impasse.convert.claudecode",
    "inspect": "impasse.convert.inspect_log",
}


@dataclass
class Converted:
    written: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def reader(fmt: str) -> Any:
    if fmt not in READERS:
        raise ConvertError(f"unknown format {fmt!r}; known: {', '.join(READERS)}")
    return importlib.import_module(READERS[fmt])


def inputs(fmt: str, paths: list[Path]) -> list[Path]:
    """The files to read: each path as given, or the format's files inside a directory (an
    OpenHands session directory is one input)."""
    mod = reader(fmt)
    out: list[Path] = []
    for p in paths:
        if not p.exists():
            raise ConvertError(f"{p}: no such file or directory")
        if p.is_dir() and not (fmt == "openhands" and (p / "events").is_dir()):
            found = sorted({f for pat in mod.PATTERNS for f in p.rglob(pat) if f.is_file()})
            if not found:
                raise ConvertError(f"{p}: holds no {fmt} files ({', '.join(mod.PATTERNS)})")
            out += found
        else:
            out.append(p)
    return out


def episodes(fmt: str, paths: list[Path]) -> tuple[list[Episode], list[str]]:
    """Every episode the inputs hold, and one problem line per input that could not be read."""
    mod = reader(fmt)
    eps, problems = [], []
    for p in inputs(fmt, paths):
        try:
            eps += mod.read(p)
        except ConvertError as e:
            problems.append(str(e))
    return eps, problems


def convert(fmt: str, paths: list[Path], out: Path, condition: str | None = None,
            task_map: Path | None = None) -> Converted:
    """Write ``out/episodes/<id>.jsonl`` for every episode the inputs hold and ``out/manifest.json``.
    Inputs that cannot be read are listed in ``problems``; the others are still written."""
    from impasse.store.rundir import RunDir
    from impasse.store.trajectory import TrajectoryWriter

    if fmt not in formats():
        raise ConvertError(f"unknown format {fmt!r}; known: {', '.join(READERS)}")
    tasks = load_task_map(task_map)
    eps, problems = episodes(fmt, paths)
    run = RunDir(out)
    if run.exists() or (out / "episodes").exists():
        raise ConvertError(f"{out} already holds a run; choose a new --out directory (nothing is overwritten)")
    done = Converted(problems=problems)
    seen: set[str] = set()
    for ep in eps:
        while ep.episode_id in seen:
            ep.episode_id += "-2"
        seen.add(ep.episode_id)
        task = task_for(ep, tasks)
        events = episode_events(ep, fmt, condition or task.get("condition") or "clean", task)
        header, rest = events[0], events[1:]
        path = run.trajectory(ep.episode_id)
        writer = TrajectoryWriter(path, {k: v for k, v in header.items() if k not in ("type", "format")})
        for e in rest:
            writer.append(e)
        writer.close()
        done.written.append(path)
    run.write_manifest({"converted_from": {"format": fmt, "inputs": [str(p) for p in paths],
                                           "condition": condition or "clean (unless the task map says otherwise)"},
                        "episodes": [p.stem for p in done.written], "problems": problems})
    return done
