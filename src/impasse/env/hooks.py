"""What may sit around ``Env.step``: ``before_step`` hooks that see a call before it runs, and
``after_step`` hooks that see its result (the evidence monitor is one).

A ``before_step`` hook answers with a :class:`Decision` in inspect_ai's approver vocabulary:

- ``approve`` (or ``None``): run the call as proposed;
- ``modify``: run ``decision.call`` instead (the original is recorded on the step);
- ``reject``: do not run it; the model is told ``decision.message`` as the call's result (a step);
- ``escalate``: hold the call for someone to decide: ``step`` returns ``info["held"]`` and counts
  no step; ``env.resume(held_id, decision)`` continues with the decision it is given;
- ``terminate``: end the episode (ending ``error``, the reason recorded).

An ``after_step`` hook may return a nudge (``{"text": ..., "rule": ..., ...}``): the text is
appended to the model's history as a user message and recorded as a ``nudge`` event. Hooks with
state implement ``replay`` (rebuild it from a recorded step, without effects, when an interrupted
episode resumes) and ``fork`` (its copy for a forked episode); without them the hook is shared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from impasse.env.core import Env

Action = Literal["approve", "modify", "reject", "escalate", "terminate"]
ACTIONS: tuple[str, ...] = ("approve", "modify", "reject", "escalate", "terminate")


@dataclass(frozen=True)
class Decision:
    action: Action = "approve"
    message: str = ""
    """For reject: what the model is told; for escalate and terminate: why."""
    call: dict[str, Any] | None = None
    """For modify: the call to run instead (``{"name": ..., "arguments": {...}}``)."""
    by: str = ""
    """Who decided (a hook's or a reviewer's name), recorded with the step."""

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"decision {self.action!r}: use one of {', '.join(ACTIONS)}")
        if self.action == "modify" and not self.call:
            raise ValueError("a 'modify' decision needs the call to run instead (call={'name': ..., 'arguments': ...})")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action}
        for key in ("message", "call", "by"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        return out


APPROVE = Decision()


class BeforeStep(Protocol):
    def before_step(self, env: Env, call: dict[str, Any]) -> Decision | None: ...


class AfterStep(Protocol):
    def after_step(self, env: Env, call: dict[str, Any], event: dict[str, Any]) -> dict[str, Any] | None:
        """``call``: ``{"name", "arguments"}``; ``event``: the recorded step. -> a nudge or None."""


@dataclass
class MonitorHook:
    """The evidence monitor as an ``after_step`` hook: its nudge goes into the next messages."""

    env: Any
    escalation_available: bool = True
    monitor: Any = field(init=False)

    def __post_init__(self) -> None:
        from impasse.monitor.monitor import Monitor

        self.monitor = Monitor(diff_provider=lambda: self.env.sandbox.diff(),
                               escalation_available=self.escalation_available)

    def after_step(self, env: Env, call: dict[str, Any], event: dict[str, Any]) -> dict[str, Any] | None:
        nudge = self.monitor.observe(call, event.get("output", ""), event.get("exit_code"))
        return nudge.to_json() if nudge else None

    def replay(self, env: Env, call: dict[str, Any], event: dict[str, Any]) -> None:
        provider, self.monitor.diff_provider = self.monitor.diff_provider, None  # no ticket is written
        try:
            self.monitor.observe(call, event.get("output", ""), event.get("exit_code"))
        finally:
            self.monitor.diff_provider = provider

    def fork(self, child: Env) -> MonitorHook:
        """The same monitor state for the forked episode (the monitor is a pure function of the
        steps: they are observed again), its pre-filled tickets reading the fork's own workspace."""
        twin = MonitorHook(child, self.escalation_available)
        for e in child.events:
            if e.get("type") == "step":
                twin.replay(child, {"name": e.get("tool", ""), "arguments": e.get("arguments") or {}}, e)
        return twin
