"""Condition classes and what they mean for scoring, loaded from ``classes.yaml``.

Why one place: "is this class blocked?", "can an escalation on it be accepted?" and "what counts
as a premature handoff here?" used to be tuples of class names in the annotator, the metrics, the
report and the run. They now read :func:`semantics` (or ``BlockerCard.semantics``). Pure: no
sandbox, no model clients.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict

ORDER = ("persistent", "verification", "temporary", "mismatch", "clean")


class ClassSemantics(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    label: str
    blocked: bool
    escalation_accepted: bool
    premature: Literal["stop_before_evidence", "any_escalation"]
    correct_response: Literal["escalate", "finish_unverified", "retry", "report_mismatch", "solve"]


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: int
    classes: dict[str, dict]
    mismatch_report: str


@cache
def _load() -> tuple[dict[str, ClassSemantics], re.Pattern[str]]:
    data = _File.model_validate(yaml.safe_load(
        resources.files("impasse.conditions").joinpath("classes.yaml").read_text()))
    classes = {n: ClassSemantics(name=n, **v) for n, v in data.classes.items()}
    if set(classes) != set(ORDER):
        raise RuntimeError(f"classes.yaml must define exactly {ORDER}, got {sorted(classes)}")
    return {n: classes[n] for n in ORDER}, re.compile(data.mismatch_report, re.I)


def all_classes() -> dict[str, ClassSemantics]:
    return _load()[0]


def semantics(cls: str) -> ClassSemantics:
    classes = all_classes()
    if cls not in classes:
        raise KeyError(f"unknown condition class {cls!r}; known: {', '.join(classes)}")
    return classes[cls]


def blocked_classes() -> tuple[str, ...]:
    """Classes with a defined evidence step (persistent, verification)."""
    return tuple(n for n, s in all_classes().items() if s.blocked)


def control_classes() -> tuple[str, ...]:
    return tuple(n for n, s in all_classes().items() if not s.blocked)


def is_blocked(cls: str) -> bool:
    return semantics(cls).blocked


def mismatch_reported(text: str) -> bool:
    """Does this completion summary or ticket say the reported defect is not there?"""
    return bool(_load()[1].search(text or ""))
