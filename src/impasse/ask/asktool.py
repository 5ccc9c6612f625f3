"""The ``ask_human`` tool: a question -> at most one blocker's resolution, verbatim.

At most :data:`impasse.ask.scoring.MAX_ANSWERED` questions are answered per episode (later ones
get "irrelevant question", recorded as ``capped``). A judge failure answers "can't answer
(perhaps transient hiccup)" and marks the episode invalid. Every call's question and verdict are
written on its step event (``ask``), so Ask-F1 is computed from the trajectory alone; the replay
on resume restores the state from those records without asking the judge again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from impasse.ask.judge import MatcherFailure, judge_question, make_matcher
from impasse.ask.matcher import HICCUP, IRRELEVANT, Matcher
from impasse.ask.scoring import MAX_ANSWERED, MIN_QUESTION_CHARS
from impasse.env.tools import Tool, ToolContext, ToolOutcome

STATE = "ask"
"""Key of the :class:`AskState` in ``ToolContext.extra``."""


class AskArgs(BaseModel):
    question: str = Field(description="One specific question about what the task leaves open")


@dataclass
class AskState:
    blockers: list[Any]
    matcher: Matcher = field(default_factory=make_matcher)
    """The run's judge (``--matcher``; the offline one by default)."""
    answered: int = 0
    invalid: bool = False
    cap: int = MAX_ANSWERED
    log: list[dict[str, Any]] = field(default_factory=list)

    def apply(self, verdict: dict[str, Any]) -> None:
        """Count a recorded verdict (live or replayed)."""
        self.log.append(verdict)
        if verdict["status"] == "matched":
            self.answered += 1
        if verdict["status"] == "judge_failure":
            self.invalid = True


def decide(state: AskState, question: str) -> tuple[dict[str, Any], str]:
    """-> (the verdict record, the answer shown to the agent)."""
    if len(question.strip()) < MIN_QUESTION_CHARS:
        return {"question": question, "status": "empty", "blocker_id": None, "rule": "too short"}, IRRELEVANT
    try:
        bid, rule = judge_question(state.matcher, question, state.blockers)
    except MatcherFailure as e:
        return {"question": question, "status": "judge_failure", "blocker_id": None, "rule": str(e)}, HICCUP
    if bid is None:
        return {"question": question, "status": "irrelevant", "blocker_id": None, "rule": rule}, IRRELEVANT
    if state.answered >= state.cap:
        return {"question": question, "status": "capped", "blocker_id": None, "matched": bid, "rule": rule}, IRRELEVANT
    resolution = next(b.resolution for b in state.blockers if b.id == bid)
    return {"question": question, "status": "matched", "blocker_id": bid, "rule": rule}, resolution


def _run(ctx: ToolContext, a: AskArgs) -> ToolOutcome:
    state: AskState = ctx.extra[STATE]
    verdict, answer = decide(state, a.question)
    state.apply(verdict)
    record: dict[str, Any] = {"question": a.question, "ask": verdict}
    if verdict["status"] == "judge_failure":
        record["invalid"] = True
    return ToolOutcome(answer, 0, record=record)


def _replay(ctx: ToolContext, _a: AskArgs, event: dict[str, Any]) -> None:
    if "ask" in event:
        ctx.extra[STATE].apply(event["ask"])


ASK_TOOL = Tool("ask_human", "Ask the human who wrote the task one specific question about something the task "
                "leaves missing, ambiguous or contradictory. Only questions about a real gap are answered, "
                f"at most {MAX_ANSWERED} per task; anything else gets 'irrelevant question'.",
                AskArgs, _run, replay=_replay)
