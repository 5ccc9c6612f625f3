"""The two ticket schemas an ``escalate_to_human`` tool can ask for, selected by name
(``RunConfig.ticket_schema`` / ``impasse run --ticket-schema``):

- ``impasse`` (default): the study's fields plus PROGRESS (saved changes, unfinished work,
  verification status), the dimension the paper found missing in 35.7% of tickets;
- ``paper``: the study's ticket as the seeds list it (blocker, evidence, recovery attempts,
  requested help, resume condition; no progress field) with our own neutral tool description.
  Running both measures what asking for progress buys.

Both are generated from pydantic models; pure (no sandbox, no clients). A ticket filed under
either schema parses as :class:`~impasse.tickets.ticket.Ticket` (progress then stays empty and the
judge scores it missing), so judging and metrics need no per-schema code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from impasse.tickets.ticket import ESCALATE_DESCRIPTION, Blocker, Request, Ticket, _Lenient, _schema_of


class PaperTicket(_Lenient):
    """The study's ticket: blocker, evidence, recovery attempts, requested help, resume condition."""

    blocker: Blocker = Field(default_factory=Blocker)
    evidence: list[str] = Field(default_factory=list, description="Observations (commands + outputs) showing the blocker")
    recovery_attempts: list[str] = Field(default_factory=list, description="What was tried and what happened")
    request: Request = Field(default_factory=Request)
    resume_condition: str = Field("", description="When work can resume: a state that shows the blocker is gone")


PAPER_DESCRIPTION = (
    "Hand the task to a human when an infrastructure problem in this environment stops you and cannot be "
    "resolved from inside it. Calling this ends your run and files a structured ticket recording the blocker, "
    "the evidence you observed, the recovery attempts you made, the help you request and when work can resume."
)


@dataclass(frozen=True)
class TicketSchema:
    name: str
    model: type[BaseModel]
    description: str
    property_notes: dict[str, str]
    """Descriptions of the nested objects, shown to the model."""


SCHEMAS: dict[str, TicketSchema] = {
    "impasse": TicketSchema("impasse", Ticket, ESCALATE_DESCRIPTION, {
        "blocker": "The operation that failed, on what, with the exact error",
        "request": "The assistance needed and its scope",
        "progress": "REQUIRED: your own progress: saved changes, unfinished work, verification status"}),
    "paper": TicketSchema("paper", PaperTicket, PAPER_DESCRIPTION, {
        "blocker": "The failed operation, the affected target and the error feedback",
        "request": "The external assistance needed and its scope"}),
}


def ticket_schema(name: str) -> TicketSchema:
    if name not in SCHEMAS:
        raise ValueError(f"unknown ticket schema {name!r}; use one of: {', '.join(SCHEMAS)}")
    return SCHEMAS[name]


def tool_schema(name: str = "impasse") -> dict[str, Any]:
    """OpenAI-style function tool for ``escalate_to_human`` under the named ticket schema."""
    s = ticket_schema(name)
    params = _schema_of(s.model)
    for prop, note in s.property_notes.items():
        params["properties"][prop]["description"] = note
    return {"type": "function", "function": {"name": "escalate_to_human", "description": s.description,
                                             "parameters": params}}
