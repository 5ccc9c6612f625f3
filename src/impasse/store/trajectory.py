"""Trajectories on disk: one JSONL file per episode, one event per line, fsync'd per event.

Format ``impasse.trajectory/1`` (documented in the README). The first line is a header; every
later line is an event with a ``type``:

- ``message``: a chat message (system, user, assistant with ``tool_calls``), with ``usage``;
- ``step``: one tool call's result; ``message`` is the ``role: tool`` message the model saw, and
  ``step`` / ``tool`` / ``arguments`` / ``exit_code`` / ``duration_s`` describe it;
- ``nudge``: a monitor reminder (``message`` is the user message appended after the step);
- ``restore``: the environment was restored after an accepted escalation;
- ``ending``: how a phase ended (``completed`` / ``escalated`` / ``step_limit`` / ``error``);
- ``grade``: FAIL_TO_PASS / PASS_TO_PASS result of the agent's patch in a clean copy;
- ``final``: the episode is complete (written last; resume skips episodes that have it);
- ``harness_error``: the harness failed (e.g. the workspace vanished); the attempt is not graded
  and ``--resume`` moves it to ``RUN/attempts/`` and runs the episode again.

The model's message history is exactly the ``message`` fields in order.
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from impasse.layout import workspace_of
from impasse.steps import Step
from impasse.store.events import EVENTS, FORMAT


class TrajectoryError(ValueError):
    pass


class TrajectoryWriter:
    """Append-only, durable: each event is on disk before the next tool call runs."""

    def __init__(self, path: Path, header: dict[str, Any] | None = None) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        try:  # one writer per episode, ever: a resumed run cannot interleave with a live one
            fcntl.flock(self._fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            self._fh.close()
            raise TrajectoryError(f"{path} is being written by another process") from e
        rewrite_without_torn_tail(path)  # only now, holding the lock: a reader never cuts a live file
        fresh = path.stat().st_size == 0
        if fresh:
            if header is None:
                raise TrajectoryError(f"{path}: a new trajectory needs a header")
            self.append({"type": "header", "format": FORMAT, **header})

    def append(self, event: dict[str, Any]) -> None:
        self._fh.write(json.dumps(event, ensure_ascii=False) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def extend(self, events: list[dict[str, Any]]) -> None:
        """Several events durable at once (one fsync): a fork's copy of its parent's history."""
        self._fh.write("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events))
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()


@dataclass
class Trajectory:
    path: Path | None
    header: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [e["message"] for e in self.events if "message" in e]

    @property
    def steps(self) -> list[Step]:
        where = workspace_of(self.header)
        return [Step(e["step"], e.get("tool", ""), e.get("arguments") or {}, e.get("output", ""), e.get("exit_code"),
                     where) for e in self.events if e["type"] == "step"]

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]

    @property
    def endings(self) -> list[dict[str, Any]]:
        return self.of_type("ending")

    @property
    def grade(self) -> dict[str, Any] | None:
        grades = self.of_type("grade")
        return grades[-1] if grades else None

    @property
    def complete(self) -> bool:
        return bool(self.events) and self.events[-1]["type"] == "final"

    @property
    def failed(self) -> bool:
        """The attempt ended in a harness error (not the agent's doing; it is run again)."""
        return bool(self.events) and self.events[-1]["type"] == "harness_error"


def read_trajectory(path: Path) -> Trajectory:
    """Read and validate a trajectory (see :mod:`impasse.store.events`). A torn last line (the
    harness was killed mid-write) is dropped; anything else malformed is an error naming the
    file, the line and the field."""
    lines = path.read_bytes().splitlines()
    events, numbers = [], []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            events.append(orjson.loads(line))  # reports parse 20k trajectories: the JSON parser matters
        except orjson.JSONDecodeError as e:
            if i == len(lines):
                break
            raise TrajectoryError(f"{path}:{i}: not valid JSON ({e.msg})") from e
        numbers.append(i)
    if not events or not isinstance(events[0], dict) or events[0].get("type") != "header":
        raise TrajectoryError(f"{path}:1: the first line must be the header ({{\"type\": \"header\", "
                              f"\"format\": \"{FORMAT}\", \"condition\": ...}})")
    for e, i in zip(events, numbers, strict=True):
        _validate(e, path, i)
    _one_episode(events, numbers, path)
    return Trajectory(path, events[0], events[1:])


def _one_episode(events: list[dict[str, Any]], numbers: list[int], path: Path) -> None:
    """One file, one episode: a header only on line 1 and nothing after ``final`` (a second run
    appended to a finished trajectory would otherwise be read as part of it)."""
    final = False
    for e, i in zip(events[1:], numbers[1:], strict=True):
        if e["type"] == "header":
            raise TrajectoryError(f"{path}:{i}: a second header: a trajectory file holds one episode (another run "
                                  "wrote into this file; move its lines to a file of their own)")
        if final:
            raise TrajectoryError(f"{path}:{i}: an event after the episode's final event: a trajectory file holds "
                                  "one episode, and nothing is recorded after 'final'")
        final = e["type"] == "final"


def _validate(event: object, path: Path, line: int) -> None:
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise TrajectoryError(f"{path}:{line}: an event must be a JSON object with a 'type'")
    kind = event["type"]
    if kind == "message":  # chat messages are the model's business: only their shape is checked
        if not isinstance(event.get("message"), dict):
            raise TrajectoryError(f"{path}:{line}: message event: field 'message' must be an object")
        return
    model = EVENTS.get(kind)
    if model is None:
        return  # a newer or converter-specific event: kept, not interpreted
    try:
        model.model_validate(event)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(map(str, first["loc"])) or "(event)"
        raise TrajectoryError(f"{path}:{line}: {kind} event: field {where!r}: {first['msg']}") from None


def rewrite_without_torn_tail(path: Path) -> None:
    """Drop a partially written last line so appends continue on a clean line boundary. Only the
    trajectory's writer may call it, holding the file's lock (a reader just ignores a torn line)."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        with open(path, "r+b") as fh:
            fh.truncate(cut)
