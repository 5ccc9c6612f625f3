"""Steps and step patterns: the vocabulary shared by the annotator and the monitor.

A step is one tool call and what came back. A pattern matches a step by tool, by the call's
command (bash) or path (edit_file), and by its output. Pure: no sandbox, no model client.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import accumulate
from typing import Any

from impasse.effects.checks import changes_workspace
from impasse.effects.checks import check as _effect_check
from impasse.facts import fact as _fact
from impasse.facts import word_boundary
from impasse.layout import BENCHMARK, Workspace

EDIT_COMMAND = (r"\bsed\s+(-\w*\s+)*-i|\btee\b|(?<![\d&])>>?\s*(?!&|/dev/null)[^\s|;&]|\bpatch\b"
                r"|\bgit\s+(apply|checkout|restore|rm|mv|stash|reset)\b|\bmv\b|\bcp\b|\bperl\s+-\w*i"
                r"|\bpython[\d.]*\s+(-c\b|-\s|-$|<<|[\w./-]+\.py\b)(?=[\s\S]*(?:write|open\(|shutil|remove|unlink"
                r"|rename|replace|system|subprocess|Popen|truncate|touch|mkdir|chmod))|\b(g?awk|ed|ex|vim?|dd|truncate|sponge|install"
                r"|rsync|rm|touch|ln)\b")
"""A bash command that may change files (case-sensitive): the gate before its effects are read."""


def shell_text(text: str, exit_code: int | None) -> str:
    """Shell output the way the benchmark's bash tool renders it (``[exit code: N]`` last): the
    monitor's and cards' rules read that text, so hooks and converters render foreign output so."""
    text = text.rstrip()
    if exit_code is None:
        return text
    return f"{text}\n[exit code: {exit_code}]" if text else f"[exit code: {exit_code}]"


@dataclass(frozen=True)
class Step:
    index: int
    """1-based count of tool calls in the episode."""
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    output: str = ""
    exit_code: int | None = None
    where: Workspace = BENCHMARK
    """The workspace the call ran in (its root, its starting directory, the agent's identity)."""

    @property
    def command(self) -> str:
        """What command patterns read: a bash command, an edit's path, other calls' arguments."""
        d = self.__dict__
        if "_command" not in d:
            if self.tool == "bash":
                d["_command"] = str(self.arguments.get("command", ""))
            elif self.tool == "edit_file":
                d["_command"] = str(self.arguments.get("path", ""))
            else:
                d["_command"] = json.dumps(self.arguments, sort_keys=True)
        return d["_command"]

    # Plain properties caching into the instance dict: functools.cached_property takes a lock on
    # every access in Python 3.11, which showed up as the annotator's top cost. Case-folded, not
    # lower-cased: the literal tests must see every text a case-insensitive regex matches
    # ("ς" folds to "σ"; lower() leaves it).
    @property
    def folded_command(self) -> str:
        d = self.__dict__
        if "_folded_command" not in d:
            d["_folded_command"] = self.command.casefold()
        return d["_folded_command"]

    @property
    def folded_output(self) -> str:
        d = self.__dict__
        if "_folded_output" not in d:
            d["_folded_output"] = self.output.casefold()
        return d["_folded_output"]

    @property
    def failed(self) -> bool:
        return (self.exit_code not in (0, None)) or self.output.startswith("Error:")

    @property
    def is_edit(self) -> bool:
        """A (successful) change to the working tree by the agent."""
        if self.tool == "edit_file":
            return not self.failed
        if self.tool != "bash" or self.failed or not _EDITS.search(self.command, self.folded_command):
            return False
        d = self.__dict__
        if "_is_edit" not in d:
            d["_is_edit"] = changes_workspace(self)
        return d["_is_edit"]


@lru_cache(maxsize=4096)
def rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE | re.MULTILINE)


