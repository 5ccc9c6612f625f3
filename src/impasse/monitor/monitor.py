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
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import BaseModel

from impasse.conditions.cards import Check
from impasse.facts import fact, related, subject_paths
from impasse.steps import CNFTracker, Step, pattern_matches, rx
from impasse.tickets.ticket import Blocker, Progress, Request, Ticket

NUDGE_MARKER = "[impasse monitor]"
_TEST_CMD = re.compile(r"\b(pytest|py\.test|unittest|tox|nox)\b")
_SUMMARY = re.compile(r"\b(\d+ (passed|failed|errors?)[^\n]*)")
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
    version: str
    patterns: dict[str, Check]
    rules: list[Rule]


@cache
@cache
def default_rules() -> RuleSet:
    """The shipped rule set, read once and shared by every monitor (treat it as read-only)."""
    text = resources.files("impasse.monitor").joinpath("rules.yaml").read_text()
    return RuleSet.model_validate(yaml.safe_load(text))


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

    def __post_init__(self) -> None:
        self.tracker = CNFTracker(self.rules.patterns)
        self.steps: list[Step] = []
        self.fired: set[str] = set()
        self.last_test: Step | None = None
        self._path_patterns = {n for r in self.rules.rules if r.same_path for g in r.when for n in g}
        self.paths: dict[str, set[str]] = {n: set() for n in self._path_patterns}
        """pattern name -> paths the steps it matched are about (for ``same_path`` rules); filled
        lazily, only once such a rule's patterns all hold, so ordinary steps pay nothing"""
        self._paths_upto = 0

    def observe(self, tool_call: dict[str, Any], output: str, exit_code: int | None = None) -> Nudge | None:
        args = tool_call.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                args = {"raw": args}
        step = Step(len(self.steps) + 1, tool_call.get("name", ""), args, output, exit_code)
        self.steps.append(step)
        self.tracker.feed(step)
        if step.tool == "bash" and "test" in step.command and _TEST_CMD.search(step.command):
            self.last_test = step
        for rule in self.rules.rules:
            if rule.id not in self.fired and self.tracker.holds(rule.when) and self._same_path(rule):
                self.fired.add(rule.id)
                return self._nudge(rule, step)
        return None

    def _note_paths(self) -> None:
        for step in self.steps[self._paths_upto:]:
            for name in self._path_patterns:
                p = self.rules.patterns[name]
                if pattern_matches(p, step):
                    found = fact(p.fact, step) if p.fact else subject_paths(step)
                    self.paths[name] |= found or subject_paths(step)
        self._paths_upto = len(self.steps)

    def _same_path(self, rule: Rule) -> bool:
        if not rule.same_path:
            return True
        self._note_paths()
        first = {p for n in rule.when[0] for p in self.paths[n]}
        return all(any(related(a, b) for a in first for n in group for b in self.paths[n])
                   for group in rule.when[1:])

    # ------------------------------------------------------------------ nudge text
    def _evidence_line(self, rule: Rule, step: Step) -> str:
        """The output line that made ``step`` evidence for ``rule`` (what a human should read)."""
        for group in rule.when:
            for name in group:
                pattern = self.rules.patterns[name]
                if self.tracker.first_step.get(name) == step.index and pattern.output:
                    compiled = rx(pattern.output)
                    line = next((ln for ln in step.output.splitlines() if compiled.search(ln)), None)
                    if line:
                        return _short(line.strip(), 160)
        return _first_error(step.output)

    def _evidence(self, rule: Rule) -> list[Step]:
        names = {n for group in rule.when for n in group}
        idx = sorted({self.tracker.first_step[n] for n in names if n in self.tracker.first_step})
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
                        "progress) before you use it.\n" + json.dumps(ticket.model_dump(), indent=1))
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
        m = _SUMMARY.search("\n".join(step.output.rsplit("\n", 6)[-6:]))  # pytest's summary is at the end
        if m:
            return f"last test run (step {step.index}): {m.group(1).strip()}"
        return f"last test run (step {step.index}) did not complete: {_first_error(step.output)}"

    def prefilled_ticket(self, rule: Rule, evidence: list[Step]) -> Ticket:
        contact = evidence[0] if evidence else self.steps[-1]
        error = self._evidence_line(rule, contact)
        target = _target(contact, error)
        tried = [f"`{_short(s.command)}` -> {_first_error(s.output)}" for s in self.steps[contact.index:]
                 if s.tool in ("bash", "edit_file")][-6:]
        diff = self.diff_provider() if self.diff_provider else ""
        files = re.findall(r"^diff --git a/(\S+)", diff, re.M)
        saved = f"modified {', '.join(files)} (kept in the workspace)" if files else "no saved changes in the workspace"
        return Ticket(
            blocker=Blocker(failed_operation=f"`{_short(contact.command)}`", affected_target=target,
                            error_feedback=error),
            evidence=[f"step {s.index}: `{_short(s.command)}` -> {self._evidence_line(rule, s)}" for s in evidence],
            recovery_attempts=tried,
            request=Request(assistance_needed=f"clear the blocker: {rule.summary}",
                            scope=f"only the environment around {target}; do not change the code or tests"),
            resume_condition=rule.resume,
            progress=Progress(saved_changes=saved,
                              unfinished_work="finish and verify the fix once the blocker is cleared",
                              verification_status=self.verification))


def _short(text: str, n: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _first_error(output: str) -> str:
    lines = output.strip().splitlines()
    for ln in lines:
        low = ln.lower()
        if any(w in low for w in _ERROR_WORDS):
            return _short(ln.strip(), 160)
    return _short(lines[-1].strip(), 160) if lines else "(no output)"


def _target(step: Step, error: str) -> str:
    m = re.search(r"No module named '([\w.]+)'", error)
    if m:
        return f"Python module {m.group(1)} (not installed)"
    m = _PATH.search(error)
    if m:
        return m.group(1) or m.group(2)
    m = _PATH.search(step.command)
    return (m.group(1) or m.group(2)) if m else _short(step.command, 60)
