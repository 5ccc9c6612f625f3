"""Handoff interfaces: pure transformations from the prefix's state to the suffix's first messages.

The working tree is never part of an interface: the same sandbox goes on, so every interface
preserves it. Interfaces differ only in the trajectory information passed on (Handoff Tax, §3).
An interface that needs text written by a model (a summary, a ticket) says so with a
:class:`Request`; the handler (a thin shell) makes that call and passes the answer back to the
pure :meth:`HandoffInterface.first_messages`. A new interface is one object registered here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from impasse.registry import Registry
from impasse.tickets.ticket import Ticket, escalate_tool_schema

HANDOFF_MARKER = "[impasse handoff]"
SUMMARY_MARKER = "[impasse handoff: summary request]"
TICKET_MARKER = "[impasse handoff: ticket request]"

SUMMARY_TOOL = {"type": "function", "function": {
    "name": "write_summary",
    "description": "Hand the task over: a summary another engineer can continue from.",
    "parameters": {"type": "object", "properties": {"summary": {"type": "string", "description": (
        "What was found, what was changed in the working tree (files, functions), what was verified and "
        "what remains to be done")}}, "required": ["summary"]}}}


def ticket_tool() -> dict[str, Any]:
    """The run's ticket schema, offered as a ``write_ticket`` tool (same fields as escalate_to_human)."""
    schema = json.loads(json.dumps(escalate_tool_schema()))
    schema["function"]["name"] = "write_ticket"
    schema["function"]["description"] = "Hand the task over with a structured ticket another engineer can continue from."
    return schema


@dataclass(frozen=True)
class PrefixState:
    """What the prefix leaves behind (besides the working tree, which stays in the sandbox)."""

    messages: list[dict[str, Any]]
    """The prefix's full message history (system prompt and task first)."""
    step: int
    steps_left: int
    reason: str
    """'switch' (a run-chosen step) or 'escalated' (the prefix's own escalation)."""
    ticket: dict[str, Any] | None = None
    restored: bool = False

    @property
    def opening(self) -> list[dict[str, Any]]:
        """The system prompt and the task, as the prefix received them."""
        out = []
        for m in self.messages:
            if m.get("role") not in ("system", "user"):
                break
            out.append(m)
        return out


@dataclass(frozen=True)
class Request:
    """A model call an interface needs: by whom ('prefix' or 'suffix'), with what."""

    by: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)


def notice(state: PrefixState, what: str) -> str:
    why = ("the previous agent escalated" + (" and an operator restored the environment" if state.restored else "")
           if state.reason == "escalated" else "the run switched models at a chosen step")
    return (f"{HANDOFF_MARKER} You are taking over this task from another agent after {state.step} tool calls "
            f"({why}). The working tree in the sandbox is exactly as it left it. {what} "
            f"{state.steps_left} tool calls remain.")


def _strip_marker(text: str) -> str:
    return text.strip()


class HandoffInterface(Protocol):
    name: str

    def request(self, state: PrefixState) -> Request | None:
        """The model call this interface needs before the switch, if any."""

    def read(self, message: dict[str, Any]) -> Any:
        """The written artefact from the requested call's answer."""

    def first_messages(self, state: PrefixState, written: Any) -> list[dict[str, Any]]:
        """The suffix model's first messages (pure)."""


class Raw:
    name = "raw"

    def request(self, state: PrefixState) -> Request | None:
        return None

    def read(self, message: dict[str, Any]) -> Any:
        return None

    def first_messages(self, state: PrefixState, written: Any) -> list[dict[str, Any]]:
        return [*state.messages, {"role": "user", "content": notice(
            state, "Above is its full trajectory; continue from where it stopped.")}]


class TrajDrop:
    name = "traj_drop"

    def request(self, state: PrefixState) -> Request | None:
        return None

    def read(self, message: dict[str, Any]) -> Any:
        return None

    def first_messages(self, state: PrefixState, written: Any) -> list[dict[str, Any]]:
        return [*state.opening, {"role": "user", "content": notice(
            state, "You get no record of what it did: inspect the working tree (e.g. git diff) to see its changes.")}]


def _summary_text(message: dict[str, Any]) -> str:
    for call in message.get("tool_calls") or []:
        fn = call.get("function", {})
        if fn.get("name") == "write_summary":
            try:
                return str(json.loads(fn.get("arguments") or "{}").get("summary", "")).strip()
            except json.JSONDecodeError:
                return str(fn.get("arguments") or "").strip()
    return _strip_marker(message.get("content") or "")


SUMMARY_ASK = (f"{SUMMARY_MARKER} {{who}} Call write_summary with a concise handoff summary: what you found, "
               "what you changed in the working tree (files, functions), what you verified, and what remains.")


class Compact:
    """A summary of the prefix's trajectory, written by the prefix (``compact_pre``) or by the
    suffix after reading the full trajectory (``compact_suf``)."""

    def __init__(self, name: str, by: str) -> None:
        self.name, self.by = name, by

    def request(self, state: PrefixState) -> Request:
        who = ("You are handing this task over to another agent." if self.by == "prefix" else
               "You are about to take this task over; above is the previous agent's trajectory.")
        return Request(self.by, [*state.messages, {"role": "user", "content": SUMMARY_ASK.format(who=who)}], [SUMMARY_TOOL])

    def read(self, message: dict[str, Any]) -> str:
        return _summary_text(message)

    def first_messages(self, state: PrefixState, written: Any) -> list[dict[str, Any]]:
        author = "the previous agent" if self.by == "prefix" else "you, after reading its trajectory"
        return [*state.opening, {"role": "user", "content": notice(
            state, f"Summary of its work (written by {author}):\n\n{written}\n\n")}]


class TicketInterface:
    """The structured escalation ticket: the prefix's own at an escalation; at a plain switch the
    prefix is asked to write one (one extra call, as for compact_pre)."""

    name = "ticket"

    def request(self, state: PrefixState) -> Request | None:
        if state.ticket is not None:
            return None
        ask = (f"{TICKET_MARKER} You are handing this task over to another agent. Call write_ticket: the blocker "
               "(if any), evidence, what you tried, and above all your progress (saved changes, unfinished work, "
               "verification status).")
        return Request("prefix", [*state.messages, {"role": "user", "content": ask}], [ticket_tool()])

    def read(self, message: dict[str, Any]) -> dict[str, Any]:
        for call in message.get("tool_calls") or []:
            fn = call.get("function", {})
            if fn.get("name") == "write_ticket":
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except json.JSONDecodeError:
                    args = {}
                return Ticket.from_arguments(args).model_dump()
        try:
            return Ticket.from_arguments(json.loads(message.get("content") or "{}")).model_dump()
        except (json.JSONDecodeError, AttributeError):
            return Ticket(progress={"unfinished_work": message.get("content") or ""}).model_dump()

    def first_messages(self, state: PrefixState, written: Any) -> list[dict[str, Any]]:
        ticket = state.ticket if state.ticket is not None else written
        return [*state.opening, {"role": "user", "content": notice(
            state, "Its handoff ticket:\n\n" + json.dumps(ticket, indent=2) + "\n\n")}]


INTERFACES: Registry[HandoffInterface] = Registry("handoff interface")
INTERFACES.add("raw", Raw())
INTERFACES.add("compact_pre", Compact("compact_pre", "prefix"))
INTERFACES.add("compact_suf", Compact("compact_suf", "suffix"))
INTERFACES.add("traj_drop", TrajDrop())
INTERFACES.add("ticket", TicketInterface())
