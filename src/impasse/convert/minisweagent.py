"""mini-swe-agent trajectories (``*.traj.json``): ``{"info", "messages", "trajectory_format"}``.

Read as its own ``DefaultAgent.serialize`` writes them (v2, ``mini-swe-agent-1.1``, and v1):
assistant messages carry the parsed actions in ``extra.actions`` (tool calls in v2, a fenced
bash block in text mode and v1); each observation (a ``tool`` message with ``tool_call_id``, or a
``user`` message) carries ``extra.raw_output`` and ``extra.returncode``, or renders them as
``<returncode>N</returncode><output>...</output>``. A final ``exit`` message holds the exit
status and the submission; the action that submitted has no observation of its own (the
environment raised ``Submitted`` on its output), so it becomes ``task_complete``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from impasse.convert.base import Call, ConvertError, Episode, formats, load_json, safe_id

PATTERNS = ("*.traj.json",)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_OUTPUT = re.compile(r"<output>\n?(.*?)</output>", re.S)
_TEXT_ACTION = re.compile(r"```(?:mswea_bash_command|bash)\s*\n(.*?)\n```", re.S)


def read(path: Path) -> list[Episode]:
    data = load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise ConvertError(f"{path}: not a mini-swe-agent trajectory (no 'messages' list; "
                           f"expected {{\"info\", \"messages\", \"trajectory_format\"}})")
    info = data.get("info") or {}
    model = ((info.get("config") or {}).get("model") or {}).get("model_name", "")
    stem = path.name.removesuffix(".traj.json").removesuffix(".json")
    ep = Episode(path, safe_id(f"mini-swe-agent-{stem}"), instance_id=info.get("instance_id") or stem,
                 agent=f"mini-swe-agent/{model}" if model else "mini-swe-agent",
                 extra={"harness_format": data.get("trajectory_format", ""), "harness_version": info.get("mini_version", "")})
    pending: list[Call] = []
    by_id: dict[str, Call] = {}
    marker = formats()["mini-swe-agent"]["submit_marker"]
    for m in data["messages"]:
        role, extra = m.get("role"), m.get("extra") or {}
        if role == "assistant":
            ep.message("assistant", m.get("content"), **({"tool_calls": m["tool_calls"]} if m.get("tool_calls") else {}))
            pending = [ep.call(c) for c in _actions(m)]
            by_id.update({c.arguments.get("_id", ""): c for c in pending})
        elif role == "tool" and m.get("tool_call_id") in by_id:
            _observe(by_id.pop(m["tool_call_id"]), m, extra)
        elif role == "user" and pending and ("returncode" in extra or _RETURNCODE.search(str(m.get("content")))):
            _observe(pending.pop(0), m, extra)
        elif role == "exit":
            ep.status, ep.summary = extra.get("exit_status") or str(m.get("content") or ""), extra.get("submission")
        elif role in ("system", "user"):
            ep.message(role, m.get("content"))
    for c in ep.calls:
        c.arguments.pop("_id", None)
        if marker in str(c.arguments.get("command", "")):
            c.name, c.arguments = "submit", {"summary": ep.summary or ""}
    if info.get("exit_status") and not ep.status:
        ep.status = info["exit_status"]
    return [ep]


def _actions(m: dict[str, Any]) -> list[Call]:
    actions = (m.get("extra") or {}).get("actions")
    if actions is None:  # v1 text mode: the action is the fenced block in the content
        actions = [{"command": a} for a in _TEXT_ACTION.findall(str(m.get("content") or ""))]
    calls = []
    for k, a in enumerate(actions):
        tool_id = a.get("tool_call_id") or ((m.get("tool_calls") or [{}])[k] if k < len(m.get("tool_calls") or []) else {}).get("id", "")
        calls.append(Call("bash", {"command": a.get("command", ""), "_id": tool_id or ""}))
    return calls


def _observe(c: Call, m: dict[str, Any], extra: dict[str, Any]) -> None:
    content = m.get("content")
    text = content if isinstance(content, str) else json.dumps(content)
    if "raw_output" in extra:
        c.output = str(extra.get("raw_output") or "")
    else:
        found = _OUTPUT.search(text)
        c.output = found.group(1) if found else text
    code = extra.get("returncode")
    if code is None:
        found = _RETURNCODE.search(text)
        code = int(found.group(1)) if found else None
    c.exit_code = None if code is None or code < 0 else int(code)
    info = extra.get("exception_info")
    if info:
        c.output = f"{c.output}\n{info}".strip()
        c.failed = True
