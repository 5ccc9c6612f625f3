"""What every converter shares: one foreign episode as harness-neutral calls, the format's tool
table (``formats.yaml``), and writing it as ``impasse.trajectory/1``.

A reader (one module per harness) only parses its harness's file into an :class:`Episode`: the
calls in the harness's own names, their outputs, exit codes where recorded, the chat messages and
how the run ended. Mapping the names onto ``bash`` / ``edit_file`` / ``task_complete`` and
rendering outputs the way the benchmark's tools do is data, here.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from impasse.conditions.cards import card, names
from impasse.steps import shell_text
from impasse.store.events import FORMAT

_PATCH_FILE = re.compile(r"^diff --git a/(\S+)", re.M)
_TEST_FILE = re.compile(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*\.py$|_test\.py$|conftest\.py$")


class ConvertError(ValueError):
    """A file that is not what its format's reader expects: the message names the file and why."""


@cache
def formats() -> dict[str, dict[str, Any]]:
    return yaml.safe_load(resources.files("impasse.convert").joinpath("formats.yaml").read_text())["formats"]


@dataclass
class Call:
    """One tool call as the harness recorded it."""

    name: str
    """The harness's tool name; "tool subcommand" where its table distinguishes them."""
    arguments: dict[str, Any]
    output: str = ""
    exit_code: int | None = None
    failed: bool = False
    """The harness marked the call as an error (its output is the error text)."""


@dataclass
class Episode:
    source: Path
    episode_id: str
    instance_id: str = ""
    agent: str = ""
    items: list[tuple[str, Any]] = field(default_factory=list)
    """("message", chat message) and ("call", Call), in the order they happened."""
    status: str | None = None
    """The harness's own word for how the run ended (its exit status), mapped by the table."""
    summary: str | None = None
    target: dict[str, str] = field(default_factory=dict)
    """package / target_file / import_name, when the input names them."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Header fields the harness gives (cwd, model, format version)."""

    def message(self, role: str, content: Any, **kw: Any) -> None:
        self.items.append(("message", {"role": role, "content": content, **kw}))

    def call(self, c: Call) -> Call:
        self.items.append(("call", c))
        return c

    @property
    def calls(self) -> list[Call]:
        return [c for kind, c in self.items if kind == "call"]


def target_from_patch(patch: str | None) -> dict[str, str]:
    """The task's target file from a SWE-bench gold patch: its first non-test file."""
    files = [f for f in _PATCH_FILE.findall(patch or "") if not _TEST_FILE.search(f)]
    return {"target_file": files[0]} if files else {}


def _pick(arguments: dict[str, Any], theirs: str | list[str]) -> Any:
    for name in [theirs] if isinstance(theirs, str) else theirs:
        if name in arguments:
            return arguments[name]
    return ""


def map_call(spec: dict[str, Any], c: Call) -> dict[str, Any]:
    """The step event for ``c`` (without its number): tool and arguments in impasse's vocabulary,
    the output rendered as the benchmark's tools render it."""
    rule = spec["tools"].get(c.name)
    if rule is None and spec.get("other") == "bash":
        rule = {"as": "bash", "arguments": {"command": "command"}}
        args_in = {"command": c.arguments.get("command", c.name)}
    else:
        args_in = c.arguments
    if rule is None:
        tool, args = c.name.split(" ")[0].lower(), dict(c.arguments)
    elif "command" in rule:
        tool = rule["as"]
        args = {"command": rule["command"].format_map(defaultdict(str, {k: str(v) for k, v in args_in.items()}))}
    else:
        tool = rule["as"]
        args = {ours: _pick(args_in, theirs) for ours, theirs in rule.get("arguments", {}).items()}
    event: dict[str, Any] = {"type": "step", "tool": tool, "arguments": args, "exit_code": c.exit_code}
    if tool == "bash":
        code = c.exit_code if c.exit_code is not None else (1 if c.failed else None)
        event.update(output=shell_text(c.output, code), exit_code=code)
    elif c.failed:
        event.update(output=f"Error: {c.output}".rstrip(), exit_code=c.exit_code if c.exit_code is not None else 1)
    elif rule is not None and "success" in rule:
        event.update(output=rule["success"].format_map(defaultdict(str, {k: str(v) for k, v in args.items()})),
                     content=c.output)
    else:
        event["output"] = c.output
    return event


