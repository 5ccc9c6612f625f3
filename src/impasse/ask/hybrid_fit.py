"""Fitting the hybrid matcher's weights and measuring them on questions they were not fitted on.

The data: HiL-Bench's even-numbered public blocker registries (``calibration.release_cases``:
leave-one-out example questions are the positives, other tasks' questions and our generic
questions the negatives). The odd-numbered registries are never read (``release_registries``).

Fitted and measured on the same registries, the figures would be fit on themselves. So the
reported figures are cross-validated: each domain's even-numbered tasks in two halves (sql_0 ...
sql_48 / sql_50 ... sql_98) and the generic questions in two halves (a hash of the question); weights and acceptance threshold are fitted on one half and measured on the other,
both ways, and the two measurements pooled. The shipped weights are then fitted the same way on
all of it (``benchmarks/matcher_calibration.py --fit``).

The fit is maximum likelihood of the conditional logit in :mod:`impasse.ask.hybrid` (scipy's
L-BFGS with the exact gradient), then the lowest acceptance threshold of :data:`ACCEPT_GRID` whose
figures on the training data stay within :data:`AIM`.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from impasse.ask.calibration import Case, ReleaseTask, Tallies, add_tallies, release_cases, tally_cases
from impasse.ask.hybrid import HybridMatcher, HybridModel
from impasse.ask.matcher import normalize, surface_rejection

AIM = {"wrong": 0.015, "foreign": 0.0075, "generic": 0.0075}
"""What the fit asks of its own training data when it picks the acceptance threshold: below the
targets (wrong blocker <= 2%, foreign and generic questions accepted <= 1%), because the figures on
tasks it was not fitted on are worse."""
ACCEPT_GRID = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)
KIND_WEIGHT = {"loo": 1.0, "foreign": 1.0, "generic": 0.3}
"""How much one training question of each kind counts (the generic questions are asked of every
task, so they are many)."""
RIDGE = 0.01
TRAIN_FOREIGN_PER_TASK = 2
"""Training asks each task's questions of the next two tasks on another database or repository
(the measurement, of the next one): more of the negatives that bind."""


def task_halves(tasks: list[ReleaseTask]) -> dict[str, int]:
    """Each task's half: the lower-numbered half of its domain's tasks is 0, the rest 1. Contiguous
    halves keep neighbouring tasks together, and so keep inside one half the pairs the foreign
    questions are asked across (a task and the next one on another database or repository): those
    neighbours often share a kind of gap ("the last few years before 2015" / "... before 2021")."""
    out = {}
    for domain in {t.domain for t in tasks}:
        mine = sorted((t for t in tasks if t.domain == domain), key=lambda t: int(t.task_id.split("_")[-1]))
        out |= {t.task_id: int(i >= len(mine) / 2) for i, t in enumerate(mine)}
    return out


def question_half(question: str) -> int:
    return int(hashlib.sha256(question.encode()).hexdigest(), 16) % 2


def meets(t: Tallies, aim: dict[str, float]) -> bool:
    def rate(kind: str) -> float:
        return t[kind]["both"].wrong_rate if kind in t else 0.0

    return rate("loo") <= aim["wrong"] and rate("foreign") <= aim["foreign"] and rate("generic") <= aim["generic"]


def training_rows(matcher: HybridMatcher, cases: list[Case]) -> list[tuple[np.ndarray, int, float]]:
    """(signals as an (n_blockers, n_features) array, index of the right answer (0: reject), weight)
    for every case the question's form does not already reject."""
    rows = []
    for c in cases:
        if surface_rejection(c.question, matcher.lexical.vocab) or not c.blockers:
            continue
        s = matcher.signals_of(normalize(c.question), list(c.blockers))
        feats = np.stack([s[f] for f in matcher.model.features], axis=1)
        y = 0 if c.want is None else 1 + [b.id for b in c.blockers].index(c.want)
        rows.append((feats, y, KIND_WEIGHT[c.kind]))
    return rows


