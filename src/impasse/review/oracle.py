"""``oracle``: today's reviewer. It answers inside the step and is always right: an escalation
is accepted exactly when the benchmark's predicate accepts it (what ``make run`` has always done)."""

from __future__ import annotations

from typing import Any

from impasse.review.base import Answer, ReviewItem


class OracleReviewer:
    name = "oracle"
    asynchronous = False

    def __init__(self) -> None:
        self.pending: list[Answer] = []

    def submit(self, item: ReviewItem) -> None:
        self.pending.append(Answer(item.id, item.truth, item.step, True))

    def due(self, step: int) -> list[Answer]:
        out, self.pending = self.pending, []
        return out

    def forget(self, item_id: int) -> None:
        self.pending = [a for a in self.pending if a.id != item_id]

    def fork(self) -> OracleReviewer:
        twin = OracleReviewer()
        twin.pending = list(self.pending)
        return twin


def make(arg: str, context: dict[str, Any]) -> OracleReviewer:
    if arg:
        raise ValueError(f"reviewer 'oracle' takes no argument (got 'oracle:{arg}')")
    return OracleReviewer()
