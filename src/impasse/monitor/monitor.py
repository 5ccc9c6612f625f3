"""The evidence monitor: harness-side rules over runtime tool output that notice when the agent
already holds the evidence of a blocker, and say so once, with a pre-filled ticket.

Usable from any harness::

    mon = Monitor()
    for call, output, exit_code in steps:
        nudge = mon.observe({"name": "bash", "arguments": {"command": cmd}}, output, exit_code)
        if nudge:
            messages.append({"role": "user", "content": nudge.text})

The agent stays free to continue, escalate, or complete unverified. Cost is a few regex
searches per step (see benchmarks/monitor_cost.py).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, model_validator

from impasse.conditions.cards import Check
from impasse.facts import fact, related, subject_paths
from impasse.layout import BENCHMARK, Workspace
from impasse.steps import Alternatives, CNFTracker, Step, plan
from impasse.tickets.ticket import Blocker, Progress, Request, Ticket

NUDGE_MARKER = "[impasse monitor]"
TEST_COMMAND = r"\b(pytest|py\.test|unittest|tox|nox)\b"
"""A bash command that runs tests (the ticket's verification status quotes the last one)."""
_TEST_CMD = Alternatives.of(TEST_COMMAND, 0)
_SUMMARY = re.compile(r"\b(\d+ (passed|failed|errors?)[^\n]*)")
_SUMMARY_WORDS = (" passed", " failed", " error")
_ERROR_WORDS = ("error", "denied", "not permitted", "no space", "read-only", "killed", "busy", "unavailable",
                "no module", "failed")
_PATH = re.compile(r"'(/[^']+|[\w./-]+\.\w+)'|(/workspace/\S+|[\w./-]+\.py)\b")


class Rule(BaseModel):
    id: str
    advice: Literal["escalate", "complete_unverified", "report_mismatch"]
    summary: str
    when: list[list[str]]
    resume: str
    same_path: bool = False
    """Hold only when a step of the first group and a step of each other group are about the same
    path or its directory (a denial on one path plus root ownership of another is not evidence)."""


class RuleSet(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: str
    patterns: dict[str, Check]
    rules: list[Rule]

    @model_validator(mode="after")
    def _known_patterns(self) -> RuleSet:
        for rule in self.rules:
            if unknown := sorted({n for g in rule.when for n in g} - set(self.patterns)):
                raise ValueError(f"rule {rule.id!r} names unknown pattern(s) {unknown}")
        return self


def default_rules() -> RuleSet:
    """The shipped rule set plus the rules beside any card (``NAME.monitor.yaml``, see
    :mod:`impasse.conditions.cards`), read once and shared by every monitor (treat it as read-only)."""
    from impasse.conditions.cards import CARDS_PATH

    return _rules(os.environ.get(CARDS_PATH, ""))


@cache
def _rules(_cards_path: str) -> RuleSet:
    from impasse.conditions.cards import card_files

    text = resources.files("impasse.monitor").joinpath("rules.yaml").read_text()
    rules = RuleSet.model_validate(yaml.safe_load(text))
    for card_file in card_files():
        extra = card_file.with_name(f"{card_file.stem}.monitor.yaml")
        if extra.exists():
            rules = merged(rules, extra)
    return rules


def merged(rules: RuleSet, path: Path) -> RuleSet:
    """``rules`` plus the patterns and rules of one card's monitor file (its ``version`` joins the
    set's, so a run's manifest names every rule file it used). Names may not collide."""
    from pydantic import ValidationError

    try:
        data = yaml.safe_load(path.read_text()) or {}
        extra = RuleSet.model_validate({"patterns": {**rules.patterns, **(data.get("patterns") or {})},
                                         "rules": data.get("rules") or [],
                                         "version": str(data.get("version", "1"))})
    except (OSError, yaml.YAMLError, AttributeError, ValidationError) as e:
        raise ValueError(f"monitor rules {path}: {e}") from None
    if clash := sorted(set(rules.patterns) & set(data.get("patterns") or {})):
        raise ValueError(f"monitor rules {path}: pattern(s) {clash} are already defined; give them new names")
    if clash := sorted({r.id for r in rules.rules} & {r.id for r in extra.rules}):
        raise ValueError(f"monitor rules {path}: rule(s) {clash} are already defined; give them new names")
    return RuleSet(version=f"{rules.version}+{path.stem.removesuffix('.monitor')}.{extra.version}",
                   patterns=extra.patterns, rules=[*rules.rules, *extra.rules])


@dataclass
class Nudge:
    rule: str
    advice: str
    step: int
    text: str
    ticket: Ticket | None = None

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "advice": self.advice, "step": self.step, "text": self.text,
                "ticket": self.ticket.model_dump() if self.ticket else None}


@dataclass
class Monitor:
    """Feed it every step; it returns at most one nudge per rule."""

    rules: RuleSet = field(default_factory=default_rules)
    diff_provider: Callable[[], str] | None = None
    """Optional: returns the workspace diff, so the pre-filled ticket can list saved changes."""
    escalation_available: bool = True
    workspace: Workspace = BENCHMARK
    """Where the agent works: the benchmark's layout, or a project directory (the hook's cwd)."""

    def __post_init__(self) -> None:
        self._names = {r.id: {n for g in r.when for n in g} for r in self.rules.rules}
        path_patterns = set().union(*(self._names[r.id] for r in self.rules.rules if r.same_path))
        self.tracker = CNFTracker(self.rules.patterns, every=path_patterns)
        self.steps: list[Step] = []
        self.fired: set[str] = set()
        self.last_test: Step | None = None
        self.paths: dict[str, set[str]] = {n: set() for n in path_patterns}
        """pattern name -> paths the steps it matched are about (for ``same_path`` rules); read off
        lazily, only once such a rule's patterns all hold, so ordinary steps pay nothing"""
        self._noted = dict.fromkeys(path_patterns, 0)
        self._errors: dict[int, str] = {}
        self._quotes: dict[tuple[str, int], str] = {}

    def observe(self, tool_call: dict[str, Any], output: str, exit_code: int | None = None,
                cwd: str | None = None) -> Nudge | None:
        """Feed one step; ``cwd`` is the directory the call ran in, when the harness says (relative
        paths in its command and output are read against it)."""
        args = tool_call.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                args = {"raw": args}
        where = self.workspace if cwd is None or cwd == self.workspace.cwd else replace(self.workspace, cwd=cwd)
        step = Step(len(self.steps) + 1, tool_call.get("name", ""), args, output, exit_code, where)
        self.steps.append(step)
        newly = self.tracker.feed(step)
        if step.tool == "bash" and _TEST_CMD.search(step.command, step.folded_command):
            self.last_test = step
        for rule in self.rules.rules:
            if rule.id in self.fired or not (rule.same_path or self._names[rule.id].intersection(newly)):
                continue  # a rule starts to hold only with a new pattern of its own, or (same_path) a new path
            if self.tracker.holds(rule.when) and self._same_path(rule):
                self.fired.add(rule.id)
                return self._nudge(rule, step)
        return None

    def _note_paths(self) -> None:
        """Add the paths of the steps the same_path patterns matched since the last call."""
        for name, matched in self.tracker.matched.items():
            p = self.rules.patterns[name]
            for i in matched[self._noted[name]:]:
                step = self.steps[i - 1]
                self.paths[name] |= (fact(p.fact, step) if p.fact else None) or subject_paths(step)
            self._noted[name] = len(matched)

    def _same_path(self, rule: Rule) -> bool:
        if not rule.same_path:
            return True
        self._note_paths()
        first = {p for n in rule.when[0] for p in self.paths[n]}
        return all(any(related(a, b) for a in first for n in group for b in self.paths[n])
                   for group in rule.when[1:])

    # ------------------------------------------------------------------ nudge text
    def _error(self, step: Step) -> str:
        """:func:`_first_error` of the step's output, once per step: a nudge quotes the same
        step several times (evidence, attempts, verification)."""
        if step.index not in self._errors:
            self._errors[step.index] = _first_error(step.output)
        return self._errors[step.index]

    def _evidence_line(self, rule: Rule, step: Step) -> str:
        """The output line that made ``step`` evidence for ``rule`` (what a human should read);
        once per rule and step, as the nudge and its ticket both quote it."""
        key = (rule.id, step.index)
        if key not in self._quotes:
            self._quotes[key] = self._quote(rule, step)
        return self._quotes[key]

    def _quote(self, rule: Rule, step: Step) -> str:
        folded = step.folded_output if len(step.folded_output) == len(step.output) else None
        for name in (n for group in rule.when for n in group if self.tracker.first_step.get(n) == step.index):
            for part in plan(self.rules.patterns[name]).parts:
                line = part.first_line(step.output, folded) if part.field == "output" and part.keep else None
                # a line with progress output (carriage returns) is quoted from its matching piece
                piece = next((p for p in (line or "").splitlines() if part.regex.search(p)), line)
                if piece and piece.strip():
                    return _short(piece.strip(), 160)
        return self._error(step)

    def _evidence(self, rule: Rule) -> list[Step]:
        idx = sorted({self.tracker.first_step[n] for n in self._names[rule.id] if n in self.tracker.first_step})
        return [self.steps[i - 1] for i in idx]

    def _nudge(self, rule: Rule, step: Step) -> Nudge:
        evidence = self._evidence(rule)
        lines = [f"- step {s.index}: `{_short(s.command)}` -> {self._evidence_line(rule, s)}" for s in evidence]
        head = f"{NUDGE_MARKER} Your own tool output shows that {rule.summary}:\n" + "\n".join(lines)
        if rule.advice == "escalate":
            ticket = self.prefilled_ticket(rule, evidence)
            if self.escalation_available:
                tail = ("Review what work is still possible without this. If none is, you may call "
                        "escalate_to_human. A pre-filled ticket is below: check and correct it (especially "
                        "progress) before you use it.\n" + ticket.model_dump_json(indent=1))
            else:
                tail = "Review what work is still possible without this, and stop once nothing is."
            return Nudge(rule.id, rule.advice, step.index, f"{head}\n{tail}", ticket)
        if rule.advice == "complete_unverified":
            tail = ("The environment, not your change, is what fails. Finish the edit you can make, then call "
                    "task_complete with verified=false and say what could not be verified. No escalation is "
                    "needed for this.")
        else:
            tail = ("Check whether the reported behaviour still fails. If it does not, report that with "
                    "task_complete (say the defect is already absent); there is nothing to escalate.")
        return Nudge(rule.id, rule.advice, step.index, f"{head}\n{tail}")

    @property
    def verification(self) -> str:
        """What the test runs seen so far say, for the ticket's verification status."""
        step = self.last_test
        if step is None:
            return "no test run observed yet"
        tail = "\n".join(step.output.rsplit("\n", 6)[-6:])  # pytest's summary is at the end
        m = _SUMMARY.search(tail) if any(w in tail for w in _SUMMARY_WORDS) else None
        if m:
            return f"last test run (step {step.index}): {m.group(1).strip()}"
        return f"last test run (step {step.index}) did not complete: {self._error(step)}"

    def prefilled_ticket(self, rule: Rule, evidence: list[Step]) -> Ticket:
        contact = evidence[0] if evidence else self.steps[-1]
        error = self._evidence_line(rule, contact)
        target = _target(contact, error)
        tried = [f"`{_short(s.command)}` -> {self._error(s)}"
                 for s in [s for s in self.steps[contact.index:] if s.tool in ("bash", "edit_file")][-6:]]
        diff = self.diff_provider() if self.diff_provider else ""
        files = re.findall(r"^diff --git a/(\S+)", diff, re.M)
        saved = f"modified {', '.join(files)} (kept in the workspace)" if files else "no saved changes in the workspace"
        # model_construct: every field is built here with its type; the lenient validation is for
        # tickets that models write, and costs a nudge as much as the rest of it
        return Ticket.model_construct(
            blocker=Blocker.model_construct(failed_operation=f"`{_short(contact.command)}`", affected_target=target,
                                            error_feedback=error),
            evidence=[f"step {s.index}: `{_short(s.command)}` -> {self._evidence_line(rule, s)}" for s in evidence],
            recovery_attempts=tried,
            request=Request.model_construct(assistance_needed=f"clear the blocker: {rule.summary}",
                                            scope=f"only the environment around {target}; do not change the code or tests"),
            resume_condition=rule.resume,
            progress=Progress.model_construct(saved_changes=saved,
                                              unfinished_work="finish and verify the fix once the blocker is cleared",
                                              verification_status=self.verification))


def _short(text: str, n: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _first_error(output: str) -> str:
    """The first line naming an error (else the last line). The whole output is searched once
    per word, not split into lines first: outputs run to many kB."""
    text = output.strip()
    low = text.lower()
    first = len(low)
    for w in _ERROR_WORDS:  # each word only up to the earliest hit so far
        i = low.find(w, 0, first + len(w) - 1)
        first = first if i == -1 else i
    if first == len(low):
        lines = text.splitlines()
        return _short(lines[-1].strip(), 160) if lines else "(no output)"
    if len(low) != len(text):  # a character lower-cases to two: offsets differ, go line by line
        return next(_short(ln.strip(), 160) for ln in text.splitlines() if any(w in ln.lower() for w in _ERROR_WORDS))
    line = text[text.rfind("\n", 0, first) + 1:]
    line = line.split("\n", 1)[0]
    # the piece the hit is in, when the line holds other line breaks (progress bars' \r)
    piece = next(p for p in line.splitlines() if any(w in p.lower() for w in _ERROR_WORDS))
    return _short(piece.strip(), 160)


def _target(step: Step, error: str) -> str:
    m = re.search(r"No module named '([\w.]+)'", error)
    if m:
        return f"Python module {m.group(1)} (not installed)"
    m = _PATH.search(error)
    if m:
        return m.group(1) or m.group(2)
    m = _PATH.search(step.command)
    return (m.group(1) or m.group(2)) if m else _short(step.command, 60)
