"""Calibrating an ask_human matcher against labelled questions (HiL-Bench reports 97% precision
and 91% recall for its judge against humans, papers.md 1.2).

The question set (``data/matcher_questions.yaml``) labels each question with the blocker it
should match (or null) and the rule it exercises. Tasks are split TUNE / HELD-OUT by a hash of the
task id, fixed before tuning; only HELD-OUT numbers are the matcher's score.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

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


# ------------------------------------------------------------------ HiL-Bench's public registries

EVEN = "even"


@dataclass(frozen=True)
class ReleaseBlocker:
    """A blocker as a matcher sees it (no resolution is needed to judge a question)."""

    id: str
    description: str
    example_questions: list[str]
    location: str = ""


@dataclass(frozen=True)
class ReleaseTask:
    task_id: str
    domain: str
    group: str
    """What the task is written against (SQL: its database; SWE: its repository): cross-task
    negatives come from another group, so that they truly belong elsewhere."""
    blockers: tuple[ReleaseBlocker, ...]


def release_registries(root: Path, parity: str = EVEN) -> list[ReleaseTask]:
    """The blocker registries of the **even-numbered** tasks of a HiL-Bench release checkout
    (``harbor_sql/sql_<n>``, ``harbor_swe/swe_<n>``). The odd-numbered ones are the project's
    untouched check: this function never opens them, and no other parity is offered."""
    if parity != EVEN:
        raise ValueError("only the even-numbered registries are for calibration; the odd ones stay unread")
    out = []
    for domain in ("sql", "swe"):
        base = Path(root) / f"harbor_{domain}"
        dirs = sorted((d for d in base.glob(f"{domain}_*") if d.name.split("_")[-1].isdigit()),
                      key=lambda d: int(d.name.split("_")[-1]))
        for d in dirs:
            if int(d.name.split("_")[-1]) % 2:
                continue
            meta = json.loads((d / "shared" / "metadata.json").read_text())
            reg = json.loads((d / "shared" / "ask-human-data" / "blocker_registry.json").read_text())
            blockers = tuple(ReleaseBlocker(str(b["id"]), str(b["description"]),
                                             [str(q) for q in b.get("example_questions") or []],
                                             str(b.get("type", ""))) for b in reg["blockers"])
            group = meta.get("database_name") or meta.get("repo_name_source") or d.name
            out.append(ReleaseTask(d.name, domain, str(group), blockers))
    if not out:
        raise ValueError(f"{root}: no harbor_sql/sql_<n> or harbor_swe/swe_<n> task directories (a checkout of "
                         "hilbenchauthors/hil-bench is expected)")
    return out


def without_example(blockers: tuple[ReleaseBlocker, ...], bid: str, k: int) -> list[ReleaseBlocker]:
    return [replace(b, example_questions=[q for j, q in enumerate(b.example_questions) if j != k])
            if b.id == bid else b for b in blockers]


@dataclass
class Tally:
    n: int = 0
    right: int = 0
    wrong: int = 0
    """Matched to a blocker other than the one it belongs to (for negatives: any match)."""

    def add(self, got: str | None, want: str | None) -> None:
        self.n += 1
        if got is not None and got == want:
            self.right += 1
        elif got is not None:
            self.wrong += 1

    @property
    def recall(self) -> float:
        return self.right / self.n if self.n else 0.0

    @property
    def wrong_rate(self) -> float:
        return self.wrong / self.n if self.n else 0.0


KINDS = ("loo", "foreign", "generic")


@dataclass(frozen=True)
class Case:
    """One question asked of one task's blockers, and what a right judge answers."""

    kind: str
    """``loo`` (an example question, left out of its blocker), ``foreign`` (another task's), ``generic``."""
    domain: str
    question: str
    blockers: tuple[Any, ...]
    want: str | None


def release_cases(tasks: list[ReleaseTask], generic: list[str], foreign_per_task: int = 1) -> list[Case]:
    """The calibration's questions over ``tasks``:

    * leave-one-out: every example question asked with itself removed from its blocker's examples
      (the right answer: that blocker);
    * foreign: every task's example questions asked of the next ``foreign_per_task`` tasks of its
      domain (among ``tasks``) written against another database or repository (any answer is wrong);
    * generic: every question of ``generic`` (naming nothing task-specific) asked of every task."""
    out: list[Case] = []
    for i, t in enumerate(tasks):
        for b in t.blockers:
            for k, q in enumerate(b.example_questions):
                out.append(Case("loo", t.domain, q, tuple(without_example(t.blockers, b.id, k)), b.id))
        others = [u for u in tasks[i + 1:] + tasks[:i] if u.domain == t.domain and u.group != t.group]
        for u in others[:foreign_per_task]:
            out += [Case("foreign", t.domain, q, u.blockers, None) for b in t.blockers for q in b.example_questions]
        out += [Case("generic", t.domain, q, t.blockers, None) for q in generic]
    return out


