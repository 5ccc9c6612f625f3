"""The reviewer protocol and its registry.

The Env asks a reviewer about two kinds of item: an ``escalation`` (a ticket: accept, so the
environment is restored or a person takes over, or reject with a message) and an ``approval``
(a tool call an approval policy holds: approve or reject). A synchronous reviewer (``oracle``)
decides inside the step, exactly as before reviewers existed. An asynchronous one is *submitted*
an item and answers later: the Env asks it after every step which answers are due
(:meth:`Reviewer.due`), on a clock that is the episode's step count, so a run is reproducible.

Every item carries ``truth``, the benchmark's own verdict (the annotator's accepted-escalation
predicate, or the approval policy's), so a reviewer's answer is recorded with whether it was
right. A reviewer is rebuilt on resume by submitting the recorded items again in order and
forgetting the answers already delivered: reviewers draw all their randomness at submission.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from impasse.registry import Registry


@dataclass(frozen=True)
class ReviewItem:
    id: int
    """The episode's item number, 1-based: what the agent is told (``queued (#N)``)."""
    kind: Literal["escalation", "approval"]
    step: int
    """Steps taken when it was submitted (the clock)."""
    truth: bool
    """The benchmark's verdict: the escalation should be accepted / the call may run."""
    ticket: dict[str, Any] | None = None
    call: dict[str, Any] | None = None
    task: str = ""
    """The task description (what a blinded reviewer may read besides the ticket)."""
    episode_id: str = ""

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, "")}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReviewItem:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class Answer:
    id: int
    accept: bool
    """Accepted (escalation) or approved (approval)."""
    step: int
    """The clock at which the answer arrives (steps)."""
    correct: bool
    """Whether it agrees with the item's truth."""
    message: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
    """What the reviewer's model says about it (load, reliability, minutes waited, ...)."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Reviewer(Protocol):
    name: str
    asynchronous: bool
    """False: the decision is made inside the step (today's behaviour); True: answers come later."""

    def submit(self, item: ReviewItem) -> None:
        """Take an item (draw everything random about its answer now)."""

    def due(self, step: int) -> list[Answer]:
        """The answers that have arrived by ``step`` and were not returned before, in order."""

    def forget(self, item_id: int) -> None:
        """An answer already delivered (a resumed episode): never return it again."""

    def fork(self) -> Reviewer:
        """An independent copy (a forked episode)."""


REVIEWERS: Registry[Any] = Registry("reviewer", entry_points="impasse.reviewers")
"""Reviewer factories: ``factory(arg, context) -> Reviewer``; ``arg`` is what follows ``name:``
in ``--reviewer name:arg`` (a profile of the queue's data file, say)."""
REVIEWERS.add("oracle", "impasse.review.oracle:make")
REVIEWERS.add("queue", "impasse.review.queue:make")
REVIEWERS.add("llm", "impasse.review.llm:make")


def parse(spec: str) -> tuple[str, str]:
    """``name`` or ``name:arg`` -> (name, arg); the name must be registered."""
    name, _, arg = (spec or "oracle").partition(":")
    name = name.strip()
    if name not in REVIEWERS:
        raise ValueError(f"unknown reviewer {name!r}; known: {', '.join(REVIEWERS.names())}")
    return name, arg.strip()


def make_reviewer(spec: str, context: dict[str, Any] | None = None) -> Reviewer:
    """The reviewer ``spec`` names (``oracle``, ``queue``, ``queue:busy``, ``llm``). ``context``:
    ``seed``, ``episode_id``, ``model`` (ModelConfig fields for ``llm``)."""
    name, arg = parse(spec)
    return REVIEWERS.get(name)(arg, dict(context or {}))
