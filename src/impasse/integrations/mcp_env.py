"""``impasse mcp --env SPEC``: one benchmark episode served to any MCP client.

The episode's own tools (bash, edit_file, task_complete, escalate_to_human; ask_human where the
suite has it) become MCP tools with the Env's schemas; every call is one ``env.step``, so the
episode is recorded, annotated and graded exactly as a run's would be. A tool's result is the
observation the model would see, then each message the Env adds after it (the monitor's nudge,
a notice), each its own text block; ``structured_content`` carries the step, exit code, ending,
reward and nudges. What the agent is told first (system prompt and task) is the server's
``instructions``. SPEC is ``SUITE:key=value,...`` (values as JSON where they parse) or
``@FILE`` (JSON or YAML with ``suite`` and the Env's fields); give ``episode_id=`` to resume an
episode a previous server left unfinished.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import types

from impasse.integrations.mcp_server import ToolArgumentError


def parse_env_spec(text: str) -> tuple[str, dict[str, Any]]:
    """``blockers:task=ID,condition=read_only_source`` or ``@spec.yaml`` -> (suite, fields)."""
    if text.startswith("@"):
        import yaml

        path = Path(text[1:])
        try:
            data = yaml.safe_load(path.read_text())
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
            raise ValueError(f"--env {text}: cannot read it ({e})") from None
        if not isinstance(data, dict) or "suite" not in data:
            raise ValueError(f"--env {text}: expected a mapping with 'suite' and the Env's fields")
        fields = dict(data)
        return str(fields.pop("suite")), fields
    suite, sep, rest = text.partition(":")
    if not sep or not suite:
        raise ValueError(f"--env {text!r}: expected SUITE:key=value,... (e.g. blockers:task=ID,condition=clean) "
                         "or @FILE")
    fields: dict[str, Any] = {}
    for item in (p for p in rest.split(",") if p.strip()):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"--env: {item!r} is not key=value")
        try:
            fields[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            fields[key.strip()] = value
    return suite, fields


def mcp_tools(schemas: list[dict[str, Any]]) -> list[types.Tool]:
    return [types.Tool(name=s["function"]["name"], description=s["function"].get("description", ""),
                       input_schema=s["function"]["parameters"]) for s in schemas]


@dataclass
class EpisodeService:
    """One Env, stepped by MCP tool calls one at a time."""

    env: Any
    tools: list[types.Tool] = field(init=False)
    instructions: str = field(init=False)

    def __post_init__(self) -> None:
        opening = self.env.reset()
        self.tools = mcp_tools(opening["tools"])
        self.instructions = "\n\n".join(m.get("content") or "" for m in opening["messages"]
                                        if m.get("role") in ("system", "user"))
        self._lock = anyio.Lock()

    async def call(self, session: str, name: str, args: dict[str, Any] | None) -> dict[str, Any]:
        if self.env.done:
            ending = self.env.endings[-1]["ending"] if self.env.endings else "unknown"
            raise ToolArgumentError(f"the episode is over (ending: {ending}); nothing more runs")
        async with self._lock:
            result = await anyio.to_thread.run_sync(self.env.step, {"name": name, "arguments": args or {}})
        more = [m["content"] for m in result.messages[1:] if m.get("content")]
        data = {"step": result.info.get("step"), "exit_code": result.info.get("exit_code"), "done": result.done,
                "ending": result.ending, "reward": result.reward, "nudges": result.info.get("nudges", [])}
        if result.done:
            data["grade"] = {k: v for k, v in result.info.get("grade", {}).items() if k != "model_patch"}
        return {"text": result.observation, "more": more, "data": data}

    def close(self) -> None:
        self.env.close()
