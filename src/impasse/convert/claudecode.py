"""Claude Code session transcripts: one JSON object per line under ``~/.claude/projects/``.

Lines of ``type`` user / assistant carry an Anthropic ``message``: assistant content blocks of
``type: tool_use`` (``id``, ``name``, ``input``) are calls; a later user line's ``tool_result``
block (``tool_use_id``, ``content``, ``is_error``) is the result, with ``toolUseResult`` beside it
(``stdout`` / ``stderr`` for Bash). A failed Bash result's text starts ``Exit code N``. Side
chains (subagents) and meta lines are left out; ``cwd`` and ``sessionId`` go to the header.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from impasse.convert.base import Call, ConvertError, Episode, load_jsonl, safe_id

PATTERNS = ("*.jsonl",)
EXIT_CODE = re.compile(r"^\s*exit code:?\s*(\d+)\s*\n?", re.I)


def read(path: Path) -> list[Episode]:
    lines = [x for x in load_jsonl(path) if isinstance(x, dict)]
    turns = [x for x in lines if x.get("type") in ("user", "assistant") and isinstance(x.get("message"), dict)]
    if not turns:
        raise ConvertError(f"{path}: not a Claude Code transcript (no 'user' / 'assistant' lines with a 'message')")
    session = next((x.get("sessionId") for x in turns if x.get("sessionId")), path.stem)
    model = next((x["message"].get("model") for x in turns if x["message"].get("model")), "")
    cwd = next((x.get("cwd") for x in turns if x.get("cwd")), None)
    ep = Episode(path, safe_id(f"claude-code-{session}"), instance_id=str(session),
                 agent=f"claude-code/{model}" if model else "claude-code",
                 extra={k: v for k, v in {"cwd": cwd, "harness_version": turns[0].get("version")}.items() if v})
    calls: dict[str, Call] = {}
    for x in turns:
        if x.get("isSidechain") or x.get("isMeta"):
            continue
        content = x["message"].get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for b in blocks:
            _block(ep, x, b, calls)
    ep.status = "completed"
    return [ep]


def _block(ep: Episode, line: dict[str, Any], b: dict[str, Any], calls: dict[str, Call]) -> None:
    role = line["message"].get("role", line["type"])
    kind = b.get("type") if isinstance(b, dict) else "text"
    if kind == "tool_use":
        calls[b.get("id", "")] = ep.call(Call(b.get("name", ""), dict(b.get("input") or {})))
    elif kind == "tool_result":
        c = calls.get(b.get("tool_use_id", ""))
        if c is not None:
            _result(c, b, line.get("toolUseResult"))
    elif kind == "text" and (b.get("text") if isinstance(b, dict) else b):
        ep.message(role, b.get("text") if isinstance(b, dict) else b)


def _result(c: Call, b: dict[str, Any], structured: Any) -> None:
    content = b.get("content")
    text = content if isinstance(content, str) else "\n".join(
        p.get("text", "") for p in content or [] if isinstance(p, dict) and p.get("type") == "text")
    c.failed = bool(b.get("is_error"))
    if c.name == "Bash" and isinstance(structured, dict) and not c.failed:
        parts = [str(structured.get("stdout") or ""), str(structured.get("stderr") or "")]
        c.output = "\n".join(p.rstrip("\n") for p in parts if p.strip())
        c.exit_code = 0
        return
    m = EXIT_CODE.match(text) if c.failed else None
    if m:
        c.exit_code, text = int(m.group(1)), text[m.end():]
    c.output = text
    if c.name == "Bash" and c.exit_code is None:
        c.exit_code = 1 if c.failed else 0
