"""The one seam between the ask suite and the question matcher: :func:`make_matcher` builds the
run's matcher (``impasse run --matcher offline|hybrid|lexical|llm``), :func:`judge_question` asks it.

The offline matchers (deterministic, no service): ``hybrid`` (word overlap and MiniLM sentence
embeddings, :mod:`impasse.ask.hybrid`; needs ``impasse[match]``) and ``lexical`` (word overlap
only, :class:`impasse.ask.matcher.OfflineMatcher`). ``offline`` names the best one installed:
:func:`resolve_kind` turns it into ``hybrid`` or ``lexical`` when a run is checked, so the run's
manifest records which judged it and ``--resume`` judges with the same one.

Two ways a judge can fail, kept apart on purpose:

* the judge could not decide this question (a reply that is not the verdict JSON, a refused
  request): :class:`MatcherFailure`; the agent gets HiL-Bench's hiccup text and the pass is
  invalid (rerun by ``--resume``);
* the judge's *service* is gone (unreachable, refused the key, still failing after its retries):
  :class:`impasse.agent.endings.EndpointError` propagates, the episode is a harness error, and
  the run pauses after a few in a row, like a dead agent endpoint. No pass is scored on a dead
  judge.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from impasse.ask.matcher import LLMMatcher, Matcher, MatcherFailure, OfflineMatcher

JUDGE_DEFAULTS = {"temperature": 0.05, "max_retries": 3, "timeout": 180.0, "max_tokens": 512}
"""HiL-Bench's judge settings (papers.md 1.2): temperature 0.05, 3 retries, 180 s."""


def _llm(model: dict[str, Any] | None) -> Matcher:
    from impasse.agent.models import ModelConfig

    if not model or not model.get("model"):
        raise ValueError("--matcher llm needs --matcher-model NAME (and usually --matcher-base-url URL)")
    return LLMMatcher(ModelConfig(**{**JUDGE_DEFAULTS, **model}))


def _hybrid(_model: dict[str, Any] | None) -> Matcher:
    from impasse.ask.embedding import Unavailable, default_embedder
    from impasse.ask.hybrid import HybridMatcher

    try:
        return HybridMatcher(embedder=default_embedder())
    except Unavailable as e:
        raise ValueError(f"--matcher hybrid: {e}; or use --matcher lexical") from None


def resolve_kind(name: str) -> str:
    """``offline`` -> ``hybrid`` when its embedding model is installed here, else ``lexical``;
    any other name as it is."""
    if name != "offline":
        return name
    from impasse.ask.embedding import unavailable_reason

    return "lexical" if unavailable_reason() else "hybrid"


MATCHER_KINDS: dict[str, Callable[[dict[str, Any] | None], Matcher]] = {
    "offline": lambda model: MATCHER_KINDS[resolve_kind("offline")](model),
    "hybrid": _hybrid,
    "lexical": lambda _model: OfflineMatcher(),
    "llm": _llm,
}
"""``--matcher NAME`` -> factory(model settings); a new matcher kind is one entry here."""


def make_matcher(name: str = "offline", model: dict[str, Any] | None = None) -> Matcher:
    if name not in MATCHER_KINDS:
        raise ValueError(f"unknown matcher {name!r}; known: {', '.join(MATCHER_KINDS)}")
    return MATCHER_KINDS[name](model)


def matcher_engine(matcher: Matcher) -> str:
    """What judges, in words (the benchmark's and the run's record)."""
    if isinstance(matcher, OfflineMatcher):
        return "lexical (word overlap)"
    if isinstance(matcher, LLMMatcher):
        return f"llm ({getattr(matcher.config, 'model', '?')})"
    return str(getattr(matcher, "engine", type(matcher).__name__))


def judge_question(matcher: Matcher, question: str, blockers: list[Any]) -> tuple[str | None, str]:
    """-> (id of the one blocker the question targets, or None; the rule that decided).

    Raises :class:`MatcherFailure` when the judge could not decide, ``EndpointError`` when its
    service is gone."""
    from impasse.agent.endings import EndpointError

    try:
        hit = matcher.match(question, list(blockers))
    except (MatcherFailure, EndpointError):
        raise
    except Exception as e:  # noqa: BLE001 - any other judge error is a hiccup, never an agent's fault
        raise MatcherFailure(f"{type(e).__name__}: {e}") from e
    return hit.blocker_id, hit.rule
