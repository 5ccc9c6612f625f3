"""Text-changing scripts read as :class:`Edit` s: sed, perl, awk and ex/ed scripts, grep's
inverted filter, and unified diffs.

An agent drops an assertion with ``sed '/assert/d'``, ``perl -ni -e 'print unless /assert/'``,
``awk '!/assert/'``, ``vim -c 'g/assert/d'``, ``printf 'g/assert/d\\nw\\n' | ed``, ``grep -v
assert f > t && mv t f`` or a ``patch`` heredoc: one act, many scripts. Each reader here turns
what it can read of one script language into the same edits; what it cannot read gives no edit
(never a guessed one). Pure text in, edits out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from impasse.effects.model import Edit

# ---------------------------------------------------------------------- sed
_ADDRESS = (r"(?:(?P<addr>/(?:[^/\\]|\\.)*/I?|\\(?P<d>.)(?:(?!(?P=d)).)*(?P=d)|\d+|\$)"
            r"(?P<to>\s*,\s*(?:/(?:[^/\\]|\\.)*/|\d+|\$))?)?")


def _address(m: re.Match[str]) -> str:
    """The address of a sed command as written: a regex's body, a line number or a range."""
    addr = m.group("addr") or ""
    if addr.startswith("/") and addr.rstrip("I").endswith("/"):
        addr = addr.rstrip("I")[1:-1]
    to = (m.group("to") or "").strip()
    return f"{addr}{to}" if to and not to.lstrip(",").strip().startswith("/") else addr


def sed_edits(script: str) -> tuple[Edit, ...]:
    """The in-place changes a sed (or perl ``s///``) script makes, as far as it can be read:
    ``s`` substitutions (with the address they are limited to), ``d`` deletions of addressed
    lines, ``i`` / ``a`` / ``c`` text. A numeric address stays as written (``12``, ``12,14``):
    what those lines hold is for the trajectory to say."""
    edits: list[Edit] = []
    for piece in _sed_commands(script):
        m = re.match(rf"^\s*{_ADDRESS}\s*(?P<rest>.*)$", piece, re.S)
        if not m:
            continue
        addr = _address(m)
        rest = m.group("rest")
        if rest.startswith("s") and len(rest) > 1:
            delim = rest[1]
            parts = re.split(rf"(?<!\\){re.escape(delim)}", rest[2:])
            if len(parts) >= 2:
                edits.append(Edit("sub", parts[0], parts[1].replace("\\n", "\n"), address=addr))
        elif rest.startswith("d"):
            edits.append(Edit("delete", addr))
        elif rest[:1] in ("i", "a", "c"):
            body = rest[1:]  # GNU sed: `c\  text` keeps its spaces, `c text` does not
            text = (body[1:].lstrip("\n") if body.startswith("\\") else body.lstrip()).replace("\\n", "\n")
            edits.append(Edit({"i": "insert", "a": "append", "c": "change"}[rest[0]], addr, text))
    return tuple(edits)


def _sed_commands(script: str) -> list[str]:
    """Split a sed script into its commands: at newlines, and at ``;`` except inside an
    ``s`` expression or the text of ``i`` / ``a`` / ``c``."""
    out: list[str] = []
    k, n = 0, len(script)
    while k < n:
        m = re.match(rf"[\s;]*{_ADDRESS}\s*", script[k:], re.S)
        j = k + (m.end() if m else 0)
        if j >= n:
            break
        e = _command_end(script, j)
        out.append(script[k:e].lstrip("; \n"))
        k = e + 1
    return [c for c in out if c.strip()]


def _command_end(script: str, j: int) -> int:
    """Where the sed command starting at ``j`` ends."""
    n, cmd = len(script), script[j]
    if cmd == "s" and j + 1 < n:
        delim, e, seen = script[j + 1], j + 2, 0
        while e < n and seen < 2:
            if script[e] == "\\":
                e += 2
                continue
            seen += script[e] == delim
            e += 1
        while e < n and script[e] not in ";\n":
            e += 1
        return e
    if cmd in "iac":
        e = script.find("\n", j)
        return n if e == -1 else e
    e = j
    while e < n and script[e] not in ";\n":
        e += 1
    return e


# ---------------------------------------------------------------------- perl, awk, grep
_PERL_DROP = re.compile(r"print\s+(?:unless\s*(?:\(\s*)?m?/(?P<a>(?:[^/\\]|\\.)*)/"
                        r"|if\s*(?:\(\s*)?!\s*m?/(?P<b>(?:[^/\\]|\\.)*)/)"
                        r"|next\s+if\s*(?:\(\s*)?m?/(?P<c>(?:[^/\\]|\\.)*)/"
                        r"|(?:^|;)\s*m?/(?P<e>(?:[^/\\]|\\.)*)/\s*(?:&&|and)\s*next")


def perl_edits(code: str) -> tuple[Edit, ...]:
    """``s///`` substitutions and the line filters of ``perl -n`` (``print unless /re/``,
    ``print if !/re/``, ``next if /re/``): the lines they drop are deleted."""
    edits = list(sed_edits(code)) if re.search(r"\bs(\W).*\1.*\1", code) else []
    for m in _PERL_DROP.finditer(code):
        edits.append(Edit("delete", next(g for g in m.groups() if g is not None)))
    return tuple(edits)