@lru_cache(maxsize=4096)
def required_literals(pattern: str) -> tuple[tuple[str, ...], ...]:
    """Case-folded literal sets read off ``pattern``: every match contains at least one string
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
                sets.append((run.casefold(),))
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
            sets.append((run.casefold(),))
        return sets

    try:
        sets = seq(_parser.parse(pattern))
    except Exception:  # noqa: BLE001 - an optimisation only: fall back to the regex alone
        return ()
    return tuple(dict.fromkeys(_weakest(s) for s in sets))


def _weakest(group: tuple[str, ...]) -> tuple[str, ...]:
    """``group`` without repeats and without strings that hold another of its strings: a text
    holding the longer one holds the shorter, so testing both only scans the text twice."""
    uniq = dict.fromkeys(group)
    return tuple(x for x in uniq if not any(y != x and y in x for y in uniq))


def _has_all_seen(sets: tuple[tuple[str, ...], ...], folded: str, seen: dict[str, bool]) -> bool:
    """:func:`_has_all` on a whole text, remembering in ``seen`` what each literal gave: the
    patterns a step meets share many literals, and each test scans the whole (long) output."""
    for group in sets:
        for x in group:
            hit = seen.get(x)
            if hit is None:
                hit = seen[x] = x in folded
            if hit:
                break
        else:
            return False
    return True


def _has_all(sets: tuple[tuple[str, ...], ...], folded: str, start: int = 0, end: int | None = None) -> bool:
    """``folded[start:end]`` holds a string of every set (bounded ``find``s: no slice is copied;
    ``in`` for the whole string, measurably faster where most calls are)."""
    whole = start == 0 and end is None
    for group in sets:  # plain loops: this runs per step and per pattern
        for x in group:
            if (x in folded) if whole else folded.find(x, start, end) != -1:
                break
        else:
            return False
    return True


_UNSPLITTABLE = re.compile(r"\\[1-9]|\(\?P=|\(\?[aiLmsux#(-]")
"""Back-references, inline flags, comments, conditionals: a pattern using them is kept whole."""


def alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of ``pattern`` (inside one enclosing group, if that is all it
    is): ``A|B`` matches a line exactly when ``A`` or ``B`` does, and each alternative can be
    tried only where its own literals are. ``[pattern]`` when it has no such alternatives, or
    uses inline flags or back-references (which splitting would change)."""
    if _UNSPLITTABLE.search(pattern):
        return [pattern]
    body = pattern
    if body.startswith("(") and not body.startswith(("(?=", "(?!", "(?<", "(?P", "(?>")):
        closing = next((i for i, ch, depth in _scan(body) if ch == ")" and depth == 1), -1)
        if closing == len(body) - 1:
            body = body[3:-1] if body.startswith("(?:") else body[1:-1]
    bars = [i for i, ch, depth in _scan(body) if ch == "|" and depth == 0]
    if not bars:
        return [pattern]
    return [body[a + 1:b] for a, b in zip([-1, *bars], [*bars, len(body)], strict=True)]


