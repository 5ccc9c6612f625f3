"""OpenHands event streams, as ``event_to_dict`` serialises them.

An event is ``{"id", "timestamp", "source", "message", "action" | "observation", "args" |
("content", "extras"), "cause", "tool_call_metadata", ...}``. Actions the agent takes (``run``,
``run_ipython``, ``read``, ``write``, ``edit`` with ``args.command`` = view / create /
str_replace / insert / undo_edit, ``finish``) become calls; the observation whose ``cause`` is
the action's id is its result (``extras.metadata.exit_code`` for commands; an ``error``
observation marks a failure). Accepted: a JSON list of events, an evaluation output line with
``history`` (and ``instance_id`` / ``instance``), a JSONL of either, or a session directory whose
``events/`` holds one ``<id>.json`` per event.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from impasse.convert.base import (
    Call,
    ConvertError,
    Episode,
    load_json,
    load_jsonl,
    safe_id,
    target_from_patch,
)

PATTERNS = ("*.json", "*.jsonl")
_SKIP_ACTIONS = {"message", "system", "think", "recall", "condensation", "change_agent_state", "null", "reject"}


def read(path: Path) -> list[Episode]:
    if path.is_dir():
        files = sorted((path / "events").glob("*.json") if (path / "events").is_dir() else path.glob("*.json"),
                       key=lambda p: int(p.stem) if p.stem.isdigit() else 0)
        if not files:
            raise ConvertError(f"{path}: no event files (expected events/<id>.json)")
        return [_episode(path, path.name, [load_json(f) for f in files], {})]
    if path.suffix == ".jsonl":
        rows = load_jsonl(path)
        if rows and all(isinstance(r, dict) and "history" in r for r in rows):
            return [_episode(path, str(r.get("instance_id") or f"{path.stem}-{k}"), r["history"], r)
                    for k, r in enumerate(rows)]
        return [_episode(path, path.stem, rows, {})]
    data = load_json(path)
    if isinstance(data, dict) and isinstance(data.get("history"), list):
        return [_episode(path, str(data.get("instance_id") or path.stem), data["history"], data)]
    if isinstance(data, list):
        return [_episode(path, path.stem, data, {})]
    raise ConvertError(f"{path}: not an OpenHands event stream (expected a list of events or an object with "
                       "'history')")


def _episode(path: Path, name: str, events: list[Any], row: dict[str, Any]) -> Episode:
    if not all(isinstance(e, dict) and ("action" in e or "observation" in e) for e in events):
        raise ConvertError(f"{path}: an OpenHands event must be an object with 'action' or 'observation'")
    instance = row.get("instance") or {}
    ep = Episode(path, safe_id(f"openhands-{name}"), instance_id=str(row.get("instance_id") or name),
                 agent=f"openhands/{(row.get('metadata') or {}).get('llm_config', {}).get('model', '')}".rstrip("/"),
                 target=target_from_patch(instance.get("patch")))
    calls: dict[Any, Call] = {}
    last: Call | None = None
    for e in events:
        if "action" in e:
            last = _action(ep, e, calls) or last
        else:
            _observation(ep, e, calls, last)
    return ep


def _action(ep: Episode, e: dict[str, Any], calls: dict[Any, Call]) -> Call | None:
    kind, args = e["action"], e.get("args") or {}
    if kind in _SKIP_ACTIONS or e.get("source") != "agent":
        if kind in ("message", "system"):
            role = {"agent": "assistant", "user": "user"}.get(e.get("source", ""), "system")
            ep.message(role if kind == "message" else "system", args.get("content") or e.get("message") or "")
        return None
    if args.get("thought"):
        ep.message("assistant", args["thought"])
    name = kind
    if kind == "edit" and args.get("command"):
        name = f"edit {args['command']}"
    if kind == "finish":
        ep.status, ep.summary = "finish", args.get("final_thought") or args.get("thought") or ""
    c = ep.call(Call(name, dict(args)))
    calls[e.get("id")] = c
    return c


def _observation(ep: Episode, e: dict[str, Any], calls: dict[Any, Call], last: Call | None) -> None:
    kind = e["observation"]
    if kind == "agent_state_changed":
        state = (e.get("extras") or {}).get("agent_state")
        if state == "error" and ep.status != "finish":
            ep.status = "error"
        return
    c = calls.get(e.get("cause"), last if kind != "null" else None)
    if c is None:
        return
    c.output = str(e.get("content") or "")
    meta = (e.get("extras") or {}).get("metadata") or {}
    code = meta.get("exit_code")
    c.exit_code = code if isinstance(code, int) and code >= 0 else None
    c.failed = kind == "error"
    if "maximum iteration" in c.output.lower():
        ep.status = "step_limit"
