"""Ask-F1, pass@k, the judgment gap and the shaped reward, exactly as HiL-Bench's released code.

Pure: no I/O, no model clients. An episode is one (task, pass) in ask_human mode: the outcome of
every ask_human call plus whether the task passed. Following the released code (papers.md 1.3):

* per episode, ``P = unique blockers matched / questions asked`` where EVERY question counts in the
  denominator (capped, irrelevant, empty, judge failures, repeats); ``R = unique blockers matched /
  blockers``; ``F1 = 2PR / (P + R)``, 0 when ``P + R = 0`` (so zero questions gives 0/0/0);
* the headline is micro-averaged: ``P = sum matched / sum questions`` and ``R = sum matched / sum
  blockers`` over included episodes, then F1 of those; not the mean of per-episode F1s;
* at most :data:`MAX_ANSWERED` questions per episode are answered; later matches are refused
  (``capped``) and still count as questions (:func:`apply_answer_cap`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from math import comb
from typing import Literal

from pydantic import BaseModel, Field

MAX_ANSWERED = 3
MIN_QUESTION_CHARS = 3
JUDGE_FAILED = "<judge_failure>"  # verdict for "can't answer (perhaps transient hiccup)"
Status = Literal["matched", "irrelevant", "capped", "empty", "judge_failure"]


class Question(BaseModel):
    """One ask_human call as the harness resolved it."""

    status: Status
    blocker_id: str | None = Field(None, description="Set iff status == 'matched'")


class Episode(BaseModel):
    task_id: str
    pass_index: int = 0
    n_blockers: int = Field(ge=1)
    questions: list[Question] = Field(default_factory=list)
    resolved: bool = False
    valid: bool = Field(True, description="False: timeout/hiccup/dead environment -> needs rerun")


class AskMetrics(BaseModel):
    n_questions: int
    n_discovered: int
    n_blockers: int
    precision: float
    recall: float
    f1: float


def f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def apply_answer_cap(matches: Sequence[str | None], questions: Sequence[str] | None = None,
                     cap: int = MAX_ANSWERED) -> list[Question]:
    """Judge verdicts (blocker id, None = no match, or :data:`JUDGE_FAILED`) -> outcomes under the
    answer cap. Once ``cap`` questions
    were answered (matched, repeats included), later questions get "irrelevant question" and are
    logged as ``capped``. Questions shorter than 3 characters are ``empty`` and never reach the
    judge (its verdict, if any, is ignored)."""
    out: list[Question] = []
    answered = 0
    for i, bid in enumerate(matches):
        text = questions[i] if questions is not None else None
        if text is not None and len(text.strip()) < MIN_QUESTION_CHARS:
            out.append(Question(status="empty"))
        elif bid is None:
            out.append(Question(status="irrelevant"))
        elif bid == JUDGE_FAILED:
            out.append(Question(status="judge_failure"))
        elif answered >= cap:
            out.append(Question(status="capped"))
        else:
            answered += 1
            out.append(Question(status="matched", blocker_id=bid))
    return out


def discovered(ep: Episode) -> set[str]:
    return {q.blocker_id for q in ep.questions if q.status == "matched" and q.blocker_id}


def episode_metrics(ep: Episode) -> AskMetrics:
    n_q, n_d = len(ep.questions), len(discovered(ep))
    p = n_d / n_q if n_q else 0.0
    r = n_d / ep.n_blockers
    return AskMetrics(n_questions=n_q, n_discovered=n_d, n_blockers=ep.n_blockers,
                      precision=p, recall=r, f1=f1(p, r))


def included(episodes: Iterable[Episode], expected_passes: int | None = None) -> list[Episode]:
    """Drop invalid episodes; with ``expected_passes``, drop every episode of a task unless all of its
    expected passes are valid (the released default)."""
    eps = list(episodes)
    if expected_passes is None:
        return [e for e in eps if e.valid]
    ok = {t for t in {e.task_id for e in eps}
          if sum(e.valid for e in eps if e.task_id == t) >= expected_passes}
    return [e for e in eps if e.valid and e.task_id in ok]


class AskSummary(BaseModel):
    episodes: int
    precision: float
    recall: float
    f1: float = Field(description="Headline: F1 of micro-averaged P and R")
    macro_f1: float = Field(description="Mean of per-episode F1, for comparison only")


def summarize(episodes: Iterable[Episode]) -> AskSummary:
    ms = [episode_metrics(e) for e in episodes]
    q = sum(m.n_questions for m in ms)
    d = sum(m.n_discovered for m in ms)
    b = sum(m.n_blockers for m in ms)
    p = d / q if q else 0.0
    r = d / b if b else 0.0
    macro = sum(m.f1 for m in ms) / len(ms) if ms else 0.0
    return AskSummary(episodes=len(ms), precision=p, recall=r, f1=f1(p, r), macro_f1=macro)


def per_pass_f1(episodes: Iterable[Episode]) -> dict[int, float]:
    """HiL-Bench's batch-runner figure: pass index -> the micro Ask-F1 of that pass over all tasks."""
    by: dict[int, list[Episode]] = {}
    for e in episodes:
        by.setdefault(e.pass_index, []).append(e)
    return {k: summarize(eps).f1 for k, eps in sorted(by.items())}


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 with fewer than two values), as ``statistics`` gives."""
    import statistics

    if not values:
        return 0.0, 0.0
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def _by_task(episodes: Iterable[Episode]) -> dict[str, list[Episode]]:
    out: dict[str, list[Episode]] = {}
    for e in sorted(episodes, key=lambda e: (e.task_id, e.pass_index)):
        if e.valid:
            out.setdefault(e.task_id, []).append(e)
    return out


def pass_at_k(episodes: Iterable[Episode], k: int) -> float:
    """HiL-Bench's empirical pass@k: the share of tasks where ANY of the first k valid passes
    resolved the task."""
    tasks = _by_task(episodes)
    if not tasks:
        return 0.0
    return sum(any(e.resolved for e in eps[:k]) for eps in tasks.values()) / len(tasks)


def pass_at_k_unbiased(episodes: Iterable[Episode], k: int) -> float:
    """The unbiased estimator 1 - C(n-c, k)/C(n, k) per task (n valid passes, c resolved), averaged;
    tasks with fewer than k passes are skipped. Reported beside :func:`pass_at_k`."""
    vals = []
    for eps in _by_task(episodes).values():
        n, c = len(eps), sum(e.resolved for e in eps)
        if n >= k:
            vals.append(1.0 - comb(n - c, k) / comb(n, k))
    return sum(vals) / len(vals) if vals else 0.0


def judgment_gap(full_info: Iterable[Episode], ask_human: Iterable[Episode], k: int = 3) -> float:
    """full_info pass@k minus ask_human pass@k (positive: asking recovers less than full info)."""
    return pass_at_k(full_info, k) - pass_at_k(ask_human, k)


NEW_BLOCKER_REWARD = 0.3
WASTED_QUESTION_PENALTY = -0.1


def shaped_reward(questions: Sequence[Question], n_blockers: int) -> float:
    """+0.3 per question resolving a NEW blocker, -0.1 per irrelevant or repeated question, plus
    terminal recall if >= 1 blocker was found. Capped, empty and judge-failure questions resolve
    nothing, so they take the -0.1 too (the paper names only relevant vs irrelevant/repeat)."""
    if n_blockers < 1:
        raise ValueError("n_blockers must be >= 1")
    seen: set[str] = set()
    total = 0.0
    for q in questions:
        if q.status == "matched" and q.blocker_id and q.blocker_id not in seen:
            seen.add(q.blocker_id)
            total += NEW_BLOCKER_REWARD
        else:
            total += WASTED_QUESTION_PENALTY
    if seen:
        total += len(seen) / n_blockers
    return total
