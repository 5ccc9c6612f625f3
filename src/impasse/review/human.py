"""``human``: a person answers from the review page (``impasse review serve --store FILE``).

``--reviewer human:FILE`` files each escalation in the SQLite ticket store FILE (the one the MCP
server writes and the page serves), with what the person needs to judge it: the task, the
agent's steps, its diff, the rubric's ratings and the truthfulness check. The answer is the row
the page commits; the episode sees it at its next step (or at once through ``check_answer``).
This is the one reviewer that runs on wall time: its latency is the person's. A resumed episode
finds the rows it filed before (by episode and item number) instead of filing them again.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from impasse.review.base import Answer, ReviewItem


class HumanReviewer:
    asynchronous = True
    name = "human"

    def __init__(self, store_path: Path) -> None:
        from impasse.tickets.store import TicketStore

        self.store = TicketStore(store_path)
        self.pending: dict[int, tuple[int, bool]] = {}
        """item id -> (store row id, the benchmark's verdict)."""

    def submit(self, item: ReviewItem) -> None:
        if item.kind != "escalation":
            raise ValueError("the human reviewer answers escalations; approvals need --reviewer oracle, queue or llm")
        known = self.store.find(item.episode_id, item.id)
        if known is None:
            from impasse.tickets.judge import diff_contradictions, judge_ticket, sufficient
            from impasse.tickets.ticket import Ticket

            ticket = Ticket.from_arguments(item.ticket or {})
            ratings = judge_ticket(ticket)
            context = dict(item.context or {})
            issues = diff_contradictions(ticket, context.get("workspace_diff"))
            rid = self.store.add_escalation(item.episode_id, ticket.model_dump(), ratings,
                                            sufficient(ratings) and not issues, issues,
                                            context={**context, "task": item.task, "item": item.id, "step": item.step})
        else:
            rid = known.id
        self.pending[item.id] = (rid, item.truth)

    def due(self, step: int) -> list[Answer]:
        out = []
        for item_id, (rid, truth) in list(self.pending.items()):
            r = self.store.get(rid)
            if r.status in ("accepted", "rejected"):
                accept = r.status == "accepted"
                del self.pending[item_id]
                out.append(Answer(item_id, accept, step, accept == truth, r.answer or "",
                                  {"record": rid, "seconds": round((r.answered_at or r.created) - r.created, 1)}))
        return out

    def forget(self, item_id: int) -> None:
        self.pending.pop(item_id, None)

    def fork(self) -> HumanReviewer:
        twin = HumanReviewer(self.store.path)
        twin.pending = dict(self.pending)
        return twin


def make(arg: str, context: dict[str, Any]) -> HumanReviewer:
    path = arg or os.environ.get("IMPASSE_TICKETS")
    if not path:
        raise ValueError("reviewer 'human' needs the ticket store the review page serves: --reviewer human:FILE "
                         "(or $IMPASSE_TICKETS)")
    return HumanReviewer(Path(path))
