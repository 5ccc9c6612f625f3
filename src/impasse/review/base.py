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

from typing import Any

from impasse.env.review import Answer, Reviewer, ReviewItem
from impasse.registry import Registry

__all__ = ["REVIEWERS", "Answer", "ReviewItem", "Reviewer", "make_reviewer", "parse"]


REVIEWERS: Registry[Any] = Registry("reviewer", entry_points="impasse.reviewers")
"""Reviewer factories: ``factory(arg, context) -> Reviewer``; ``arg`` is what follows ``name:``
in ``--reviewer name:arg`` (a profile of the queue's data file, say)."""
REVIEWERS.add("oracle", "impasse.review.oracle:make")
REVIEWERS.add("queue", "impasse.review.queue:make")
REVIEWERS.add("llm", "impasse.review.llm:make")
REVIEWERS.add("human", "impasse.review.human:make")


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
