"""Reviewers: who answers an escalation (and, with an approval policy, a held call).

A reviewer is one file registered in :data:`REVIEWERS` (see :mod:`impasse.review.base`):
``oracle`` (today's behaviour: at once, exactly the accepted escalations), ``queue`` (a seeded
load model: capacity, latency, and an error rate that grows with load), ``llm`` (an
OpenAI-compatible model reading the ticket blinded, as the ticket judge does).
"""

from impasse.review.base import REVIEWERS, Answer, Reviewer, ReviewItem, make_reviewer

__all__ = ["REVIEWERS", "Answer", "ReviewItem", "Reviewer", "make_reviewer"]
