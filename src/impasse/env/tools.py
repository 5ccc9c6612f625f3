"""The agent's tools: a registry of small tools, each an argument model (its OpenAI schema and its
validation in one place) plus a handler that acts on the episode's sandbox.

A new tool is one :class:`Tool` registered in :data:`TOOLS` (a suite picks which tools each of
its interfaces offers). Malformed calls raise :class:`ToolCallError`, which the Env answers to
the model as an error; the ending tools raise :class:`Completed` or :class:`Escalated`, which the
Env turns into the episode's ending (control flow by named exceptions, as in mini-swe-agent).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, StrictBool, ValidationError

from impasse.registry import Registry
from impasse.sandbox.base import FileAccessError
from impasse.tickets.ticket import Ticket, escalate_tool_schema
from impasse.toolschema import function_tool


class Completed(Exception):  # noqa: N818 - control flow, not an error
    """``task_complete`` was called."""

    def __init__(self, verified: bool, summary: str) -> None:
        super().__init__(summary)
        self.verified, self.summary = verified, summary


class Escalated(Exception):  # noqa: N818
    """``escalate_to_human`` was called; ``ticket`` is the parsed ticket, ``raw`` the arguments."""

    def __init__(self, ticket: Any, raw: dict[str, Any]) -> None:
        super().__init__("escalated")
        self.ticket, self.raw = ticket, raw


@dataclass
class ToolOutcome:
    output: str
    exit_code: int | None = None
    duration_s: float = 0.0
    truncated: bool = False
    timed_out: bool = False
    record: dict[str, Any] = field(default_factory=dict)
    """Extra fields for the step event (e.g. the ask suite's question and verdict)."""


@dataclass
class ToolContext:
    """What a tool handler may use: the episode's sandbox and the loop's settings."""

    sandbox: Any
    command_timeout: float = 60.0
    output_chars: int = 10_000
    extra: dict[str, Any] = field(default_factory=dict)
    """Suite-specific state (e.g. the ask suite's matcher and answered-question count)."""


class ToolCallError(ValueError):
    """The call itself is malformed: answered to the model as an error, never a crash."""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    args: type[BaseModel]
    run: Callable[[ToolContext, Any], ToolOutcome]
    strict: bool = True
    """False: arguments are taken leniently and judged later (the escalation ticket)."""
    schema_fn: Callable[[], dict[str, Any]] | None = None
    replay: Callable[[ToolContext, Any, dict[str, Any]], Any] | None = None
    """Re-apply a recorded call when an interrupted episode is rebuilt (tools whose effects live
    in the sandbox run again; tools with their own state restore it from the recorded event)."""

    def schema(self) -> dict[str, Any]:
        return self.schema_fn() if self.schema_fn else function_tool(self.name, self.description, self.args)

    def parse(self, raw: Any) -> tuple[dict[str, Any], Any]:
        """-> (arguments as given, validated argument object)."""
        args = decode_arguments(raw)
        if not self.strict:
            return args, args
        required = self.schema()["function"]["parameters"].get("required", [])
        missing = [r for r in required if r not in args]
        if missing:
            raise ToolCallError(f"missing required argument(s): {', '.join(missing)}")
        try:
            return args, self.args.model_validate(args)
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(map(str, err["loc"]))
            raise ToolCallError(f"argument {where!r}: {err['msg']}") from None


def decode_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        args = json.loads(raw or "{}")
    except json.JSONDecodeError as e:
        raise ToolCallError(f"arguments are not valid JSON ({e.msg} at position {e.pos})") from e
    if not isinstance(args, dict):
        raise ToolCallError("arguments must be a JSON object")
    return args


TOOLS: Registry[Tool] = Registry("tool")


# ---------------------------------------------------------------------------------------- bash

class BashArgs(BaseModel):
    command: str


def truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head, tail = text[: limit // 2], text[-limit // 2:]
    return f"{head}\n[... {len(text) - len(head) - len(tail)} characters truncated ...]\n{tail}"


def run_bash(sb: Any, command: str, timeout: float, limit: int) -> ToolOutcome:
    res = sb.exec(command, timeout=timeout)
    text = truncate(res.output, limit)
    if res.truncated:
        text += "\n[output cut by the sandbox: only the first 64 KiB of each stream were kept]"
    if res.timed_out:
        text += f"\n[command timed out after {timeout:g} s and was killed]"
    text = f"{text.rstrip()}\n[exit code: {res.exit_code}]" if text.strip() else f"[exit code: {res.exit_code}]"
    return ToolOutcome(text, res.exit_code, res.duration_s, res.truncated, res.timed_out)


TOOLS.add("bash", Tool(
    "bash", "Run a bash command in the sandbox (cwd {workdir}). Each call is a fresh shell; background processes "
    "do not survive the call.", BashArgs,
    lambda ctx, a: run_bash(ctx.sandbox, a.command, ctx.command_timeout, ctx.output_chars),
    replay=lambda ctx, a, _e: run_bash(ctx.sandbox, a.command, ctx.command_timeout, 10)))


# ----------------------------------------------------------------------------------- edit_file

class EditArgs(BaseModel):
    path: str = Field(description="absolute, or relative to the repository")
    old_str: str
    new_str: str


def run_edit(sb: Any, path: str, old: str, new: str) -> ToolOutcome:
    """Read, replace, write back, all as the agent user (so permissions apply). ``duration_s``
    is the sandbox's time, so the loop can report its own overhead apart from it."""
    started = time.monotonic()
    out = _edit(sb, path, old, new)
    out.duration_s = time.monotonic() - started
    return out


def _edit(sb: Any, path: str, old: str, new: str) -> ToolOutcome:
    full = path if path.startswith("/") else f"{sb.workdir}/{path}"
    try:
        if old == "":
            return _write_confirmed(sb, full, new, f"Wrote {len(new.splitlines())} lines to {full}.")
        text = sb.read_file(full)
        count = text.count(old)
        if count == 0:
            return ToolOutcome(f"Error: old_str not found in {full}; no change made.", 1)
        if count > 1:
            return ToolOutcome(f"Error: old_str appears {count} times in {full}; make it unique. No change made.", 1)
        return _write_confirmed(sb, full, text.replace(old, new, 1), f"Edited {full}: replaced 1 occurrence.")
    except FileAccessError as e:
        return ToolOutcome(f"Error: {e}", 1)


def _write_confirmed(sb: Any, path: str, content: str, success: str) -> ToolOutcome:
    """Write as the agent. Success is reported only for content that is really there: every
    backend reads a write back by the harness's own means (``sandbox.base.verified_write``), so a
    write that keeps not landing is a harness error, never a silent success."""
    sb.write_file(path, content)
    return ToolOutcome(success, 0)


TOOLS.add("edit_file", Tool(
    "edit_file", "Replace the unique occurrence of old_str with new_str in a file. With an empty old_str, create the "
    "file (or overwrite it) with new_str.", EditArgs, lambda ctx, a: run_edit(ctx.sandbox, a.path, a.old_str, a.new_str),
    replay=lambda ctx, a, _e: run_edit(ctx.sandbox, a.path, a.old_str, a.new_str)))


# ---------------------------------------------------------------------------- ending the task

class CompleteArgs(BaseModel):
    verified: StrictBool
    summary: str


def _complete(ctx: ToolContext, a: CompleteArgs) -> ToolOutcome:
    raise Completed(a.verified, a.summary)


def _escalate(ctx: ToolContext, args: dict[str, Any]) -> ToolOutcome:
    raise Escalated(Ticket.from_arguments(args), args)


TOOLS.add("task_complete", Tool(
    "task_complete", "Finish the task. Set verified=true only if you ran the relevant tests and they passed after "
    "your change.", CompleteArgs, _complete))
TOOLS.add("escalate_to_human", Tool("escalate_to_human", "", Ticket, _escalate, strict=False,
                                    schema_fn=escalate_tool_schema))

class CheckArgs(BaseModel):
    ticket_id: int = Field(description="The number escalate_to_human answered with: queued (#N)")


def check_answer(ctx: ToolContext, a: CheckArgs) -> ToolOutcome:
    """What the reviewer said about an escalation (the Env keeps ``extra["reviews"]``)."""
    reviews = ctx.extra.get("reviews") or {}
    item = reviews.get(a.ticket_id)
    if item is None:
        known = ", ".join(f"#{i}" for i in reviews) or "none yet"
        raise ToolCallError(f"no ticket #{a.ticket_id}; your tickets: {known}")
    status, n = item["status"], a.ticket_id
    if item.get("kind") == "approval":
        text = {"queued": f"no answer yet: the call held as #{n} is still with the reviewer.",
                "accepted": f"#{n} was approved: make the same call again to run it.",
                "rejected": f"#{n} was not approved: {item.get('reply') or 'no reason given'}"}[status]
    else:
        text = {"queued": f"no answer yet: ticket #{n} is still with the reviewer.",
                "accepted": f"ticket #{n} was accepted by the reviewer.",
                "rejected": f"ticket #{n} was rejected: {item.get('reply') or 'no reason given'}"}[status]
    return ToolOutcome(text, 0, record={"review_id": a.ticket_id, "review_status": status})


TOOLS.add("check_answer", Tool(
    "check_answer", "Check whether the reviewer has answered a ticket you filed with escalate_to_human.",
    CheckArgs, check_answer))

ENDING_OUTPUT = {"task_complete": "Task marked complete.",
                 "escalate_to_human": "Ticket filed. A human will review it."}
"""What the model is told when an ending tool is called (the ending itself is the exception)."""


def tools_named(names: list[str], workdir: str, ticket_schema: str = "impasse") -> list[Tool]:
    """The tools for an interface, with ``{workdir}`` filled into their descriptions and the
    escalation ticket in the run's schema ('impasse' with progress, or the study's 'paper')."""
    out = []
    for name in names:
        tool = TOOLS.get(name)
        if "{workdir}" in tool.description:
            tool = dataclasses.replace(tool, description=tool.description.format(workdir=workdir))
        if name == "escalate_to_human":
            tool = dataclasses.replace(tool, schema_fn=lambda: escalate_tool_schema(ticket_schema))
        out.append(tool)
    return out
