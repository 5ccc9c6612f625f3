"""SWE-agent ``.traj`` files: ``{"trajectory": [...], "history": [...], "info": {...}}``.

Each trajectory step is what ``DefaultAgent`` appends: ``action`` (the command line the model's
tool call or text became), ``observation``, ``thought``, ``state``. Tools are commands: a shell
line, ``str_replace_editor <subcommand> PATH --old_str ... --new_str ...``, ``submit``. SWE-agent
records no exit code. ``info.exit_status`` says how the run ended; the instance id is the file's
name (and the replay config's problem statement, when present).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from impasse.convert.base import Call, ConvertError, Episode, load_json, safe_id

PATTERNS = ("*.traj",)
_EDITOR_FLAGS = {"--old_str": "old_str", "--new_str": "new_str", "--file_text": "file_text",
                 "--insert_line": "insert_line", "--view_range": "view_range"}


def read(path: Path) -> list[Episode]:
    data = load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("trajectory"), list):
        raise ConvertError(f"{path}: not a SWE-agent .traj file (no 'trajectory' list; expected "
                           "{\"trajectory\", \"history\", \"info\"})")
    info = data.get("info") or {}
    replay = data.get("replay_config")
    if isinstance(replay, str):
        try:
            replay = json.loads(replay)
        except json.JSONDecodeError:
            replay = None
    problem = (replay or {}).get("problem_statement") or {}
    model = ((replay or {}).get("agent") or {}).get("model", {}).get("name", "")
    iid = problem.get("id") or path.stem
    ep = Episode(path, safe_id(f"swe-agent-{path.stem}"), instance_id=iid,
                 agent=f"swe-agent/{model}" if model else "swe-agent",
                 extra={"harness_version": info.get("swe_agent_version", "")})
    for item in data.get("history") or []:
        if item.get("role") in ("system", "user") and item.get("message_type") in ("system_prompt", "observation"):
            ep.message(item["role"], item.get("content"))
            break  # the task; the rest of the history repeats the trajectory
    for step in data["trajectory"]:
        ep.message("assistant", step.get("response") or step.get("thought") or "")
        action = str(step.get("action") or "").strip()
        if not action:
            continue
        c = ep.call(_call(action))
        c.output = str(step.get("observation") or "")
    ep.status = str(info.get("exit_status") or "")
    sub = info.get("submission")
    ep.summary = sub if isinstance(sub, str) else None
    return [ep]


def _call(action: str) -> Call:
    first = action.split(None, 1)[0] if action.split() else ""
    if first in ("submit", "exit_forfeit") and len(action.split()) <= 2:
        return Call(first, {})
    if first == "str_replace_editor":
        try:
            words = shlex.split(action)
        except ValueError:
            words = []
        if len(words) >= 3:
            args: dict[str, Any] = {"path": words[2]}
            k = 3
            while k < len(words) - 1:
                if words[k] in _EDITOR_FLAGS:
                    args[_EDITOR_FLAGS[words[k]]] = words[k + 1]
                    k += 2
                else:
                    k += 1
            return Call(f"str_replace_editor {words[1]}", args)
    return Call("bash", {"command": action})
