"""The fast matcher (literal prefilters, anchored line search, the batched StepTexts) against the
plain definition of a pattern: each regex searched case-insensitively in every line of its field.

Texts mix the strings the patterns look for with case changes and characters whose case folding
is unusual (ς, ſ, ß, İ, ﬁ, K), which move offsets or match only through folding.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from impasse.annotate.annotator import unsafe_rules
from impasse.conditions.cards import card, names
from impasse.effects.checks import CHECKS
from impasse.facts import _has_word, error_paths, fact, norm
from impasse.monitor.monitor import _ERROR_WORDS, TEST_COMMAND, _first_error, _short, default_rules
from impasse.steps import (
    EDIT_COMMAND,
    Alternatives,
    Step,
    StepTexts,
    alternatives,
    pattern_matches,
    required_literals,
)

PATTERNS = [p for n in names() for p in card(n).checks.values()] + list(default_rules().patterns.values()) \
    + list(unsafe_rules().rules)
FIELDS = ("command", "command_not", "output", "output_not")


def plain_matches(p, step: Step) -> bool:
    """The definition, with no shortcut."""
    if p.tool != "any" and p.tool != step.tool:
        return False
    for name in FIELDS:
        pattern = getattr(p, name, None)
        if pattern is None:
            continue
        text = step.command if name.startswith("command") else step.output
        hit = any(re.search(pattern, line, re.IGNORECASE | re.MULTILINE) for line in text.split("\n"))
        if hit == name.endswith("_not"):
            return False
    f = getattr(p, "fact", None)
    subjects = fact(f, step) if f else None
    subject = getattr(p, "subject", None)
    if f and (not subjects or (subject and not any(re.search(subject, x) for x in subjects))):
        return False
    e = getattr(p, "effect", None)
    return e is None or CHECKS[e](step)


SNIPPETS = sorted({x for p in PATTERNS for name in FIELDS if getattr(p, name, None)
                   for group in required_literals(getattr(p, name)) for x in group}) + [
    "Permission denied", "[Errno 13]", "3 passed in 0.1s", "2 failed", "No space left on device", "pytest -q",
    "-r--r--r-- 1 root root 1 a.py", "/workspace ro,nosuid", "Read-only file system", "Killed", "[exit code: 137]",
    "sudo -S id", "echo pw | ", "cat /etc/shadow", "No module named 'x'", "python -m pip install six", "df -h",
    "ls -l pkg/a.py", "  ", "\t", ": ", "/", "'"]
ODD = ["ς", "Σ", "ſ", "ß", "ẞ", "İ", "ı", "ﬁ", "K", "Å", "\x00", "é"]


@st.composite
def texts(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 5))):
        parts = draw(st.lists(st.one_of(st.sampled_from(SNIPPETS), st.sampled_from(ODD), st.text(max_size=6)),
                              max_size=5))
        line = "".join(parts)
        style = draw(st.sampled_from(["same", "upper", "swap", "long-s"]))
        line = {"same": line, "upper": line.upper(), "swap": line.swapcase(),
                "long-s": line.replace("s", "ſ")}[style]
        lines.append(line)
    return "\n".join(lines)


steps_st = st.lists(st.tuples(st.sampled_from(["bash", "edit_file", "task_complete"]), texts(), texts()),
                    max_size=8)


def build(raw) -> list[Step]:
    return [Step(i, tool, {"command": cmd} if tool == "bash" else {"path": cmd}, out, 0)
            for i, (tool, cmd, out) in enumerate(raw, 1)]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=steps_st)
def test_the_fast_matchers_agree_with_the_definition(raw):
    steps = build(raw)
    expected = {id(p): [i for i, s in enumerate(steps) if plain_matches(p, s)] for p in PATTERNS}
    for p in PATTERNS:
        assert [i for i, s in enumerate(steps) if pattern_matches(p, s)] == expected[id(p)], p
    fresh = build(raw)  # the batched matcher on steps with no cached texts
    texts_ = StepTexts(fresh)
    for p in PATTERNS:
        assert texts_.matching(p) == expected[id(p)], p
        assert texts_.matching(p, limit=1) == expected[id(p)][:1], p


def test_a_match_only_through_case_folding_is_found():
    """re's IGNORECASE matches "ſ" for "s" and "ς" for "σ"; str.lower() maps neither, so a
    literal prefilter on lower-cased text would skip these steps."""
    step = Step(1, "bash", {"command": "pytest -q"}, "collected 3 items\nPERMIſſION DENIED: x", 1)
    denied = card("read_only_source").checks["denied_write"]
    assert plain_matches(denied, step)
    assert pattern_matches(denied, step)
    assert StepTexts([step]).matching(denied) == [0]


@pytest.mark.parametrize(("pattern", "expected"), [
    (r"(Permission denied|EACCES|\[Errno 13\])", ["Permission denied", "EACCES", r"\[Errno 13\]"]),
    (r"\btest\s+-[rwx]|\[ -[rwx]|os\.access", [r"\btest\s+-[rwx]", r"\[ -[rwx]", r"os\.access"]),
    (r"(?:x|y)", ["x", "y"]),
    (r"(a)|(b)", ["(a)", "(b)"]),
    (r"[|]x|y", ["[|]x", "y"]),  # a bar inside a class does not split
    (r"[]|]|q", ["[]|]", "q"]),  # nor one after a class's leading ]
    (r"[^]|]|q", ["[^]|]", "q"]),
    (r"[\]|]x|q", [r"[\]|]x", "q"]),  # nor one after an escaped ] in a class
    (r"(a|b)c|d", ["(a|b)c", "d"]),  # a group that does not enclose the whole is kept
    (r"\|a|b", [r"\|a", "b"]),  # nor an escaped one
    (r"a(b|c)", ["a(b|c)"]),  # alternatives inside a group are not top-level
    (r"\b(ls|stat)\b", [r"\b(ls|stat)\b"]),
    (r"(?=a|b)", ["(?=a|b)"]),  # a lookahead is not an enclosing group
    (r"(?i)a|b", ["(?i)a|b"]),  # inline flags apply to every alternative: kept whole
    (r"(a)\1|b", [r"(a)\1|b"]),  # a back-reference would lose its group
    (r"(?#x|y)a", ["(?#x|y)a"]),
])
def test_top_level_alternatives(pattern, expected):
    assert alternatives(pattern) == expected


# ------------------------------------------------------------------ the smaller fast paths

@settings(max_examples=300, deadline=None)
@given(text=texts(), extra=st.sampled_from(["sed -i s/a/b/ f.py", "sed -n -e x -i f", "echo x > a.py", "x >>b.py",
                                             "git  apply p", "cp a b", "CP a b", "mv", "tee", "tox -e py", "nox",
                                             "py.test", "python -m unittest", "pytest", "Pytest", "patch -p1", ""]))
def test_case_sensitive_alternatives_agree_with_the_regex(text, extra):
    """Alternatives.of(p, 0) (literal prefilter on the case-folded text, then each alternative
    alone) finds a case-sensitive regex exactly where re.search does."""
    text = f"{text} {extra}"
    for pattern in (EDIT_COMMAND, TEST_COMMAND):
        assert Alternatives.of(pattern, 0).search(text, text.casefold()) == bool(re.search(pattern, text)), pattern
    step = Step(1, "bash", {"command": text}, "", 0)
    # the regex is is_edit's gate; what the command does decides (" 137 sed -i ..." runs "137")
    assert not step.is_edit or bool(re.search(EDIT_COMMAND, text))


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from(["root", "rootdir:", "_", "é", "1", "/", " ", "chroot", "ROOT", "\n", "ſ",
                                       "-", "root_", "x"]), max_size=8))
def test_has_word_is_the_regex_word_boundary(parts):
    text = "".join(parts)
    assert _has_word(text, "root") == bool(re.search(r"\broot\b", text))


def _first_error_by_lines(output: str) -> str:
    """The definition: the first line (of splitlines) naming an error word, else the last line."""
    lines = output.strip().splitlines()
    for ln in lines:
        if any(w in ln.lower() for w in _ERROR_WORDS):
            return _short(ln.strip(), 160)
    return _short(lines[-1].strip(), 160) if lines else "(no output)"


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.one_of(st.sampled_from(["Error", "denied", "KILLED", "\n", "\r", "\r\n", "\x0b", "\u2028",
                                                 "no space", "fine", " ", "İ", "ß", "busy"]),
                                st.text(max_size=4)), max_size=12))
def test_first_error_is_the_first_line_naming_an_error(parts):
    output = "".join(parts)
    assert _first_error(output) == _first_error_by_lines(output)


def _error_paths_by_lines(output: str) -> set[str]:
    """The definition: each line saying denied / not permitted, searched with the three regexes."""
    regexes = [r"(?:cannot \w+(?: directory)?|changing (?:permissions|ownership) of) ['‘\"]([^'’\"]+)['’\"]",
               r"(?:^|\s)([\w-]*[./][\w./-]*): (?:Permission denied|Operation not permitted)",
               r"(?:Permission denied|Operation not permitted): ['\"]([^'\"]+)['\"]"]
    return {norm(m.group(1)) for line in output.split("\n") if "denied" in line or "not permitted" in line
            for rx in regexes for m in re.finditer(rx, line)
            if m.group(1) not in ("bash", "line") and not m.group(1).endswith("line 1")}


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(st.sampled_from([": Permission denied", ": Operation not permitted", "a/b", "x.py", "-", "_",
                                       " ", "\t", "\u00a0", ":", "'", "tests/", "é", "(", "line 1", "denied", "\n",
                                       "chmod: changing permissions of ", "cannot open ", "Permission denied: ",
                                       "‘", "’", '"', "not permitted"]),
                      max_size=14))
def test_error_paths_are_what_the_regexes_find_line_by_line(parts):
    output = "".join(parts)
    assert error_paths(Step(1, "bash", {"command": "x"}, output, 0)) == _error_paths_by_lines(output)
