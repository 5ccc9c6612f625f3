"""The vocabulary of effects: what one shell call does, whichever program does it.

An :class:`Effect` is one act on a path, a program run, an environment setting or inline code:
``cat f``, ``< f``, ``python -c "open('f').read()"`` and ``awk 1 f`` are all ``read f``. Rules
(unsafe categories, card evidence) are predicates over these, so they judge the act and not its
spelling. What could not be parsed is an ``unknown`` effect with the reason, never a guess.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Literal

Kind = Literal[
    "read",      # file content read (cat, < f, open(f), cp's source, tar c)
    "inspect",   # metadata only (ls -l f, stat, test -w, os.access): the content is not taken
    "list",      # a directory's names (ls dir, find dir, os.listdir)
    "write",     # created or overwritten (> f, tee, cp/mv destination, open(f, 'w'))
    "append",    # >> f, tee -a, open(f, 'a')
    "truncate",  # : > f, truncate -s 0
    "edit",      # changed in place (sed -i, perl -pi, a read-modify-write in Python)
    "delete",    # rm, unlink, os.remove, shutil.rmtree, mv's source
    "touch", "mkdir", "chmod", "chown",
    "execute",   # a program run, with its words (pip install x, pytest --deselect ...)
    "inline",    # code an interpreter ran inline (python -c, heredoc into python, perl -e)
    "import",    # a Python module imported by inline code
    "env",       # an environment or import-path setting (PYTHONPATH=, export, sys.path.insert)
    "unknown",   # could not be parsed: `detail` says why
]


@dataclass(frozen=True)
class Edit:
    """One in-place change: ``op`` sub (old -> new), delete (lines matching old), insert /
    append (new text before / after lines matching old, or at line numbers; an insert with an
    empty ``old`` is text the code writes around content the command does not show), change
    (the lines matching old replaced by new)."""

    op: Literal["sub", "delete", "insert", "append", "change"]
    old: str
    new: str = ""
    regex: bool = True
    address: str = ""
    """sub: the lines it is limited to (sed ``/assert/s/^/#/``: ``assert``; ``12``; empty: all)."""


@dataclass(frozen=True)
class Effect:
    kind: Kind
    path: str | None = None
    """Absolute when the base directory is known; as written (relative, ``~``, ``$VAR``) otherwise."""
    program: str = ""
    """The program that performed it (``cat``, ``sed``, ``python``, ``pip``). For ``execute``,
    ``path`` is the directory it ran in (``cd /tmp/copy && pip install -e .`` installs
    /tmp/copy)."""
    content: str | None = None
    """write/append: the literal text written; inline: the code; env: the value."""
    source: str | None = None
    """write by copy/move/link: where the content came from."""
    argv: tuple[str, ...] = ()
    """execute: the program's words (the program first); chmod/chown: the mode or owner."""
    via: tuple[str, ...] = ()
    """Wrappers it ran under, outermost first (sudo, xargs, find -exec, python, bash -c)."""
    glob: bool = False
    """``path`` is a pattern (a shell glob, find's -name, xargs fed by a listing)."""
    stdin: str | None = None
    """execute: literal text fed on stdin (a pipe from echo/printf, a here-string or heredoc)."""
    fed: bool = False
    """execute: something was fed on stdin (a pipe, a file, a here-string, Python's ``input=``),
    literal or not."""
    edits: tuple[Edit, ...] = ()
    name: str = ""
    """env: the variable (PYTHONPATH, sys.path); inline: the language; import: the module."""
    detail: str = ""
    """unknown: why; anything else a rule may want to quote."""


@dataclass(frozen=True)
class Effects:
    """Everything one command does, in order."""

    items: tuple[Effect, ...] = ()
    cwd: str | None = None
    """The directory the command started in (None: unknown)."""
    _by_kind: dict[str, tuple[Effect, ...]] = field(default_factory=dict, compare=False, repr=False)

    def of(self, *kinds: str) -> tuple[Effect, ...]:
        key = "|".join(kinds)
        hit = self._by_kind.get(key)
        if hit is None:
            hit = self._by_kind[key] = tuple(e for e in self.items if e.kind in kinds)
        return hit

    @property
    def unknown(self) -> tuple[Effect, ...]:
        return self.of("unknown")

    def programs(self) -> set[str]:
        return {e.program for e in self.of("execute")}

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


def resolve(path: str, cwd: str | None) -> str:
    """``path`` made absolute against ``cwd`` and normalised; left as written when it is not a
    plain path (``~``, ``$VAR``) or the base is unknown."""
    p = path.strip()
    if not p:
        return p
    if p.startswith("/"):
        return posixpath.normpath(p)
    if p.startswith(("~", "$")) or cwd is None:
        return p
    return posixpath.normpath(posixpath.join(cwd, p))
