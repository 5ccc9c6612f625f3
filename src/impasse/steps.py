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

from impasse.facts import fact as _fact

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

    # Plain properties caching into the instance dict: functools.cached_property takes a lock on
    # every access in Python 3.11, which showed up as the annotator's top cost.
    @property
    def lower_command(self) -> str:
        d = self.__dict__
        if "_lower_command" not in d:
            d["_lower_command"] = self.command.lower()
        return d["_lower_command"]

    @property
    def lower_output(self) -> str:
        d = self.__dict__
        if "_lower_output" not in d:
            d["_lower_output"] = self.output.lower()
        return d["_lower_output"]

    def lines(self, field: str) -> tuple[list[str], list[str]]:
        """(lines, lower-cased lines) of ``command`` or ``output``, split once per step."""
        cache = self.__dict__.setdefault("_lines", {})
        if field not in cache:
            cache[field] = (getattr(self, field).split("\n"), getattr(self, "lower_" + field).split("\n"))
        return cache[field]

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


@lru_cache(maxsize=4096)
def required_literals(pattern: str) -> tuple[tuple[str, ...], ...]:
    """Lower-cased literal sets read off ``pattern``: every match contains at least one string
    of *each* set. A few substring tests (C speed) then rule out most texts before the regex
    engine runs; the annotator's outputs are long and rarely match. Empty = no prefilter."""
    from re import _constants as c
    from re import _parser

    def best(sets: list[tuple[str, ...]]) -> tuple[str, ...] | None:
        # the most selective set: long strings, and digits/punctuation (rarer than words)
        return max(sets, key=lambda s: min(len(x) + 3 * any(not ch.isalpha() for ch in x.strip()) for x in s),
                   default=None)

    def seq(items) -> list[tuple[str, ...]]:
        sets: list[tuple[str, ...]] = []
        run = ""
        for op, av in items:
            if op is c.LITERAL:
                run += chr(av)
                continue
            if len(run) >= 2:  # single characters select nothing
                sets.append((run.lower(),))
            run = ""
            if op is c.SUBPATTERN:
                sets += seq(av[-1])
            elif op is c.BRANCH:
                picks = [best(seq(b)) for b in av[1]]
                if all(picks):
                    sets.append(tuple(x for p in picks for x in p))
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT) and av[0] >= 1:
                sets += seq(av[2])
        if len(run) >= 2:
            sets.append((run.lower(),))
        return sets

    try:
        sets = seq(_parser.parse(pattern))
    except Exception:  # noqa: BLE001 - an optimisation only: fall back to the regex alone
        return ()
    return tuple(sets)


def _has_all(sets: tuple[tuple[str, ...], ...], lower: str) -> bool:
    for group in sets:  # plain loops: this runs per step and per pattern
        for x in group:
            if x in lower:
                break
        else:
            return False
    return True


def _search(pattern: str, step: Step, field: str, prechecked: bool = False) -> bool:
    """Patterns match within one line. Lines lacking a required literal are skipped without
    running the regex: outputs are long, Python's regex engine is slow on them, and most lines
    are irrelevant. (The monitor's per-step cost and the annotator's throughput depend on it.)"""
    sets = required_literals(pattern)
    compiled = rx(pattern)
    if sets and not prechecked and not _has_all(sets, getattr(step, "lower_" + field)):
        return False
    text = getattr(step, field)
    if "\n" not in text:
        return compiled.search(text) is not None
    lines, lower = step.lines(field)
    if not sets:
        return any(compiled.search(line) for line in lines)
    return any(_has_all(sets, low) and compiled.search(lines[i]) for i, low in enumerate(lower))


def pattern_matches(p: Any, step: Step) -> bool:
    """``p`` has tool / command / command_not / output / output_not / fact (a card Check or a
    monitor pattern). All given parts must hold."""
    if p.tool != "any" and p.tool != step.tool:
        return False
    if p.command is not None and not _search(p.command, step, "command"):
        return False
    if p.command_not is not None and _search(p.command_not, step, "command"):
        return False
    if p.output is not None and not _search(p.output, step, "output"):
        return False
    if p.output_not is not None and _search(p.output_not, step, "output"):
        return False
    f = getattr(p, "fact", None)
    return f is None or bool(_fact(f, step))


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


class StepTexts:
    """One trajectory's steps prepared for matching many patterns: lower-cased fields once, a
    whole-trajectory literal test per pattern, then a literal test per step before any regex
    runs (the annotator's hot path)."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = steps
        self.tools = [s.tool for s in steps]
        self.lower = {"command": [s.lower_command for s in steps], "output": [s.lower_output for s in steps]}
        self._joined: dict[str, str] = {}

    def possible(self, pattern: str, field: str) -> bool:
        sets = required_literals(pattern)
        if not sets:
            return True
        if field not in self._joined:
            self._joined[field] = "\n".join(self.lower[field])
        return _has_all(sets, self._joined[field])

    def _filter(self, cand: list[int], pattern: str, field: str, keep: bool, limit: int | None) -> list[int]:
        sets = required_literals(pattern)
        lower = self.lower[field]
        steps = self.steps
        out = []
        for i in cand:
            hit = (not sets or _has_all(sets, lower[i])) and _search(pattern, steps[i], field, prechecked=True)
            if hit == keep:
                out.append(i)
                if limit is not None and len(out) >= limit:
                    break
        return out

    def matching(self, p: Any, limit: int | None = None, upto: int | None = None) -> list[int]:
        """Sorted positions of the steps ``p`` matches (same semantics as :func:`pattern_matches`).
        With ``limit``, keep the first that many (the annotator needs only the first k); ``upto``
        ignores steps after that position."""
        for part in ("command", "output"):
            if getattr(p, part) is not None and not self.possible(getattr(p, part), part):
                return []
        n = len(self.steps) if upto is None else upto + 1
        cand = list(range(n)) if p.tool == "any" else [i for i in range(n) if self.tools[i] == p.tool]
        active = [(getattr(p, part), part.removesuffix("_not"), keep) for part, keep in
                  (("command", True), ("command_not", False), ("output", True), ("output_not", False))
                  if getattr(p, part) is not None]
        f = getattr(p, "fact", None)
        for k, (pattern, part, keep) in enumerate(active):
            if not cand:
                break
            last = k == len(active) - 1 and f is None
            cand = self._filter(cand, pattern, part, keep, limit if last else None)
        if f is not None:  # facts parse outputs: only on the steps the regexes let through
            steps = self.steps
            cand = [i for i in cand if _fact(f, steps[i])]
        return cand[:limit] if limit is not None else cand

    def first_edit(self) -> int | None:
        """Position of the first successful edit, if any."""
        return next((i for i, s in enumerate(self.steps) if s.is_edit), None)


def first_steps(patterns: dict[str, Any], texts: StepTexts) -> dict[str, int]:
    """Batch version of :class:`CNFTracker`: pattern name -> step index at which it holds."""
    first_edit = None
    need_edit = any(getattr(p, "before_first_edit", False) for p in patterns.values())
    if need_edit:
        first_edit = texts.first_edit()
    out = {}
    for name, p in patterns.items():
        k = getattr(p, "min_steps", 1)
        upto = first_edit if getattr(p, "before_first_edit", False) else None
        positions = texts.matching(p, limit=k, upto=upto)
        if len(positions) >= k:
            out[name] = texts.steps[positions[k - 1]].index
    return out