Tallies = dict[str, dict[str, Tally]]
"""kind (loo, foreign, generic) -> domain (sql, swe and the pooled ``both``) -> Tally."""


def tally_cases(matcher: Matcher, cases: list[Case]) -> Tallies:
    out: dict[str, dict[str, Tally]] = defaultdict(lambda: defaultdict(Tally))
    for c in cases:
        got = _safe(matcher, c.question, list(c.blockers))
        out[c.kind][c.domain].add(got, c.want)
        out[c.kind]["both"].add(got, c.want)
    return {k: dict(v) for k, v in out.items()}


def add_tallies(into: Tallies, t: Tallies) -> Tallies:
    for kind, per in t.items():
        for dom, x in per.items():
            acc = into.setdefault(kind, {}).setdefault(dom, Tally())
            acc.n, acc.right, acc.wrong = acc.n + x.n, acc.right + x.right, acc.wrong + x.wrong
    return into


def _per_domain(t: Tallies, kind: str) -> dict[str, Tally]:
    return {d: x for d, x in t.get(kind, {}).items() if d != "both"}


def leave_one_out(matcher: Matcher, tasks: list[ReleaseTask]) -> dict[str, Tally]:
    """Each example question asked with itself removed from its blocker's examples; per domain."""
    return _per_domain(tally_cases(matcher, release_cases(tasks, [], foreign_per_task=0)), "loo")


def _safe(matcher: Matcher, q: str, blockers: list[Any]) -> str | None:
    try:
        return matcher.match(q, blockers).blocker_id
    except MatcherFailure:
        return None


def foreign_questions(matcher: Matcher, tasks: list[ReleaseTask]) -> dict[str, Tally]:
    """Every example question of each task asked against the next task of its domain written
    against another database or repository (the question belongs to another task): any match is
    wrong."""
    cases = [c for c in release_cases(tasks, []) if c.kind == "foreign"]
    return _per_domain(tally_cases(matcher, cases), "foreign")


def generic_questions(path: Path | None = None) -> list[str]:
    text = Path(path).read_text() if path else \
        resources.files("impasse.ask").joinpath("data/matcher_generic_questions.yaml").read_text()
    return [str(q) for q in yaml.safe_load(text)["questions"]]


def generic_acceptance(matcher: Matcher, tasks: list[ReleaseTask], questions: list[str] | None = None) -> dict[str, Tally]:
    """Questions naming nothing task-specific, asked against every task: any match is wrong."""
    qs = questions if questions is not None else generic_questions()
    cases = [c for c in release_cases(tasks, qs, foreign_per_task=0) if c.kind == "generic"]
    return _per_domain(tally_cases(matcher, cases), "generic")


def tally_lines(t: Tallies, indent: str = "  ") -> list[str]:
    lines = []
    for dom in ("sql", "swe", "both"):
        if x := t.get("loo", {}).get(dom):
            lines.append(f"{indent}leave-one-out {dom:<4} n={x.n:<5} recall {x.recall:.3f}  wrong blocker "
                         f"{x.wrong_rate:.3f}")
    for kind in ("foreign", "generic"):
        for dom in ("sql", "swe", "both"):
            if x := t.get(kind, {}).get(dom):
                lines.append(f"{indent}{kind + ' questions':<17} {dom:<4} n={x.n:<5} accepted {x.wrong_rate:.3f}")
    return lines


def tally_numbers(t: Tallies) -> dict[str, Any]:
    return {f"{kind}.{dom}": {"n": x.n, "recall": x.recall, "wrong": x.wrong_rate}
            for kind, per in t.items() for dom, x in per.items()}


def release_report(matcher: Matcher, root: Path) -> tuple[str, dict[str, Any]]:
    """The three release figures per domain and pooled, as text and as numbers."""
    tasks = release_registries(root)
    t = tally_cases(matcher, release_cases(tasks, generic_questions()))
    head = (f"HiL-Bench release, even-numbered registries: {sum(x.domain == 'sql' for x in tasks)} SQL + "
            f"{sum(x.domain == 'swe' for x in tasks)} SWE tasks")
    return "\n".join([head, *tally_lines(t)]), tally_numbers(t)