def _scan(p: str) -> Iterator[tuple[int, str, int]]:
    """(index, character, group depth before it) of the characters of regex ``p`` that are
    neither escaped nor inside a character class."""
    depth, i = 0, 0
    while i < len(p):
        ch = p[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":  # to the class's closing ]: a leading ^ and a ] right after it are members
            i += 2 if p.startswith("[^", i) else 1
            i += p.startswith("]", i)
            while i < len(p) and p[i] != "]":
                i += 2 if p[i] == "\\" else 1
            i += 1
            continue
        yield i, ch, depth
        depth += (ch == "(") - (ch == ")")
        i += 1


_PLAIN = re.compile(r"(?:[^\\.^$*+?{}\[\]|()]|\\[^\w])+")
"""A regex that is only a literal string (escaped punctuation allowed)."""


@dataclass(frozen=True)
class Alternatives:
    """A regex kept as its top-level alternatives, each with the literal sets its matches hold.

    Python's engine tries every alternative at every position of a text, and a leading ``\\b``
    also defeats its literal-prefix search. :meth:`search` runs only the alternatives whose
    literals the case-folded text holds, each alone, and one that starts with ``\\b`` without it
    (then checks the word boundary where it matched)."""

    alts: tuple[tuple[re.Pattern[str], tuple[tuple[str, ...], ...], re.Pattern[str] | None], ...]
    """(regex, literal sets, the regex without its leading word boundaries, if it has some)"""

    @classmethod
    def of(cls, pattern: str, flags: int = re.IGNORECASE | re.MULTILINE) -> Alternatives:
        def unbounded(a: str) -> re.Pattern[str] | None:
            rest = a
            while rest.startswith("\\b"):
                rest = rest[2:]
            return re.compile(rest, flags) if rest != a and rest else None

        try:
            alts = alternatives(pattern)
            # plain-literal alternatives (a gate's "shadow|netrc|pypirc|...") searched as one: the
            # same matches, one literal scan and one regex instead of one of each per alternative
            plain = [a for a in alts if _PLAIN.fullmatch(a) and len(re.sub(r"\\(.)", r"\1", a)) >= 2]
            if len(plain) > 2:
                alts = ["|".join(plain), *(a for a in alts if a not in plain)]
            return cls(tuple((re.compile(a, flags), required_literals(a), unbounded(a)) for a in alts))
        except re.error:  # a split this reading got wrong: the whole pattern is always right
            return cls(((re.compile(pattern, flags), required_literals(pattern), None),))

    def search(self, text: str, folded: str | None = None) -> bool:
        """The regex matches somewhere in ``text``; ``folded`` is ``text`` case-folded (None:
        every alternative runs). Case folding keeps every case-sensitive match too."""
        for regex, sets, unbounded in self.alts:
            if folded is not None and not _has_all(sets, folded):
                continue
            if unbounded is None:
                if regex.search(text):
                    return True
                continue
            m = unbounded.search(text)
            while m is not None:
                if word_boundary(text, m.start()):
                    return True
                m = unbounded.search(text, m.start() + 1)
        return False


_EDITS = Alternatives.of(EDIT_COMMAND, 0)


@dataclass(frozen=True)
class Part:
    """One regex of a pattern, compiled once: the field it reads, whether it must match (``keep``)
    or must not, the literal sets that every match contains (see :func:`required_literals`), and
    the regex as :class:`Alternatives`."""

    field: str
    keep: bool
    sets: tuple[tuple[str, ...], ...]
    anchor: tuple[str, ...]
    """The set whose strings locate the lines worth searching (the longest ones)."""
    regex: Alternatives

    @classmethod
    def of(cls, pattern: str, field: str, keep: bool) -> Part:
        sets = required_literals(pattern)
        return cls(field, keep, sets, max(sets, key=lambda g: min(map(len, g)), default=()), Alternatives.of(pattern))

    def text(self, step: Step) -> str:
        return step.command if self.field == "command" else step.output

    def hits(self, step: Step, folded: str | None = None, start: int = 0) -> bool:
        """The regex matches within one line of the step's field (see :meth:`first_line`)."""
        return self.first_line(self.text(step), folded, start) is not None

    def first_line(self, text: str, folded: str | None = None, start: int = 0) -> str | None:
        """The first line of ``text`` the regex matches: patterns see one line at a time.
        ``folded[start:]`` is ``text`` case-folded, aligned with it (or None): then only the lines
        holding an anchor literal are searched (outputs are long; most lines are noise)."""
        search = self.regex.search
        if "\n" not in text:
            return text if search(text, None if folded is None else folded[start:start + len(text)]) else None
        if folded is None or not self.anchor:
            return next((line for line in text.split("\n") if search(line)), None)
        end = start + len(text)
        lines = set()
        for x in self.anchor:
            pos = folded.find(x, start, end)
            while pos != -1:
                at = text.rfind("\n", 0, pos - start) + 1
                stop = text.find("\n", pos - start)
                stop = len(text) if stop == -1 else stop
                lines.add((at, stop))
                pos = folded.find(x, start + stop + 1, end)
        return next((text[at:stop] for at, stop in sorted(lines)
                     if search(text[at:stop], folded[start + at:start + stop])), None)


@dataclass(frozen=True)
class Plan:
    """A pattern (card check, monitor rule, unsafe rule: anything with tool / command /
    command_not / output / output_not / fact) read once into what matching needs."""

    tool: str
    parts: tuple[Part, ...]
    fact: str | None
    min_steps: int
    before_first_edit: bool
    needed: tuple[Part, ...]
    """The parts that must match and have literals, commands first (short to scan): a step
    lacking one of their literals cannot match."""
    subject: re.Pattern[str] | None = None
    """The fact must be about a subject (path) this matches."""
    effect: str | None = None
    """A predicate over what the command does (impasse.effects.checks)."""

    def settles(self, step: Step) -> bool:
        """The fact (about a matching subject) and the effect check hold: run only on steps past
        the regexes, as both parse the step."""
        if self.fact is not None:
            subjects = _fact(self.fact, step)
            if not subjects or (self.subject is not None and not any(self.subject.search(x) for x in subjects)):
                return False
        return self.effect is None or _effect_check(self.effect, step)

    def matches(self, step: Step, seen: dict[str, bool] | None = None) -> bool:
        """All given parts hold (the streaming check; :class:`StepTexts` batches it). ``seen``
        (empty at first) lets the patterns tested on one step share their output literal tests."""
        if self.tool != "any" and self.tool != step.tool:
            return False
        for part in self.parts:
            if part.field == "command":
                text, folded = step.command, step.folded_command
                has = _has_all(part.sets, folded)
            else:
                text, folded = step.output, step.folded_output
                has = _has_all_seen(part.sets, folded, {} if seen is None else seen)
            if has:
                has = part.hits(step, folded if len(folded) == len(text) else None)
            if has != part.keep:
                return False
        return self.settles(step)


_PLANS: dict[int, tuple[Any, Plan]] = {}


def plan(p: Any) -> Plan:
    """``p``'s :class:`Plan`, built once per pattern object (patterns are long-lived: cards, rule
    files; a pattern is not changed once matched). Read through ``__dict__``: pydantic's fallback
    for a missing name is slow."""
    hit = _PLANS.get(id(p))
    if hit is not None and hit[0] is p:
        return hit[1]
    d = getattr(p, "__dict__", None) or {}

    def get(name: str, default: Any = None) -> Any:
        return d.get(name, default) if d else getattr(p, name, default)

    parts = tuple(Part.of(get(name), name.removesuffix("_not"), not name.endswith("_not"))
                  for name in ("command", "output", "command_not", "output_not") if get(name) is not None)
    needed = tuple(sorted((pt for pt in parts if pt.keep and pt.sets), key=lambda pt: pt.field != "command"))
    subject = get("subject")
    made = Plan(get("tool", "any"), parts, get("fact"), get("min_steps", 1), bool(get("before_first_edit", False)),
                needed, re.compile(subject) if subject else None, get("effect"))
    if len(_PLANS) > 4096:  # patterns built on the fly (tests, user rules): keep the cache bounded
        _PLANS.clear()
    _PLANS[id(p)] = (p, made)  # holding p keeps its id from being reused while cached
    return made


def pattern_matches(p: Any, step: Step) -> bool:
    """``p`` has tool / command / command_not / output / output_not / fact (a card Check or a
    monitor pattern). All given parts must hold."""
    return plan(p).matches(step)


@dataclass(frozen=True)
class _Gates:
    """The gate literals of a pattern set (the anchors of each pattern's first needed part: a
    step holding none of them cannot match), built once per pattern set."""

    command: re.Pattern[str] | None
    """The command literals, longest first, as one alternation: the engine skips to where one
    may start (a scan in C instead of one substring test per literal; a monitor has dozens)."""
    command_names: dict[str, frozenset[str]]
    """literal -> the patterns gated by it or by any literal inside it (a shorter literal found
    at the same position is inside the longer one)"""
    output: tuple[tuple[str, tuple[str, ...]], ...]
    ungated: frozenset[str]
    tools: dict[str, str] = field(default_factory=dict)
    """pattern -> the tool it is for ("any" included)"""
    _seen: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)
    """(tool, folded command) -> the patterns its command gates let through: agents repeat commands,
    and the answer depends on nothing else"""

    def by_command(self, tool: str, folded: str) -> frozenset[str]:
        key = (tool, folded)
        hit = self._seen.get(key)
        if hit is not None:
            return hit
        names, search, found = self.command_names, self.command.search, set()  # type: ignore[union-attr]
        m = search(folded)
        while m is not None:  # from one past each hit's start: literals may overlap
            found |= names[m.group()]
            m = search(folded, m.start() + 1)
        hit = frozenset(n for n in found if self.tools[n] in ("any", tool))
        if len(self._seen) > 8192:
            self._seen.clear()
        self._seen[key] = hit
        return hit


