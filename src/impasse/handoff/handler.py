"""The handoff phase handler: at a run-chosen step (ending ``switch``) or at the prefix's own
escalation, swap the episode's model for the suffix model and give it the interface's first
messages. The working tree stays: the same sandbox goes on.

It writes one ``handoff`` event (interface, models, step, what was transferred, the usage of any
summary/ticket call) and re-applies it on resume; ``messages_reset`` tells the episode's rebuild
that the suffix's history starts after this event. With ``restore`` at an accepted escalation it
first restores the environment and records a ``restore`` event (``by: handoff``) before the
``handoff`` one, so the record shows the suffix started on a working machine; on resume the
restoration is re-applied with the handoff event (``restored``), at the same point of the replay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from impasse.handoff.interfaces import INTERFACES, PrefixState


@dataclass
class HandoffHandler:
    interface: str
    suffix: Any
    """The suffix model (a :class:`impasse.agent.loop.Model`)."""
    at_escalation: bool = False
    """Hand off at the prefix's own escalation (else only at ending 'switch')."""
    restore: bool = False
    """Before an escalation handoff, restore the environment (the suite's scripted restoration)."""
    event = "handoff"

    def __post_init__(self) -> None:
        self.iface = INTERFACES.get(self.interface)
        self.done = False

    def _acts_on(self, ep: Any, ending: dict[str, Any]) -> bool:
        if self.done or ep.loop.steps >= ep.config.step_limit:
            return False
        return ending["ending"] == "switch" or (self.at_escalation and ending["ending"] == "escalated")

    def after(self, ep: Any, ending: dict[str, Any]) -> bool:
        if not self._acts_on(ep, ending):
            return False
        escalated = ending["ending"] == "escalated"
        restored = bool(escalated and self.restore and ending.get("accepted"))
        if restored:  # the operator's fix comes first: the suffix's first call runs on a working machine
            ep.sb.restore()
            ep.restored = True
            if not _restore_recorded(ep):  # a resume after a crash between the two events: record it once
                ep.writer.append({"type": "restore", "step": ep.loop.steps, "by": "handoff"})
        state = PrefixState(messages=list(ep.loop.messages), step=ep.loop.steps,
                            steps_left=ep.config.step_limit - ep.loop.steps, reason=ending["ending"],
                            ticket=ending.get("ticket") if escalated else None, restored=restored)
        written, calls = None, []
        if (req := self.iface.request(state)) is not None:
            author = ep.model if req.by == "prefix" else self.suffix
            resp = author.query(req.messages, req.tools)
            written = self.iface.read(resp.message)
            calls.append({"by": req.by, "model": author.name, "purpose": self.interface,
                          "message": resp.message, "usage": resp.usage})
        first = self.iface.first_messages(state, written)
        ep.writer.append({"type": "handoff", "interface": self.interface, "from_model": ep.model.name,
                          "to_model": self.suffix.name, "at_step": ep.loop.steps, "reason": ending["ending"],
                          "restored": restored, "transferred": _transferred(state, written),
                          "working_tree_diff": ep.sb.diff(),
                          "written": written, "calls": calls, "messages_reset": True})
        self._swap(ep, restored=False)
        ep.loop.messages = []
        for m in first:
            ep.loop.add_message(m)
        return True

    def replay(self, ep: Any, event: dict[str, Any]) -> None:
        self._swap(ep, restored=bool(event.get("restored")))

    def _swap(self, ep: Any, restored: bool) -> None:
        if restored:
            ep.sb.restore()
            ep.restored = True
        self.done = True
        ep.model = self.suffix
        ep.loop.model = self.suffix
        ep.config.switch_at = None


def _restore_recorded(ep: Any) -> bool:
    """Whether this handler's restore event is already recorded after the last ending (a resume)."""
    events = ep.writer.written().events
    last = max((i for i, e in enumerate(events) if e["type"] == "ending"), default=-1)
    return any(e["type"] == "restore" and e.get("by") == "handoff" for e in events[last + 1:])


def _transferred(state: PrefixState, written: Any) -> dict[str, Any]:
    """What crossed the switch, in numbers (the working tree always does)."""
    return {"working_tree": True, "prefix_messages": len(state.messages),
            "ticket": state.ticket is not None or isinstance(written, dict),
            "summary_chars": len(written) if isinstance(written, str) else 0}
