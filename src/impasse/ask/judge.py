"""The one seam between the ask suite and the question matcher: :func:`judge_question`.

Everything the suite needs from a matcher goes through this function, so switching matchers
(the calibrated offline matcher of :mod:`impasse.ask.matcher` by default) is a change here only. ``IMPASSE_ASK_MATCHER`` may name
another matcher as ``module:attribute`` (a class built without arguments, or an object with
``match``); it is read per call so that worker processes see the run's choice.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

ENV = "IMPASSE_ASK_MATCHER"


from impasse.ask.matcher import MatcherFailure  # noqa: E402 - one failure type for every matcher


def _matcher() -> Any:
    name = os.environ.get(ENV, "")
    if not name:
        from impasse.ask.matcher import OfflineMatcher

        return OfflineMatcher()
    module, _, attr = name.partition(":")
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"{ENV}={name!r}: cannot load it ({e}); give module:attribute") from e
    return obj() if isinstance(obj, type) else obj


def judge_question(question: str, blockers: list[Any]) -> tuple[str | None, str]:
    """-> (id of the one blocker the question targets, or None; the rule that decided).

    ``blockers`` are records with ``id``, ``description``, ``resolution``, ``example_questions``.
    Raises :class:`MatcherFailure` when the judge fails."""
    matcher = _matcher()
    try:
        hit = matcher.match(question, list(blockers))
    except MatcherFailure:
        raise
    except Exception as e:  # noqa: BLE001 - any judge error is a hiccup, never an agent's fault
        raise MatcherFailure(f"{type(e).__name__}: {e}") from e
    return hit.blocker_id, hit.rule