_GATES: dict[int, tuple[Any, _Gates]] = {}


def _gates(patterns: dict[str, Any], plans: dict[str, Plan]) -> _Gates:
    hit = _GATES.get(id(patterns))
    if hit is not None and hit[0] is patterns and len(patterns) == len(hit[1].ungated) + len(
            {n for ns in hit[1].command_names.values() for n in ns} | {n for _, ns in hit[1].output for n in ns}):
        return hit[1]
    fields: dict[str, dict[str, list[str]]] = {"command": {}, "output": {}}
    ungated = set()
    for name, pl in plans.items():
        if not pl.needed:
            ungated.add(name)
        for x in pl.needed[0].anchor if pl.needed else ():
            fields[pl.needed[0].field].setdefault(x, []).append(name)
    lits = sorted(fields["command"], key=len, reverse=True)
    names = {x: frozenset(n for y in lits if y in x for n in fields["command"][y]) for x in lits}
    rx = re.compile("|".join(re.escape(x) for x in lits)) if lits else None
    made = _Gates(rx, names, tuple((x, tuple(v)) for x, v in fields["output"].items()), frozenset(ungated),
                  {name: pl.tool for name, pl in plans.items()})
    if len(_GATES) > 256:
        _GATES.clear()
    _GATES[id(patterns)] = (patterns, made)
    return made


