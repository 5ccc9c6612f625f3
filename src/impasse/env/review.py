"""What the Env and a reviewer exchange: an item to review, an answer, the reviewer protocol.

They live with the Env (which submits items and delivers answers, :meth:`Env.submit_review`);
the reviewers themselves and their registry are :mod:`impasse.review`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol


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
    context: dict[str, Any] | None = None
    """What a person reviewing it may see besides the ticket: the steps so far, the workspace
    diff, the condition (the ``human`` reviewer shows them on its page). Not recorded twice:
    the trajectory holds them already."""

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, "") and k != "context"}

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