def fit_logit(rows: list[tuple[np.ndarray, int, float]], n_features: int, ridge: float = RIDGE
              ) -> tuple[np.ndarray, float]:
    """Maximum likelihood of the conditional logit (each blocker's utility w . signals, the
    rejection's a constant), a small ridge on w -> (w, the rejection's utility)."""
    from scipy.optimize import minimize

    if not rows:
        raise ValueError("nothing to fit: no question the rules on its form let through")
    n, width = len(rows), max(r[0].shape[0] for r in rows)
    F = np.zeros((n, width, n_features))
    valid = np.zeros((n, width + 1), dtype=bool)
    for i, (f, _y, _w) in enumerate(rows):
        F[i, :len(f)] = f
        valid[i, :len(f) + 1] = True
    y = np.array([r[1] for r in rows])
    wt = np.array([r[2] for r in rows])

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b0 = theta[:-1], theta[-1]
        u = np.where(valid, np.concatenate([np.full((n, 1), b0), F @ w], axis=1), -np.inf)
        p = np.exp(u - u.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        e = -p
        e[np.arange(n), y] += 1
        grad_w = -np.einsum("n,nb,nbf->f", wt, e[:, 1:], F) + 2 * ridge * w
        value = -(wt * np.log(p[np.arange(n), y] + 1e-12)).sum() + ridge * (w @ w)
        return float(value), np.concatenate([grad_w, [-(wt * e[:, 0]).sum()]])

    res = minimize(loss, np.concatenate([np.ones(n_features), [1.0]]), jac=True, method="L-BFGS-B")
    return res.x[:-1], float(res.x[-1])


def training_cases(tasks: list[ReleaseTask], generic: list[str]) -> list[Case]:
    return release_cases(tasks, generic, foreign_per_task=TRAIN_FOREIGN_PER_TASK)


def fit(base: HybridMatcher, cases: list[Case], aim: dict[str, float] | None = None) -> HybridModel:
    """``base``'s features weighted by the fit on ``cases``, with the lowest acceptance threshold
    of :data:`ACCEPT_GRID` that keeps the figures on ``cases`` within ``aim``."""
    w, reject = fit_logit(training_rows(base, cases), len(base.model.features))
    model = replace(base.model, weights=tuple(float(x) for x in w), reject=reject)
    for accept in ACCEPT_GRID:
        if meets(tally_cases(base.with_model(replace(model, accept=accept)), cases), aim or AIM):
            return replace(model, accept=accept)
    return replace(model, accept=ACCEPT_GRID[-1])


def cross_validate(base: HybridMatcher, tasks: list[ReleaseTask], generic: list[str]) -> dict[str, Any]:
    """Fit on one half (tasks and generic questions), measure on the other, both ways.
    -> {"folds": [each half's fitted model], "pooled": Tallies at each fold's own threshold,
    "curve": {accept: Tallies at that threshold, each fold's weights}}."""
    folds: list[dict[str, Any]] = []
    pooled: Tallies = {}
    curve: dict[float, Tallies] = {}
    half = task_halves(tasks)
    for h in (0, 1):
        def part(keep: bool, h: int = h) -> tuple[list[ReleaseTask], list[str]]:
            return ([t for t in tasks if (half[t.task_id] == h) == keep],
                    [q for q in generic if (question_half(q) == h) == keep])

        model = fit(base, training_cases(*part(True)))
        folds.append({"fitted_on_half": h, **model.as_data()})
        test = release_cases(*part(False))
        for accept in ACCEPT_GRID:
            t = tally_cases(base.with_model(replace(model, accept=accept)), test)
            add_tallies(curve.setdefault(accept, {}), t)
            if accept == model.accept:
                add_tallies(pooled, t)
    return {"folds": folds, "pooled": pooled, "curve": curve}


def write_model(model: HybridModel, path: Path) -> None:
    """Replace the ``model:`` block (the file's last) of the hybrid matcher's data file, keeping
    its comments and its embedder block."""
    text = path.read_text()
    head = text[:text.index("\nmodel:") + 1]
    block = yaml.safe_dump({"model": model.as_data()}, sort_keys=False, default_flow_style=None, width=120)
    path.write_text(head + block)
