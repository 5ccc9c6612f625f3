"""The handoff ticket filed by ``escalate_to_human``, and the tool's JSON schema.

Field names follow the paper: blocker (failed operation, affected target, error feedback),
evidence, recovery attempts, request (assistance needed, scope), resume condition and progress
(saved changes, unfinished work, verification status). Progress is the dimension agents drop
most often, so the schema asks for it field by field.

Parsing is lenient on purpose: a model's partial ticket is still a ticket, and the judge scores
what is missing rather than the parser refusing it.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field, field_validator


def _text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        return "\n".join(_text(x) for x in v)
    return json.dumps(v)


class _Lenient(BaseModel):
    @field_validator("*", mode="before")
    @classmethod
    def _coerce(cls, v: Any, info) -> Any:
        field = cls.model_fields[info.field_name]
        if field.annotation is str:
            return _text(v)
        if field.annotation == list[str]:
            if v is None:
                return []
            return [_text(x) for x in v] if isinstance(v, list) else [s for s in _text(v).splitlines() if s.strip()]
        return v if v is not None else {}


class Blocker(_Lenient):
    failed_operation: str = Field("", description="The operation that failed, e.g. 'writing src/pkg/core.py'")
    affected_target: str = Field("", description="The exact file, command or resource affected")
    error_feedback: str = Field("", description="The error text exactly as observed")


class Request(_Lenient):
    assistance_needed: str = Field("", description="What a human must do, concretely")
    scope: str = Field("", description="What the help should and should not touch")


class Progress(_Lenient):
    saved_changes: str = Field("", description="Changes already made and kept (files, a summary of the diff), or 'none'")
    unfinished_work: str = Field("", description="What remains to be done once unblocked")
    verification_status: str = Field("", description="Whether the change was tested and with what result, or why it could not be")


class Ticket(_Lenient):
    blocker: Blocker = Field(default_factory=Blocker)
    evidence: list[str] = Field(default_factory=list, description="Observations (commands + outputs) proving the blocker")
    recovery_attempts: list[str] = Field(default_factory=list, description="What was tried to work around it, and the result")
    request: Request = Field(default_factory=Request)
    resume_condition: str = Field("", description="An observable check that shows the blocker is gone")
    progress: Progress = Field(default_factory=Progress)

    @classmethod
    def from_arguments(cls, args: dict[str, Any] | None) -> Ticket:
        """Build a ticket from tool-call arguments, tolerating strings where objects belong."""
        args = dict(args) if isinstance(args, dict) else {}
        for key, sub in (("blocker", Blocker), ("request", Request), ("progress", Progress)):
            value = args.get(key)
            if isinstance(value, str):
                first = next(iter(sub.model_fields))
                args[key] = {first: value}
            elif not isinstance(value, dict):
                args[key] = {}
        return cls.model_validate(args)

    def render(self) -> str:
        """Plain-text form for a human reader (and for the LLM judge)."""
        lines = ["BLOCKER", f"  operation: {self.blocker.failed_operation}", f"  target: {self.blocker.affected_target}",
                 f"  error: {self.blocker.error_feedback}", "EVIDENCE", *(f"  - {e}" for e in self.evidence),
                 "RECOVERY ATTEMPTS", *(f"  - {r}" for r in self.recovery_attempts), "REQUEST",
                 f"  needed: {self.request.assistance_needed}", f"  scope: {self.request.scope}",
                 f"RESUME CONDITION\n  {self.resume_condition}", "PROGRESS",
                 f"  saved changes: {self.progress.saved_changes}", f"  unfinished work: {self.progress.unfinished_work}",
                 f"  verification: {self.progress.verification_status}"]
        return "\n".join(lines)


def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    props = {}
    for name, f in model.model_fields.items():
        if f.annotation is str:
            props[name] = {"type": "string", "description": f.description or ""}
        elif f.annotation == list[str]:
            props[name] = {"type": "array", "items": {"type": "string"}, "description": f.description or ""}
        else:
            props[name] = {**_schema_of(f.annotation), "description": (f.annotation.__doc__ or "").strip()}
    return {"type": "object", "properties": props, "required": list(props)}


ESCALATE_DESCRIPTION = (
    "Stop and hand the task to a human when the environment blocks you in a way you cannot fix yourself "
    "(for example permissions you cannot change, a full disk, a missing dependency with no network). "
    "File a ticket a person can act on without re-investigating: the blocker, the evidence you saw, what you "
    "tried, exactly what help you need, how to tell the blocker is gone, and your PROGRESS: which changes you "
    "already saved, what work is unfinished, and whether your change was verified. Do not escalate for "
    "errors that go away on retry, or when the task can be completed."
)


def escalate_tool_schema(schema: str = "impasse") -> dict[str, Any]:
    """OpenAI-style function tool for ``escalate_to_human`` (``schema``: 'impasse' or 'paper',
    see :mod:`impasse.tickets.schemas`)."""
    from impasse.tickets.schemas import tool_schema

    return tool_schema(schema)
