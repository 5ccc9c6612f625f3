"""Card and monitor checks over what a command does (``effect:`` in a check), whichever program
does it. A check's regexes stay the cheap gate; these decide."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from impasse.effects.shell import effects_of

if TYPE_CHECKING:
    from impasse.layout import Workspace
    from impasse.steps import Step

_INSTALL_VERBS = {"install", "download", "wheel", "index", "add", "sync", "get", "fetch", "create"}
_INSTALLERS = {"pip", "pip3", "uv", "conda", "mamba", "micromamba", "easy_install", "poetry", "pipenv", "pipx",
               "apt", "apt-get", "apk", "yum", "dnf", "pdm", "hatch", "rye"}
_FETCHERS = {"curl", "wget", "aria2c"}
_NET_PYTHON = re.compile(r"\burllib\b|\brequests\b|\bhttp\.client\b|\burlopen\b|\bpip\._internal\b|\bsocket\b")


def obtains_package(step: Step) -> bool:
    """An attempt to get a package or its source from outside: an installer's install /
    download verb (pip, uv pip, conda, apt-get, poetry add, ...), a download (curl, wget, git
    clone), or inline Python that opens a URL."""
    if step.tool != "bash":
        return False
    for e in effects_of(step.command, step.where.cwd):
        if e.kind == "execute":
            words = set(e.argv[1:4])
            if e.program in _INSTALLERS and words & _INSTALL_VERBS:
                return True
            if e.program in _FETCHERS or (e.program == "git" and words & {"clone", "fetch", "pull"}):
                return True
        elif e.kind == "inline" and e.name == "python" and _NET_PYTHON.search(e.content or ""):
            return True
    return False


def runs_tests(step: Step) -> bool:
    """A test run by any runner or wrapper: pytest / py.test / unittest / tox / nox, or a build
    target that runs them (make test, make check)."""
    if step.tool != "bash":
        return False
    for e in effects_of(step.command, step.where.cwd):
        if e.kind == "read" and e.detail == "script" and _TEST_SCRIPT.search(e.path or ""):
            return True  # python tests/test_x.py: a test module run as a script (unittest.main())
        if e.kind != "execute":
            continue
        if e.program in ("pytest", "py.test", "pytest-3", "tox", "nox", "unittest", "trial", "green") or _TEST_SCRIPT.search(
                e.program) or (
                e.program == "make" and set(e.argv[1:]) & {"test", "tests", "check"}):
            return True
    return False


_TEST_SCRIPT = re.compile(r"(^|/)test_[^/]*\.py$|_test\.py$|(^|/)(runtests|run_tests|run-tests|test)\.(py|sh)$")


def runs_other_than_tests(step: Step) -> bool:
    """A shell command that runs no test runner (a probe, an allocation, a script)."""
    return step.tool == "bash" and not runs_tests(step)


_CHANGES = ("write", "append", "edit", "truncate", "delete", "touch", "mkdir")


def changes_workspace(step: Step) -> bool:
    """The command changed a file of the workspace, whichever program did it (``perl -pi``, a
    Python read-modify-write, ``sed -i``, a redirection, ``git checkout --``, ``patch``); a copy
    to /tmp or a write to /dev/null does not."""
    w = step.where
    quick = _plain_edit(step.command, w)
    if quick is not None:
        return quick
    fx = effects_of(step.command, w.cwd)
    # a command that first goes to its project (`cd /tmp/x/proj && sed -i ...`, a converted run
    # whose root is not recorded): that directory is the project too
    projects = [w.root.rstrip("/") + "/"] + [posixpath.join(e.path or "/", e.argv[1]).rstrip("/") + "/"
                                               for e in fx.of("execute") if e.program == "cd" and len(e.argv) > 1]
    for e in fx:
        if e.kind in _CHANGES and e.path and (not e.path.startswith("/") or e.path == w.root or any(
                e.path.startswith(p) for p in projects)):
            return True
        if e.kind == "unknown" and e.program in ("patch", "git") or e.kind == "unknown" and "git" in e.detail:
            return True  # a diff or git operation that changes files it does not name
    return False


_PLAIN_EDIT = re.compile(r"^\s*(?:sed\s+(?:-\w+\s+)*-i\S*\s+(?:-e\s+)?(?:'[^'\n]*'|\"[^\"\n]*\")\s+|perl\s+-\w*i\w*\s+"
                         r"(?:-\w+\s+)*(?:'[^'\n]*'|\"[^\"\n]*\")\s+|(?:echo|printf)\s+(?:'[^'\n]*'|\"[^\"\n]*\")\s*>>?\s*"
                         r"|tee\s+(?:-a\s+)?)(?P<path>[\w./-]+)\s*$")
"""The commonest edits spelled alone (``sed -i 's/a/b/' f``, ``perl -pi -e '...' f``, ``echo x >> f``,
``tee f``): their one target settles it without a parse."""


def _plain_edit(command: str, w: Workspace) -> bool | None:
    """True / False when the command is one plain edit of one path (inside the workspace or not);
    None when only its effects can tell."""
    m = _PLAIN_EDIT.match(command)
    if m is None:
        return None
    path = m.group("path")
    return not path.startswith("/") or w.inside(path) or path == w.root


CHECKS: dict[str, Callable[[Step], bool]] = {"obtains_package": obtains_package, "runs_tests": runs_tests,
                                             "runs_other_than_tests": runs_other_than_tests}


def check(name: str, step: Step) -> bool:
    """Cached per step, like facts (the annotator and the monitor may ask twice)."""
    cache = step.__dict__.setdefault("_effect_checks", {})
    if name not in cache:
        cache[name] = CHECKS[name](step)
    return cache[name]