class CNFTracker:
    """Tracks named patterns over a stream of steps and reports when an AND-of-ORs holds.

    Used by the annotator (card checks -> contact, t*) and by the monitor (rules -> nudges).
    ``min_steps`` and ``before_first_edit`` are honoured per pattern. The patterns named in
    ``every`` keep being matched once satisfied: ``matched`` lists every step they matched.

    Each step first meets the patterns' gate literals (one substring test per distinct literal,
    shared by all patterns); only the open patterns whose gate it passes are matched. Most steps
    pass few gates, and a monitor sees every step of a live agent.
    """

    def __init__(self, patterns: dict[str, Any], every: set[str] | frozenset[str] = frozenset()) -> None:
        self.patterns = patterns
        self.plans = {name: plan(p) for name, p in patterns.items()}
        self.counts: dict[str, int] = dict.fromkeys(patterns, 0)
        self.first_step: dict[str, int] = {}
        self.matched: dict[str, list[int]] = {name: [] for name in every}
        self.edited = False
        self._before_edit = frozenset(n for n, pl in self.plans.items() if pl.before_first_edit)
        self._unchecked: list[Step] = []
        """Steps not yet read for an edit: that is needed only when a before-first-edit pattern
        meets a step, and only until the first edit (is_edit parses the command)."""
        self._open = list(self.plans)
        self._gates = _gates(patterns, self.plans)

    def _passing(self, step: Step, seen: dict[str, bool]) -> set[str]:
        """The patterns whose gate ``step`` passes (closed ones too: the gates are built once);
        notes the output literals tested in ``seen``."""
        g = self._gates
        live = set(g.ungated)
        if g.command is not None:
            live |= g.by_command(step.tool, step.folded_command)
        folded = step.folded_output
        for x, gated in g.output:
            hit = seen[x] = x in folded
            if hit:
                live.update(gated)
        return live

    def feed(self, step: Step) -> list[str]:
        """Update with ``step``; returns the names of patterns that became satisfied at it."""
        newly: list[str] = []
        seen: dict[str, bool] = {}
        live = self._passing(step, seen)
        for name in self._open:
            pl = self.plans[name]
            if name not in live or (pl.before_first_edit and self._edited_before()) or not pl.matches(step, seen):
                continue
            if name in self.matched:
                self.matched[name].append(step.index)
            if name in self.first_step:
                continue
            self.counts[name] += 1
            if self.counts[name] >= pl.min_steps:
                self.first_step[name] = step.index
                newly.append(name)
        if not self.edited and self._before_edit and not self._before_edit.isdisjoint(self._open):
            self._unchecked.append(step)
        if newly:
            self._open = [n for n in self._open if n not in self.first_step or n in self.matched]
        return newly

    def _edited_before(self) -> bool:
        """An earlier step was an edit (the steps fed so far, read now if not yet)."""
        if not self.edited and self._unchecked:
            self.edited = any(s.is_edit for s in self._unchecked)  # each step read once
            self._unchecked.clear()
        return self.edited

    def holds(self, cnf: list[list[str]]) -> bool:
        return bool(cnf) and all(any(n in self.first_step for n in group) for group in cnf)


