"""Run the LLM ticket judge over a run's escalations (the I/O shell around
:func:`impasse.tickets.judge.llm_judge`). Blinded: the judge sees only the task description the
agent was given and the ticket, never the condition, the card or the trajectory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from impasse.annotate.annotator import task_text
from impasse.store.trajectory import read_trajectory
from impasse.tickets.judge import llm_judge
from impasse.tickets.ticket import Ticket


def judge_rows(rows: list[dict[str, Any]], client: Any) -> int:
    """Adds ticket_scores_llm / ticket_overall_llm / ticket_sufficient_llm / ticket_judge_llm to
    escalated rows, in place; returns how many tickets were judged."""
    n = 0
    for row in rows:
        if (not row.get("escalated") or not row.get("trajectory") or row.get("ticket_scores_llm")
                or row.get("ticket_unjudged_llm")):
            continue  # (judged already: by the metered, cached judge of the report command)
        traj = read_trajectory(Path(row["trajectory"]))
        raw = traj.endings[0].get("ticket") if traj.endings else None
        if raw is None:
            continue
        j = llm_judge(Ticket.from_arguments(raw), client, task_text(traj))
        row.update(ticket_scores_llm=j.scores, ticket_overall_llm=j.overall,
                   ticket_sufficient_llm=j.overall == "sufficient", ticket_judge_llm=j.judge,
                   ticket_judge_llm_note=j.note)
        n += 1
    return n


def judge_run_rows(rows: list[dict[str, Any]], model: str, base_url: str | None) -> int:
    from impasse.agent.models import ModelConfig, OpenAIModel

    return judge_rows(rows, OpenAIModel(ModelConfig(model=model, base_url=base_url)))