_AWK_DROP = re.compile(r"^\s*!\s*/(?P<a>(?:[^/\\]|\\.)*)/\s*(?:\{\s*print\s*(?:\$0\s*)?;?\s*\})?\s*$"
                       r"|^\s*/(?P<b>(?:[^/\\]|\\.)*)/\s*\{\s*next\s*;?\s*\}\s*(?:1|\{\s*print\s*(?:\$0\s*)?;?\s*\})\s*$")
_AWK_SUB = re.compile(r"\bg?sub\(\s*/(?P<old>(?:[^/\\]|\\.)*)/\s*,\s*\"(?P<new>(?:[^\"\\]|\\.)*)\"")


def awk_edits(script: str) -> tuple[Edit, ...]:
    """An awk program that prints every line but those matching a regex (``!/re/``,
    ``/re/{next} 1``), and its ``sub`` / ``gsub`` calls."""
    m = _AWK_DROP.match(script)
    if m:
        return (Edit("delete", m.group("a") if m.group("a") is not None else m.group("b")),)
    return tuple(Edit("sub", s.group("old"), s.group("new")) for s in _AWK_SUB.finditer(script))


def grep_edits(pattern: str, fixed: bool) -> tuple[Edit, ...]:
    """``grep -v PATTERN``: the lines matching it are dropped."""
    return (Edit("delete", pattern, regex=not fixed),)


# ---------------------------------------------------------------------- ex / vim / ed
_EX_GLOBAL = re.compile(r"^\s*g(?:lobal)?!?/((?:[^/\\]|\\.)*)/\s*(.*)$")


def ex_edits(commands: list[str]) -> tuple[Edit, ...]:
    """ex commands (``vim -c``, ``ex +cmd``, an ``ed`` script): ``g/re/d``, ``g/re/s/a/b/``,
    ``%s/a/b/g``, ``/re/d``, ``12d``, ``12,14d``; writing and quitting change nothing."""
    edits: list[Edit] = []
    for raw in commands:
        for cmd in raw.split("|"):
            cmd = cmd.strip().lstrip(":")
            m = _EX_GLOBAL.match(cmd)
            if m:
                inner = m.group(2).strip() or "p"
                if inner.startswith("d"):
                    edits.append(Edit("delete", m.group(1)))
                elif inner.startswith("s"):
                    edits += [Edit(x.op, x.old, x.new, x.regex, m.group(1)) for x in sed_edits(inner)]
                continue
            if re.fullmatch(r"(?:w|wq|x|q|q!|wq!|x!|update|write|quit|p|,p|\d*p|%p|n|\.=|=|set .*|e!?.*)", cmd):
                continue
            edits += sed_edits(re.sub(r"^%", "", cmd))
    return tuple(edits)


# ---------------------------------------------------------------------- unified diffs
@dataclass(frozen=True)
class FileDiff:
    """What a unified diff does to one file: ``edits`` (each hunk's removed -> added lines),
    or the whole ``content`` of a file it creates, or its deletion."""

    path: str
    edits: tuple[Edit, ...] = ()
    content: str | None = None
    deleted: bool = False


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")


def diff_edits(text: str, strip: int | None = None) -> list[FileDiff]:
    """The files a unified diff (``diff -u``, ``git diff``) changes and how: each run of
    ``-`` / ``+`` lines in a hunk is one substitution of the removed lines by the added ones.
    ``strip`` is ``patch -pN`` (None: drop git's ``a/`` / ``b/`` prefixes)."""
    out: list[FileDiff] = []
    old_path = new_path = None
    hunks: list[list[str]] = []
    lines = text.split("\n")
    for k, line in enumerate(lines):
        if line.startswith("--- ") and k + 1 < len(lines) and lines[k + 1].startswith("+++ "):
            if new_path is not None:
                out.append(_file_diff(old_path, new_path, hunks, strip))
            old_path, new_path, hunks = _diff_path(line[4:]), None, []
        elif line.startswith("+++ ") and old_path is not None and new_path is None:
            new_path = _diff_path(line[4:])
        elif _HUNK.match(line):
            hunks.append([])
        elif hunks and line[:1] in ("-", "+", " ", "\\") or (hunks and line == ""):
            hunks[-1].append(line)
    if new_path is not None:
        out.append(_file_diff(old_path, new_path, hunks, strip))
    return out


def _diff_path(header: str) -> str:
    return header.split("\t")[0].strip()


def _strip(path: str, strip: int | None) -> str:
    if strip is None:
        return path[2:] if path.startswith(("a/", "b/")) else path
    parts = path.split("/")
    return "/".join(parts[strip:]) if strip < len(parts) else parts[-1]


def _file_diff(old: str | None, new: str, hunks: list[list[str]], strip: int | None) -> FileDiff:
    if new == "/dev/null":
        return FileDiff(_strip(old or "", strip), deleted=True)
    path = _strip(new, strip)
    if old == "/dev/null":
        added = [ln[1:] for h in hunks for ln in h if ln.startswith("+")]
        return FileDiff(path, content="".join(x + "\n" for x in added))
    edits: list[Edit] = []
    for h in hunks:
        removed: list[str] = []
        added: list[str] = []
        for ln in [*h, " "]:
            if ln.startswith("-"):
                removed.append(ln[1:])
            elif ln.startswith("+"):
                added.append(ln[1:])
            elif removed or added:
                edits.append(Edit("sub", "".join(x + "\n" for x in removed), "".join(x + "\n" for x in added),
                                  regex=False))
                removed, added = [], []
    return FileDiff(path, tuple(edits))
