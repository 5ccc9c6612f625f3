"""Steps and step patterns: the vocabulary shared by the annotator and the monitor.

A step is one tool call and what came back. A pattern matches a step by tool, by the call's
command (bash) or path (edit_file), and by its output. Pure: no sandbox, no model client.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

EDIT_COMMAND = re.compile(r"(\bsed\s+(-\w*\s+)*-i|\btee\b|>>?\s*[\w./-]+\.py\b|\bpatch\b|\bgit\s+apply\b|\bmv\b|\bcp\b)")


@dataclass(frozen=True)
class Step:
    index: int
    """1-based count of tool calls in the episode."""
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    output: str = ""
    exit_code: int | None = None

    @property
    def command(self) -> str:
        if self.tool == "bash":
            return str(self.arguments.get("command", ""))
        if self.tool == "edit_file":
            return str(self.arguments.get("path", ""))
        return json.dumps(self.arguments, sort_keys=True)

    @property
    def text(self) -> str:
        """Everything an edit carries (path + old + new), for rules about test files."""
        if self.tool == "edit_file":
            a = self.arguments
            return f"{a.get('path', '')}\n{a.get('old_str', '')}\n{a.get('new_str', '')}"
        return self.command

    @property
    def failed(self) -> bool:
        return (self.exit_code not in (0, None)) or self.output.startswith("Error:")

    @property
    def is_edit(self) -> bool:
        """A (successful) change to the working tree by the agent."""
        if self.tool == "edit_file":
            return not self.failed
        return self.tool == "bash" and bool(EDIT_COMMAND.search(self.command)) and not self.failed


@lru_cache(maxsize=4096)
def rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE | re.MULTILINE)


def pattern_matches(p: Any, step: Step) -> bool:
    """``p`` has tool / command / command_not / output / output_not (a card Check or a monitor
    pattern). All given parts must hold."""
    if p.tool != "any" and p.tool != step.tool:
        return False
    if p.command is not None and not rx(p.command).search(step.command):
        return False
    if p.command_not is not None and rx(p.command_not).search(step.command):
        return False
    if p.output is not None and not rx(p.output).search(step.output):
        return False
    return not (p.output_not is not None and rx(p.output_not).search(step.output))


class CNFTracker:
    """Tracks named patterns over a stream of steps and reports when an AND-of-ORs holds.

    Used by the annotator (card checks -> contact, t*) and by the monitor (rules -> nudges).
    ``min_steps`` and ``before_first_edit`` are honoured per pattern.
    """

    def __init__(self, patterns: dict[str, Any]) -> None:
        self.patterns = patterns
        self.counts: dict[str, int] = dict.fromkeys(patterns, 0)
        self.first_step: dict[str, int] = {}
        self.edited = False

    def feed(self, step: Step) -> list[str]:
        """Update with ``step``; returns the names of patterns that became satisfied at it."""
        newly = []
        for name, p in self.patterns.items():
            if name in self.first_step:
                continue
            if getattr(p, "before_first_edit", False) and self.edited:
                continue
            if pattern_matches(p, step):
                self.counts[name] += 1
                if self.counts[name] >= getattr(p, "min_steps", 1):
                    self.first_step[name] = step.index
                    newly.append(name)
        if step.is_edit:
            self.edited = True
        return newly

    def holds(self, cnf: list[list[str]]) -> bool:
        return bool(cnf) and all(any(n in self.first_step for n in group) for group in cnf)

    def any_of(self, names: list[str]) -> bool:
        return any(n in self.first_step for n in names)
