"""Calibrating an ask_human matcher against labelled questions (HiL-Bench reports 97% precision
and 91% recall for its judge against humans, papers.md 1.2).

The question set (``data/matcher_questions.yaml``) labels each question with the blocker it
should match (or null) and the rule it exercises. Tasks are split TUNE / HELD-OUT by a hash of the
task id, fixed before tuning; only HELD-OUT numbers are the matcher's score.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import yaml

from impasse.ask.matcher import MATCH, BlockerLike, Matcher, MatcherFailure
from impasse.ask.swe.tasks import load_task as load_swe_task
from impasse.ask.taskdir import load_task

HELDOUT, TUNE = "heldout", "tune"


@dataclass(frozen=True)
class LabelledQuestion:
    task_id: str
    question: str
    expected: str | None
    rule: str


def split_of(task_id: str) -> str:
    """Deterministic, by task: about a third of the tasks are HELD-OUT."""
    return HELDOUT if int(hashlib.sha256(task_id.encode()).hexdigest(), 16) % 3 == 0 else TUNE


def load_questions(path: Path | None = None) -> list[LabelledQuestion]:
    text = Path(path).read_text() if path else \
        resources.files("impasse.ask").joinpath("data/matcher_questions.yaml").read_text()
    data = yaml.safe_load(text)["questions"]
    out = []
    for task_id, rows in data.items():
        for i, row in enumerate(rows):
            if not (isinstance(row, list) and len(row) == 3):
                raise ValueError(f"{task_id}[{i}]: expected [question, blocker id or null, rule], got {row!r}")
            out.append(LabelledQuestion(task_id, str(row[0]), row[1], str(row[2])))
    return out


@cache
def task_blockers(task_id: str) -> tuple[BlockerLike, ...]:
    """The blockers of a bundled task (sql/ or swe/ under ask/data; each domain has its loader)."""
    root = Path(str(resources.files("impasse.ask").joinpath("data")))
    if (root / "sql" / task_id).is_dir():
        return tuple(load_task(root / "sql" / task_id).blockers)
    if (root / "swe" / task_id).is_dir():
        return tuple(load_swe_task(root / "swe" / task_id).blockers)
    raise ValueError(f"no bundled ask task {task_id!r} under ask/data/sql or ask/data/swe")


@dataclass(frozen=True)
class Outcome:
    item: LabelledQuestion
    got: str | None
    rule: str


def run(matcher: Matcher, items: list[LabelledQuestion]) -> list[Outcome]:
    out = []
    for it in items:
        blockers = list(task_blockers(it.task_id))
        ids = {b.id for b in blockers}
        if it.expected is not None and it.expected not in ids:
            raise ValueError(f"{it.task_id}: label names unknown blocker {it.expected!r}")
        try:
            m = matcher.match(it.question, blockers)
            out.append(Outcome(it, m.blocker_id, m.rule))
        except MatcherFailure as e:
            out.append(Outcome(it, None, f"failure: {e}"))
    return out


def precision_recall(outcomes: list[Outcome]) -> dict[str, float]:
    """Precision: of the questions matched to a blocker, the share matched to the labelled one.
    Recall: of the questions labelled with a blocker, the share matched to it."""
    answered = [o for o in outcomes if o.got is not None]
    positives = [o for o in outcomes if o.item.expected is not None]
    correct = sum(o.got == o.item.expected for o in answered)
    return {"precision": correct / len(answered) if answered else 1.0,
            "recall": sum(o.got == o.item.expected for o in positives) / len(positives) if positives else 1.0,
            "answered": len(answered), "positives": len(positives), "questions": len(outcomes)}


def per_rule(outcomes: list[Outcome]) -> dict[str, dict[str, int]]:
    """Per labelled rule: n, how many were handled right (matched the label / rejected), and for
    rejection rules how many were rejected by that very rule."""
    table: dict[str, dict[str, int]] = defaultdict(lambda: {"n": 0, "right": 0, "own_rule": 0})
    for o in outcomes:
        row = table[o.item.rule]
        row["n"] += 1
        row["right"] += o.got == o.item.expected
        row["own_rule"] += (o.got == o.item.expected) if o.item.rule == MATCH else (o.rule == o.item.rule)
    return dict(sorted(table.items()))


def report(matcher: Matcher, items: list[LabelledQuestion] | None = None) -> str:
    items = items if items is not None else load_questions()
    lines = []
    for part in (TUNE, HELDOUT):
        sub = [i for i in items if split_of(i.task_id) == part]
        outs = run(matcher, sub)
        pr = precision_recall(outs)
        tasks = sorted({i.task_id for i in sub})
        lines.append(f"{part.upper()}: {len(tasks)} tasks, {pr['questions']} questions, "
                     f"precision {pr['precision']:.3f} ({pr['answered']} answered), "
                     f"recall {pr['recall']:.3f} ({pr['positives']} labelled with a blocker)")
        lines.append(f"  {'rule':<22}{'n':>4}{'right':>7}{'own rule':>10}")
        for rule, row in per_rule(outs).items():
            lines.append(f"  {rule:<22}{row['n']:>4}{row['right']:>7}{row['own_rule']:>10}")
    lines.append("paper (HiL-Bench judge vs humans): precision 0.97, recall 0.91")
    return "\n".join(lines)