class StepTexts:
    """One trajectory's steps prepared for matching many patterns (the annotator's hot path).

    Each field (command, output) of all steps is case-folded once, as one string. A pattern whose
    required literals that string lacks is done at once (most patterns, most trajectories);
    otherwise the steps holding each literal are found with ``str.find`` (one scan per distinct
    literal, shared by all patterns) and only those steps meet the regex.
    """

    def __init__(self, steps: list[Step]) -> None:
        self.steps = steps
        self.tools = [s.tool for s in steps]
        # a bash step's command read directly: Step.command would cache a copy on every step of
        # the corpus, which costs the annotator 15% at the paper's size
        commands = [str(s.arguments.get("command", "")) if s.tool == "bash" else s.command for s in steps]
        self.commands = commands
        self.fields = {"command": _Field(commands), "output": _Field([s.output for s in steps])}

    def _holds(self, part: Part, i: int) -> bool:
        """``part`` matches step ``i``: its literals first (bounded ``find``s), then its regex."""
        f = self.fields[part.field]
        start = f.starts[i]
        return _has_all(part.sets, f.folded, start, f.starts[i + 1] - 1) and part.hits(
            self.steps[i], f.folded if f.aligned else None, start)

    def _candidates(self, pl: Plan) -> list[int] | None:
        """Sorted positions that may match every part that must match (a superset), from one
        part's anchor literals; None when no such part has literals (every step is a candidate)."""
        if not pl.needed:
            return None
        for pt in pl.needed:  # most patterns stop here: a literal the whole trajectory lacks
            if not self.fields[pt.field].has_all(pt.sets):
                return []
        f = self.fields[pl.needed[0].field]
        return sorted(set().union(*(f.steps_with(x) for x in pl.needed[0].anchor)))

    def matching(self, p: Any, limit: int | None = None, upto: int | None = None) -> list[int]:
        """Sorted positions of the steps ``p`` matches (same semantics as :func:`pattern_matches`).
        With ``limit``, keep the first that many (the annotator needs only the first k); ``upto``
        ignores steps after that position."""
        pl = plan(p)
        n = len(self.steps) if upto is None else min(upto + 1, len(self.steps))
        cand = self._candidates(pl)
        steps, tools, out = self.steps, self.tools, []
        for i in range(n) if cand is None else cand:
            if i >= n:
                break
            if pl.tool != "any" and tools[i] != pl.tool:
                continue
            if all(self._holds(part, i) == part.keep for part in pl.parts) and (
                    (pl.fact is None and pl.effect is None) or pl.settles(steps[i])):  # they parse: past the regexes
                out.append(i)
                if limit is not None and len(out) >= limit:
                    break
        return out

    def first_edit(self) -> int | None:
        """Position of the first successful edit, if any."""
        return next((i for i, s in enumerate(self.steps) if s.is_edit), None)


class _Field:
    """One field (command or output) of a trajectory's steps, case-folded and joined by NUL,
    with each step's start offset (and one past the end)."""

    def __init__(self, texts: list[str]) -> None:
        joined = "\0".join(texts)
        self.folded = joined.casefold()
        self.aligned = len(self.folded) == len(joined)
        """Offsets in ``folded`` are offsets in the original texts."""
        if not self.aligned:  # a few characters fold to two: offsets move
            texts = [t.casefold() for t in texts]
            self.folded = "\0".join(texts)
        self.starts = list(accumulate([len(t) + 1 for t in texts], initial=0))
        self._hits: dict[str, set[int]] = {}
        self._has: dict[str, bool] = {}

    def has_all(self, sets: tuple[tuple[str, ...], ...]) -> bool:
        """:func:`_has_all` on the whole field, each literal's answer kept: the patterns of a
        card and of the unsafe rules share many literals, and each test scans every step."""
        has, folded = self._has, self.folded
        for group in sets:
            for x in group:
                hit = has.get(x)
                if hit is None:
                    hit = has[x] = x in folded
                if hit:
                    break
            else:
                return False
        return True

    def steps_with(self, literal: str) -> set[int]:
        """Positions of the steps holding ``literal`` (one scan, then cached)."""
        found = self._hits.get(literal)
        if found is None:
            folded, starts, last = self.folded, self.starts, len(self.starts) - 2
            found = set()
            pos = folded.find(literal)
            while pos != -1:
                i = bisect_right(starts, pos) - 1
                found.add(i)
                if i >= last:
                    break
                pos = folded.find(literal, starts[i + 1])
            self._hits[literal] = found
        return found


def first_steps(patterns: dict[str, Any], texts: StepTexts) -> dict[str, int]:
    """Batch version of :class:`CNFTracker`: pattern name -> step index at which it holds."""
    plans = {name: plan(p) for name, p in patterns.items()}
    first_edit = texts.first_edit() if any(pl.before_first_edit for pl in plans.values()) else None
    out = {}
    for name, p in patterns.items():
        k = plans[name].min_steps
        upto = first_edit if plans[name].before_first_edit else None
        positions = texts.matching(p, limit=k, upto=upto)
        if len(positions) >= k:
            out[name] = texts.steps[positions[k - 1]].index
    return out