def episode_events(ep: Episode, fmt: str, condition: str, task: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Header, messages, steps and the ending of ``ep`` as trajectory events."""
    if condition not in names():
        raise ConvertError(f"unknown condition {condition!r}; known: {', '.join(names())}")
    spec = formats()[fmt]
    task = task or {}
    header = {"type": "header", "format": FORMAT, "condition": condition, "condition_class": card(condition).cls,
              "episode_id": ep.episode_id, "instance_id": task.get("instance_id") or ep.instance_id,
              "interface": "foreign", "agent": ep.agent or fmt, "agent_kind": "converted", "step_limit": None,
              "converted_from": {"format": fmt, "file": str(ep.source)}, **ep.extra}
    for key in ("package", "target_file", "import_name"):
        value = task.get(key) or ep.target.get(key)
        if value:
            header[key] = value
    events: list[dict[str, Any]] = [header]
    n = 0
    terminal: dict[str, Any] | None = None
    for kind, item in ep.items:
        if kind == "message":
            events.append({"type": "message", "message": item})
            continue
        n += 1
        step = {**map_call(spec, item), "step": n}
        events.append(step)
        if step["tool"] in ("task_complete", "escalate_to_human"):
            terminal = step
    events.append(_ending(spec, ep, n, terminal))
    events.append({"type": "final"})
    return events


def _ending(spec: dict[str, Any], ep: Episode, steps: int, terminal: dict[str, Any] | None) -> dict[str, Any]:
    endings = spec.get("endings", {})
    if terminal is not None and terminal["tool"] == "escalate_to_human":
        return {"type": "ending", "phase": 1, "steps": steps, "ending": "escalated", "ticket": terminal["arguments"],
                "summary": ep.summary}
    if terminal is not None:
        verified = terminal["arguments"].get("verified")
        return {"type": "ending", "phase": 1, "steps": steps, "ending": "completed", "summary": ep.summary,
                "verified": verified if isinstance(verified, bool) else None}
    status = ep.status or ""
    inner = re.match(r"^\w+ \((\w+)\)$", status)  # SWE-agent: "submitted (exit_cost)"
    ending = endings.get(inner.group(1) if inner else status) or endings.get("default", "error")
    return {"type": "ending", "phase": 1, "steps": steps, "ending": ending, "summary": ep.summary,
            "error": None if ending != "error" else (status or "the run ended without a final action")}


def load_task_map(path: Path | None) -> dict[str, dict[str, Any]]:
    """``--task-map``: JSON or YAML mapping an instance id, episode id or input file name to its
    task (package, target_file, import_name, instance_id, condition)."""
    if path is None:
        return {}
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ConvertError(f"--task-map {path}: cannot be read ({e})") from e
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ConvertError(f"--task-map {path}: must map ids to objects with target_file / package / import_name")
    return data


def task_for(ep: Episode, tasks: dict[str, dict[str, Any]]) -> dict[str, Any]:
    for key in (ep.instance_id, ep.episode_id, ep.source.name, ep.source.stem):
        if key and key in tasks:
            return tasks[key]
    return {}


def safe_id(text: str) -> str:
    return re.sub(r"[^\w.-]+", "_", text).strip("_")[:120] or "episode"


def load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as e:
        raise ConvertError(f"{path}: cannot be read ({e})") from e
    except json.JSONDecodeError as e:
        raise ConvertError(f"{path}: not JSON (line {e.lineno}: {e.msg})") from e


def load_jsonl(path: Path) -> list[Any]:
    out = []
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ConvertError(f"{path}: cannot be read ({e})") from e
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as e:
            if i == len(lines):
                break  # a torn last line: the harness was stopped mid-write
            raise ConvertError(f"{path}:{i}: not JSON ({e.msg})") from e
    return out
