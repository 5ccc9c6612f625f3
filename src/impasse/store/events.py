"""The events of ``impasse.trajectory/1``, as pydantic models: the single source of the format.

``impasse schema trajectory`` prints their JSON Schema; :func:`impasse.store.trajectory.read_trajectory`
validates every known event against them **strictly** (no string-to-number or string-to-bool
coercion: ``"steps": "8"`` or ``"resolved": "false"`` is an error, not an 8 or a True), so a file
that lacks what the annotator needs, or holds a field of the wrong type, is rejected with its file,
line and field instead of being annotated wrong. Every field the annotator, the metrics or the
report read is declared here with its type. Extra fields are kept (converters may add their own),
and event types this version does not know pass through untouched.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

FORMAT = "impasse.trajectory/1"


class _Event(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class Header(_Event):
    """First line of every trajectory."""

    type: Literal["header"]
    format: str = Field(pattern=r"^impasse\.trajectory/\d+$", description="impasse.trajectory/1")
    condition: str = Field(description="Blocker card name: selects the card the annotator uses")
    episode_id: str = ""
    instance_id: str = ""
    interface: str = ""
    agent: str = Field("", description="e.g. reference/oracle, model/<name>, replay/<name>")
    agent_kind: str = ""
    condition_class: str = ""
    step_limit: int | None = Field(None, ge=1)
    suite: str | None = None
    package: str | None = Field(None, description="The distribution under repair (content rules compare against it)")
    target_file: str | None = Field(None, description="Repo-relative file that holds the bug")
    import_name: str | None = Field(None, description="Top-level import name of the package")
    restore: bool | None = None
    domain: str | None = Field(None, description="ask suite: sql or swe")
    n_blockers: int | None = Field(None, ge=0, description="ask suite: blockers in the task's registry")
    pass_: int | None = Field(None, alias="pass", ge=1, description="ask suite: which pass of the task")
    forked_from: dict[str, Any] | None = Field(None, description="A fork's parent: {episode_id, step}")


class MessageEvent(_Event):
    """A chat message (system, user, or assistant with tool_calls); the model's history is
    exactly these messages in order."""

    type: Literal["message"]
    message: dict[str, Any]
    usage: dict[str, Any] | None = None


class StepEvent(_Event):
    """One tool call and what came back."""

    type: Literal["step"]
    step: int = Field(ge=1, description="1-based count of tool calls in the episode")
    tool: str = Field(description="bash, edit_file, task_complete, escalate_to_human, or your own names")
    arguments: dict[str, Any] = Field(default_factory=dict,
                                      description='{"command": ...} for shell calls; {"path", "old_str", "new_str"} for edits')
    output: str = Field("", description="The output as the model saw it")
    exit_code: int | None = None
    duration_s: float | None = None
    harness_ms: float | None = None
    ask: dict[str, Any] | None = Field(None, description="ask suite: the matcher's verdict on the question")
    decision: dict[str, Any] | None = Field(None, description="A before_step hook's decision about the call")


class NudgeEvent(_Event):
    type: Literal["nudge"]
    step: int = Field(ge=1)
    rule: str
    advice: str = ""
    ticket: dict[str, Any] | None = None


class RestoreEvent(_Event):
    type: Literal["restore"]
    step: int = Field(ge=0, description="Tool calls made when the environment was restored")


class ReviewEvent(_Event):
    """An item with an asynchronous reviewer (``--reviewer queue``/``llm``): ``submitted`` when an
    escalation (or a held call) is given to it, ``answered`` when its answer arrives."""

    type: Literal["review"]
    event: Literal["submitted", "answered"]
    id: int = Field(ge=1, description="The item's number in the episode (what the agent is told: queued (#N))")
    kind: Literal["escalation", "approval"]
    step: int = Field(ge=0, description="Tool calls made when it was submitted / answered")
    reviewer: str
    truth: bool | None = Field(None, description="submitted: the benchmark's verdict (accept / may run)")
    ticket: dict[str, Any] | None = None
    accept: bool | None = Field(None, description="answered: accepted (escalation) or approved (approval)")
    correct: bool | None = Field(None, description="answered: whether the answer agrees with the verdict")
    filed_step: int | None = Field(None, ge=0)


class EndingEvent(_Event):
    """How a phase ended."""

    type: Literal["ending"]
    steps: int = Field(ge=0, description="Tool calls made when the phase ended")
    ending: Literal["completed", "escalated", "step_limit", "error", "switch"]
    phase: int = 1
    verified: bool | None = None
    summary: str | None = None
    ticket: dict[str, Any] | None = Field(None, description="The escalation ticket (escalated endings)")
    accepted: bool | None = None
    workspace_diff: str | None = None
    error: str | None = None
    invalid: bool | None = None


class GradeEvent(_Event):
    type: Literal["grade"]
    resolved: bool
    f2p_passed: int | None = Field(None, ge=0)
    f2p_total: int | None = Field(None, ge=0)
    patch_applied: bool | None = None
    model_patch: str | None = None


class ResumedEvent(_Event):
    type: Literal["resumed"]
    at_step: int = Field(ge=0)


class FinalEvent(_Event):
    type: Literal["final"]


class HarnessErrorEvent(_Event):
    """The harness failed (not the agent): the attempt is not graded and is run again on resume."""

    type: Literal["harness_error"]
    error: str


class PausedEvent(_Event):
    """The run paused this episode between two steps (a spend ceiling): ``--resume`` rebuilds it
    from its recorded steps and goes on; not a failure."""

    type: Literal["paused"]
    reason: str


EVENTS: dict[str, type[_Event]] = {m.model_fields["type"].annotation.__args__[0]: m for m in
                                   (Header, MessageEvent, StepEvent, NudgeEvent, RestoreEvent, EndingEvent, GradeEvent,
                                    ResumedEvent, FinalEvent, HarnessErrorEvent, PausedEvent, ReviewEvent)}


def json_schema() -> dict[str, Any]:
    """JSON Schema of one trajectory line (the header or any event)."""
    union = TypeAdapter(Header | MessageEvent | StepEvent | NudgeEvent | RestoreEvent | EndingEvent | GradeEvent
                        | ResumedEvent | FinalEvent | HarnessErrorEvent | PausedEvent | ReviewEvent)
    schema = union.json_schema()
    schema["title"] = FORMAT
    schema["description"] = ("One line of an impasse trajectory (JSONL): the first line is the header, every later "
                             "line an event with a 'type'. Fields not listed are allowed and kept.")
    return schema
