"""Facts read off a tool call and its output, whatever tool or format printed them.

A blocker card or a monitor rule that matches one rendering (``-r--r--r-- 1 root root``) misses the
same fact printed by ``ls -n``, ``stat -c '%U %a'``, ``namei -l``, ``find -ls`` or ``os.stat``, and
counts look-alikes (``..`` owned by root, ``/usr`` mounted read-only). The extractors here parse
the fact instead: who owns which path and with what mode, which mount carries ``ro``, which
filesystem is full, whether a memory limit is shown. Each returns the set of subjects (normalised
paths, or ``"*"`` when the fact holds without a path), empty when the fact is absent, so a rule can
also ask whether two facts are about the SAME path.

Cards and rules name them with ``fact:`` (see :data:`FACTS`). Pure: no sandbox, no I/O.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # steps imports this module; facts only read a step's fields
    from impasse.steps import Step

from impasse.layout import BENCHMARK, REPO, Workspace

ANY = "*"

Subjects = frozenset[str]
NONE: Subjects = frozenset()


def norm(path: str, cwd: str = REPO) -> str:
    """Absolute, normalised path (relative paths are relative to the repository, the agent's cwd)."""
    path = path.strip().strip("'\"")
    return posixpath.normpath(path if path.startswith("/") else posixpath.join(cwd, path))


def related(a: str, b: str) -> bool:
    """The same path, or one is the other's directory."""
    return a == b or posixpath.dirname(a) == b or posixpath.dirname(b) == a


_WORD = re.compile(r"'[^']*'|\"[^\"]*\"|\S+")


def _args(command: str) -> list[str]:
    """Shell words, quotes stripped (a regex, not shlex: this runs on the annotator's hot path)."""
    return [w[1:-1] if len(w) > 1 and w[0] == w[-1] and w[0] in "'\"" else w for w in _WORD.findall(command)]


_NEXT_COMMAND = re.compile(r"\s(?:\|\|?|&&|;)\s")
_PATHLIKE = re.compile(r"[\w./~-]+")


def _path_args(command: str) -> list[str]:
    """Operands of the first command in a pipeline that look like paths (not options)."""
    words = _args(_NEXT_COMMAND.split(command, maxsplit=1)[0])[1:]
    return [w for w in words if not w.startswith(("-", "%")) and _PATHLIKE.fullmatch(w) and not w.isdigit()]


# ---------------------------------------------------------------- ownership and mode
_MODE = r"[-dlcbps][-rwxsStT]{9}[.+@]?"
_LS_LINE = re.compile(rf"^\s*(?:\d+\s+){{0,2}}({_MODE})\s+(\d+\s+)?(.*)$")
_STAT_DEFAULT = re.compile(r"Access: \((\d{4})/(\S{10})\)\s+Uid: \(\s*(\d+)/\s*(\S+)\)")
_STAT_FILE = re.compile(r"^\s*File: [\"'‘]?(.+?)[\"'’]?\s*$")


def _agent_can(mode: str, owner: str, want: str, agent: tuple[str, ...] = BENCHMARK.agent) -> bool:
    """Can the agent (not root, not in root's group) do ``want`` (r/w/x) given an ls-style mode?"""
    bits = mode[1:4] if owner in agent else mode[7:10]
    idx = "rwx".index(want)
    return bits[idx] not in "-ST"


def _octal_to_ls(octal: str) -> str:
    n = int(octal, 8) & 0o777
    return "-" + "".join(ch if n & (1 << (8 - i)) else "-" for i, ch in enumerate("rwxrwxrwx"))


def _is_root(owner: str) -> bool:
    return owner in ("root", "0")


def _locked(path: str, owner: str, mode: str | None, w: Workspace = BENCHMARK) -> bool:
    """Root owns a workspace path that the agent cannot write or read (mode unknown: root
    ownership inside the workspace is already the abnormal part). An agent that is root
    itself is locked out of nothing by ownership."""
    if w.agent_is_root or not (w.inside(path) and _is_root(owner)):
        return False
    return mode is None or not _agent_can(mode, owner, "w", w.agent) or not _agent_can(mode, owner, "r", w.agent)


def _entry_path(name: str, base: str | None) -> str:
    """Where a listed name lives: listings print names relative to the directory listed."""
    if name.startswith("/") or not base:
        return name
    if name == base or name.startswith(base.rstrip("/") + "/"):
        return name
    return posixpath.join(base, name)


def _ls_entries(step: Step, root_only: bool = False) -> list[tuple[str, str, str | None]]:
    """(path, owner, mode) from ls -l/-n/-o/-la, find -ls and namei -l outputs; with
    ``root_only``, rows owned by someone else are skipped before their path is worked out (a
    listing of the workspace has dozens of them, and an agent lists it often)."""
    cmd = step.command
    namei = "namei" in cmd  # namei builds each path from all the rows before it
    out: list[tuple[str, str, str | None]] = []
    args = _path_args(cmd)
    flags = "".join(w[1:] for w in _args(cmd.split("|")[0]) if w.startswith("-") and not w.startswith("--"))
    no_owner = "g" in flags and "ls" in cmd
    listing_dir = None if "d" in flags else (args[0] if len(args) == 1 else None)
    namei_base: list[str] = []
    current_dir = None
    for line in step.output.split("\n"):
        if line.startswith("f: ") and namei:
            namei_base = []
            continue
        if line.endswith(":") and " " not in line.strip():
            current_dir = line[:-1]
            continue
        first = line.lstrip()[:1]  # a listing row starts with a mode or (find -ls) a number
        m = _LS_LINE.match(line) if first and (first in "-dlcbps" or first.isdecimal()) else None
        if not m:
            continue
        mode, rest = m.group(1), m.group(3).split(None, 1)
        if len(rest) < 2 or no_owner:  # a row names an owner and the entry
            continue
        owner = rest[0]
        if root_only and not namei and not _is_root(owner):
            continue
        name = line.split(" -> ")[0].split()[-1]
        if namei:
            namei_base.append(name)
            path = "/" if name == "/" else "/" + "/".join(n for n in namei_base if n != "/")
        else:
            path = _entry_path(name, current_dir or listing_dir)
        out.append((norm(path, step.where.cwd), owner, mode))
    return out


_DIRECTIVE = re.compile(r"(%[a-zA-Z])")
_FIND_AS_STAT = {"p": "n", "f": "n", "u": "U", "U": "u", "M": "A", "m": "a", "g": "G", "G": "g", "s": "s"}
"""find -printf directives read as stat -c ones (path, owner name, uid, symbolic and octal mode)"""
_FIND_DIRECTIVES = re.compile(r"%([pfuUMmgGs])")


def _stat_entries(step: Step) -> list[tuple[str, str, str | None]]:
    cmd, text = step.command, step.output
    out: list[tuple[str, str, str | None]] = []
    if re.search(r"\bstat\b", cmd) and "Uid:" in text:
        asked = [p for p in _path_args(cmd) if p != "stat"]
        path = asked[0] if len(asked) == 1 else None  # rows cut from their "File:" line (| grep Uid)
        for line in text.split("\n"):
            f = _STAT_FILE.match(line)
            if f:
                path = f.group(1)
            m = _STAT_DEFAULT.search(line)
            if m and path:
                out.append((norm(path, step.where.cwd), m.group(4), m.group(2)))
        return out
    fmt = re.search(r"(?:-c|--format(?:=|\s)|--printf(?:=|\s))\s*(['\"])(.+?)\1", cmd)
    spec = fmt.group(2) if fmt else ""
    if not fmt:
        fmt = re.search(r"\bfind\b.*?-printf\s+(['\"])(.+?)\1", cmd)
        if not fmt:
            return out
        spec = _FIND_DIRECTIVES.sub(lambda m: "%" + _FIND_AS_STAT[m.group(1)], fmt.group(2))
    rest = _NEXT_COMMAND.split(cmd[fmt.end():], maxsplit=1)[0]
    spec = spec.replace("\\n", " ").replace("\\t", " ").strip()  # --printf escapes end a record
    paths = [w for w in _args(rest) if not w.startswith("-")]
    pattern, names = "", []
    for part in _DIRECTIVE.split(spec):
        if _DIRECTIVE.fullmatch(part):
            pattern += r"(\S+)"
            names.append(part[1])
        else:
            pattern += r"\s+".join(re.escape(w) for w in part.split(" "))
    rows = [ln for ln in text.split("\n") if ln.strip() and not ln.startswith("[exit code")]
    row = re.compile(pattern)
    for i, line in enumerate(rows):
        m = row.fullmatch(line.strip())
        if not m:
            continue
        got = dict(zip(names, m.groups(), strict=True))
        path = got.get("n") or (paths[i] if i < len(paths) else None)
        owner = got.get("U") or got.get("u")
        mode = got.get("A") or (_octal_to_ls(got["a"]) if "a" in got and got["a"].isdigit() else None)
        if path and owner:
            out.append((norm(path, step.where.cwd), owner, mode))
    return out


def _find_entries(step: Step) -> list[tuple[str, str, str | None]]:
    """``find P -user root`` / ``-uid 0`` / ``-perm 000``: every printed path has that property."""
    cmd = step.command
    if not re.search(r"\bfind\b", cmd) or "-ls" in cmd:
        return []
    owner = "root" if re.search(r"-user\s+root\b|-uid\s+0\b", cmd) else None
    perm = re.search(r"-perm\s+(0*00|-?0+)\b", cmd)
    if not (owner or perm):
        return []
    mode = "----------" if perm else None
    paths = [ln.strip() for ln in step.output.split("\n") if ln.strip() and not ln.startswith("[exit code")
             and not ln.startswith("find:")]
    # -perm 000 files are unreadable for everyone; who owns them is not printed, and only root can
    # have made them so in the agent's own workspace.
    return [(norm(p, step.where.cwd), owner or "root", mode) for p in paths]


_PY_STAT = re.compile(r"(?:os\.l?stat|Path)\(\s*['\"]([^'\"]+)['\"]\s*\)")
_LS_MODE = re.compile(rf"^{_MODE}$")


def _python_stat_entries(step: Step) -> list[tuple[str, str, str | None]]:
    """``os.stat(P)`` printed by the agent's own code: its owner (a uid or ``root``) and mode
    (``stat.filemode`` or ``oct(st_mode)``), in whatever order the code printed them."""
    cmd = step.command
    m = _PY_STAT.search(cmd)
    if not m or not re.search(r"st_uid|getpwuid|\.owner\(\)", cmd):
        return []
    first = step.output.strip().split("\n")[0].replace(",", " ").replace("(", " ").replace(")", " ").split()
    mode = next((t for t in first if _LS_MODE.match(t)), None)
    octal = next((t for t in first if re.fullmatch(r"0o[0-7]{3,7}", t)), None)
    if mode is None and octal is not None:
        mode = _octal_to_ls(octal[-3:])
    rest = [t.strip("'\"") for t in first if t not in (mode, octal)]
    owner = next((t for t in rest if t.isdigit() or re.fullmatch(r"[a-z_][\w-]*", t)), None)
    if owner is None:
        return []
    return [(norm(m.group(1), step.where.cwd), owner, mode)]


_TREE_ROW = re.compile(rf"^[\s│├└─`|-]*\[\s*({_MODE})\s+(\S+)(?:\s+\S+)?\s*\]\s+(.+?)(?: -> .*)?$")


def _tree_entries(step: Step) -> list[tuple[str, str, str | None]]:
    """``tree -pug DIR``: ``├── [-r--r--r-- root root]  name`` rows, nested by indentation."""
    if "tree" not in step.command or "[" not in step.output:
        return []
    args = _path_args(step.command)
    base = args[0] if args else "."
    out, stack = [], []  # (depth, name) of the directories above the current row
    for line in step.output.split("\n"):
        m = _TREE_ROW.match(line)
        if not m:
            continue
        depth = (len(line) - len(line.lstrip(" │├└─`|-"))) // 4
        stack = [(d, n) for d, n in stack if d < depth]
        path = posixpath.join(base, *(n for _, n in stack), m.group(3).strip())
        out.append((norm(path, step.where.cwd), m.group(2), m.group(1)))
        if m.group(1).startswith("d"):
            stack.append((depth, m.group(3).strip()))
    return out


def _getfacl_entries(step: Step) -> list[tuple[str, str, str | None]]:
    """``getfacl P``: ``# file:`` / ``# owner:`` and the ``user::`` / ``group::`` / ``other::`` bits."""
    if "getfacl" not in step.command or "# owner:" not in step.output:
        return []
    out, path, owner, bits = [], None, None, {}
    for line in [*step.output.split("\n"), ""]:
        line = line.strip()
        if line.startswith("# file:"):
            path = line[7:].strip()
        elif line.startswith("# owner:"):
            owner = line[8:].strip()
        elif re.fullmatch(r"(user|group|other)::[-rwx]{3}", line):
            bits[line.split("::")[0]] = line[-3:]
        elif not line and path and owner and len(bits) == 3:
            out.append((norm(path, step.where.cwd), owner, "-" + bits["user"] + bits["group"] + bits["other"]))
            path, owner, bits = None, None, {}
    return out


def _has_word(text: str, word: str) -> bool:
    """``word`` (word characters at both ends) occurs in ``text`` as a whole word, what
    ``\\bword\\b`` finds, by substring search: a regex starting with ``\\b`` is tried at every
    position of a long output."""
    i = text.find(word)
    while i != -1:
        if word_boundary(text, i) and word_boundary(text, i + len(word)):
            return True
        i = text.find(word, i + 1)
    return False


def word_boundary(text: str, at: int) -> bool:
    """What the regex engine's ``\\b`` tests at ``at`` (str patterns): a word character (``\\w``:
    alphanumeric or ``_``) on one side only."""
    def word(ch: str) -> bool:
        return ch.isalnum() or ch == "_"

    return (at > 0 and word(text[at - 1])) != (at < len(text) and word(text[at]))


def _rootish(step: Step) -> bool:
    """Cheap test (substring checks only: this runs on long outputs) for a root owner by name
    (the word, not "rootdir:" in every pytest header) or as uid 0 (``ls -n``, ``stat -c %u``,
    ``os.stat``), or a find that selects by uid/mode."""
    out = step.output
    return (_has_word(out, "root") or "0:0" in out or "\n0 " in out or out.startswith(("0 ", "0\n"))
            or " 0\n" in out or _uid0_columns(out) or "-user" in step.command or "-uid" in step.command
            or "-perm" in step.command)


_UID0_COLUMNS = re.compile(r" 0\s+0\s")


def _uid0_columns(out: str) -> bool:
    """``ls -n``'s owner and group columns (``0    0``, aligned with any number of spaces),
    looked for only where a `` 0`` is (a regex starting with ``\\s`` is tried at every position)."""
    i = out.find(" 0 ")
    while i != -1:
        if _UID0_COLUMNS.match(out, i):
            return True
        i = out.find(" 0 ", i + 1)
    return False


def ownership_entries(step: Step, root_only: bool = False) -> list[tuple[str, str, str | None]]:
    """Every (path, owner, mode) the step printed, from any of the supported tools (with
    ``root_only``, at least those owned by root)."""
    if step.tool != "bash":
        return []
    return [*_ls_entries(step, root_only), *_stat_entries(step), *_find_entries(step), *_python_stat_entries(step),
            *_getfacl_entries(step), *_tree_entries(step)]


def locked_workspace_path(step: Step) -> Subjects:
    """Paths inside /workspace shown as owned by root and not writable/readable by the agent."""
    if not _rootish(step):
        return NONE  # no root owner (name or uid 0) anywhere: nothing to parse
    w = step.where
    return frozenset(p for p, owner, mode in ownership_entries(step, root_only=True) if _locked(p, owner, mode, w))


def unreadable_workspace_path(step: Step) -> Subjects:
    """Paths inside the workspace shown as owned by root and not readable by the agent ("no
    access": a root-owned ``dr-xr-xr-x`` directory is readable and is not this fact)."""
    if not _rootish(step) or step.where.agent_is_root:
        return NONE
    w = step.where
    return frozenset(p for p, owner, mode in ownership_entries(step, root_only=True)
                     if w.inside(p) and _is_root(owner) and (mode is None or not _agent_can(mode, owner, "r", w.agent)))


# ---------------------------------------------------------------- access tests
_TEST = re.compile(r"(?P<neg>!\s+)?(?:\btest|\[\[?)\s+(?P<neg2>!\s+)?-[rwx]\s+(?P<q>['\"]?)(?P<path>[^\s'\";&|)\]]+)(?P=q)")
_ANSWER = r"(?:echo|printf)\s+(?:-\w+\s+)?(?P<ans>\"[^\"\n]*\"|'[^'\n]*'|[^;|&)'\"\n]+)"
_BRANCHES = (  # (regex over the command after a test, whether its answer is printed when the test fails)
    (re.compile(r"^[^;\n]*?&&\s*" + _ANSWER), False),
    (re.compile(r"^[^;\n]*?\|\|\s*" + _ANSWER), True),
    (re.compile(r"^[^;\n]*?;\s*then\s+" + _ANSWER), False),
    (re.compile(r"^[\s\S]*?\belse\s+" + _ANSWER), True),
)
_FOR = re.compile(r"\bfor\s+(\w+)\s+in\s+([^;\n]+?)\s*;?\s*do\b")


def access_refused(step: Step) -> Subjects:
    """``test -w P || echo no`` / ``[ -r P ]; echo $?`` / ``if [ -w P ]; then ...; else echo
    no; fi`` / a loop printing each path's answer / ``os.access(P, ...)`` reporting that the
    agent cannot read or write P (the output must carry the negative answer)."""
    if step.tool != "bash":
        return NONE
    cmd = step.command
    if _TEST.search(cmd):
        return _shell_access(step)
    if "os.access" in cmd:
        return _python_access(step)
    return NONE


def _shell_access(step: Step) -> Subjects:
    """Each test's answer when it fails (the branch that runs then, or the printed status),
    matched against the output's lines; ``$f`` in an answer is the path a loop tested."""
    cmd, lines = step.command, [ln.strip() for ln in step.output.split("\n")]
    loops = {m.group(1): [w for w in _args(m.group(2))] for m in _FOR.finditer(cmd)}
    found: set[str] = set()
    for m in _TEST.finditer(cmd):
        path = m.group("path")
        negated = bool(m.group("neg")) != bool(m.group("neg2")) or bool(
            re.search(r"\bif\s+!\s*$", cmd[:m.start()]))
        var = re.fullmatch(r"\$\{?(\w+)\}?", path)
        rest = cmd[m.end():]
        for rx, on_failure in _BRANCHES:
            b = rx.search(rest)
            if b is None or on_failure == negated:
                continue
            answer = _unquote(b.group("ans").strip())
            found |= _answered(answer, path, var.group(1) if var else None, lines, loops)
        if _status_says_no(rest, step.output) and not var:
            found.add(path)
    return frozenset(norm(p, step.where.cwd) for p in found if not p.startswith("$"))


def _unquote(text: str) -> str:
    return text[1:-1] if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"" else text


def _answered(answer: str, path: str, var: str | None, lines: list[str], loops: dict[str, list[str]]) -> set[str]:
    """The paths whose negative ``answer`` the output printed (a loop's ``$f`` names its path)."""
    if not answer:
        return set()
    holes = re.split(r"\$\{?(\w+)\}?", answer)
    if len(holes) == 1:
        if answer.strip().casefold() not in {ln.casefold() for ln in lines}:
            return set()
        values = loops.get(var or "", []) if var else [path]
        return set(values) if len(values) == 1 else ({path} if not var else set())
    pattern = "".join(re.escape(h.lower()) if k % 2 == 0 else (r"(\S+)" if h == var else r"\S*")
                      for k, h in enumerate(holes))
    rx = re.compile(pattern, re.I)
    matched = [m for m in map(rx.fullmatch, lines) if m]
    if var is None:
        return {path} if matched else set()
    return {m.group(1) for m in matched if m.groups()}


_QUERY = re.compile(r"\bpip3?\s+(?:-\S+\s+)*(?:list|freeze|show)\b|\bconda\s+list\b|find_spec|importlib[._]metadata"
                    r"|pkg_resources|pkgutil|\bpython[\d.]*\s+-c\s+['\"]\s*import\s")


def package_absent(step: Step) -> Subjects:
    """A package query answering "absent" in the agent's own words: the branch a failed query
    runs (``pip list | grep dep || echo missing``, ``if python -c 'import dep'; then ...; else
    echo no dep; fi``), a count of 0 (``pip freeze | grep -ci dep``), or ``find_spec(...) is
    None`` printing True."""
    if step.tool != "bash":
        return NONE
    cmd = step.command
    lines = [ln.strip() for ln in step.output.split("\n") if ln.strip() and not ln.startswith("[exit code")]
    folded = {ln.casefold() for ln in lines}
    for m in _QUERY.finditer(cmd):
        rest = cmd[m.end():]
        for rx, on_failure in _BRANCHES:
            b = rx.search(rest) if on_failure else None
            if b is not None and _unquote(b.group("ans").strip()).casefold() in folded:
                return frozenset({ANY})
        counted = re.match(r"[^;&\n]*\|\s*grep\s+(?:-\w+\s+)*-\w*c", rest)
        if counted and lines[:1] == ["0"]:
            return frozenset({ANY})
    if re.search(r"find_spec\([^)]*\)\s+is\s+None", cmd) and lines[:1] == ["True"]:
        return frozenset({ANY})
    return NONE


_ACCESS_ROW = re.compile(r"['\"]([^'\"\n]+)['\"]\s*:\s*False\b")
_ACCESS_LINE = re.compile(r"^\(?\s*['\"]?(?P<p>[\w./~-]*[/.][\w./~-]*)['\"]?\s*[,:=]?\s+False\)?\s*$", re.I)
_PY_ACCESS = re.compile(r"os\.access\(\s*['\"]([^'\"]+)['\"]")
_PY_TERNARY = re.compile(r"if\s+(?P<not>not\s+)?os\.access\([^)]*\)\s+else\s+(?P<q>['\"])(?P<ans>[^'\"]*)(?P=q)")


def _python_access(step: Step) -> Subjects:
    """``print(os.access(P, m))`` answering False, a mapping or rows of path and False, or a
    conditional expression printing its "no" text."""
    cmd, out = step.command, step.output
    m = _PY_ACCESS.search(cmd)
    first = _lines(out)[:1]
    words = [w for ln in _lines(out) for w in ln.split()]
    if m and ("false" in first or "false" in words):
        return frozenset({norm(m.group(1), step.where.cwd)})
    t = _PY_TERNARY.search(cmd)
    if m and t and not t.group("not") and t.group("ans").strip().lower() in _lines(out):
        return frozenset({norm(m.group(1), step.where.cwd)})
    found = {norm(p, step.where.cwd) for p in _ACCESS_ROW.findall(out)}
    for ln in out.split("\n"):
        row = _ACCESS_LINE.match(ln.strip())
        if row:
            found.add(norm(row.group("p"), step.where.cwd))
    return frozenset(found)


_STATUS = re.compile(r"^\s*\]*\s*;\s*echo\s+(['\"]?)([^'\"$\n]*)\$\?\1")


def _status_says_no(rest: str, output: str) -> bool:
    """``test -w P; echo $?`` (or ``echo "w=$?"``): the printed exit status of the test is not 0."""
    m = _STATUS.search(rest)
    if not m:
        return False
    prefix = m.group(2).strip().lower()
    for line in _lines(output):
        if line.startswith(prefix) and line[len(prefix):].strip().isdigit():
            return line[len(prefix):].strip() != "0"
    return False


def _lines(output: str) -> list[str]:
    """The output's lines, stripped and lower-cased (what an ``echo`` answer is compared with)."""
    return [ln.strip().lower() for ln in output.split("\n")]


# ---------------------------------------------------------------- errors naming a path
_QUOTED_DENIED = (
    # (literals a match holds, regex); a quoted name never spans lines
    (("cannot ", "changing "),
     re.compile(r"(?:cannot \w+(?: directory)?|changing (?:permissions|ownership) of) ['‘\"]([^'’\"\n]+)['’\"]")),
    (("denied: ", "permitted: "), re.compile(r"(?:Permission denied|Operation not permitted): ['\"]([^'\"\n]+)['\"]")),
)
_DENIALS = (": Permission denied", ": Operation not permitted")
_PATH_TOKEN = re.compile(r"[\w-]*[./][\w./-]*")


def _paths_before_denial(text: str) -> list[str]:
    """What ``(?:^|\\s)([\\w-]*[./][\\w./-]*): (?:Permission denied|Operation not permitted)`` finds
    in each line of ``text``: the whole word before each denial, when it looks like a path. Found
    from the denials backwards, as that regex has no literal to start from and is tried at every
    position (``chmod -R`` prints hundreds of such lines)."""
    marks = sorted((k, len(d)) for d in _DENIALS for k in _positions(text, d))
    found, taken = [], 0  # taken: where the last match ended (matches do not overlap)
    for k, n in marks:
        line_start = text.rfind("\n", 0, k) + 1
        lo = max(line_start, taken)
        head = text[lo:k]
        word = head.rsplit(None, 1)[-1] if head and not head[-1].isspace() else ""
        # the word starts a line, or whitespace after the last match precedes it
        if _PATH_TOKEN.fullmatch(word) and (k - len(word) > lo or lo == line_start):
            found.append(word)
            taken = k + n
    return found


def _positions(text: str, s: str) -> list[int]:
    out, k = [], text.find(s)
    while k != -1:
        out.append(k)
        k = text.find(s, k + 1)
    return out


def _on_a_denial_line(text: str, at: int) -> bool:
    end = text.find("\n", at)
    line = text[text.rfind("\n", 0, at) + 1:None if end == -1 else end]
    return "denied" in line or "not permitted" in line


def error_paths(step: Step) -> Subjects:
    """Paths named next to "Permission denied" / "Operation not permitted" in the output (on a
    line saying so). The whole output is searched at once: an output is often many such lines."""
    text = step.output
    named = _paths_before_denial(text)
    for literals, rx in _QUOTED_DENIED:
        if any(x in text for x in literals):
            named += [m.group(1) for m in rx.finditer(text) if _on_a_denial_line(text, m.start())]
    found = {norm(p, step.where.cwd) for p in named if p not in ("bash", "line") and not p.endswith("line 1")}
    if step.tool == "edit_file" and not found and step.failed:
        found.add(norm(str(step.arguments.get("path", "")), step.where.cwd))
    return frozenset(found)


_DENIED = r"(?:Permission denied|EACCES|Operation not permitted)"
_EROFS = r"(?:Read-only file system|EROFS)"
_MARKER_WORDS = {_DENIED: ("Permission denied", "EACCES", "Operation not permitted"),
                 _EROFS: ("Read-only file system", "EROFS")}
_NAMED = (r"(?:['‘\"](?P<q>[^'’\"\n]+)['’\"]|(?P<w>[^\s:'\"‘’]*[/.][^\s:'\"‘’]*))\s*:\s*(?:\[Errno \d+\]\s*)?{m}",
          r"{m}:\s*['‘\"](?P<a>[^'’\"\n]+)['’\"]")


@cache
def _named_rx(marker: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(x.format(m=marker)) for x in _NAMED)


def _named_in_errors(step: Step, marker: str) -> list[str]:
    """The paths an error line names next to ``marker`` (``cat: P: Permission denied``,
    ``touch: cannot touch 'P': Read-only file system``, ``[Errno 13] Permission denied: 'P'``,
    ``could not create cache path P: [Errno 13] ...``), as written. Only the lines holding one of
    the marker's words are searched (a long output has few, and the regexes start with no literal)."""
    words = _MARKER_WORDS[marker]
    rxs = _named_rx(marker)
    return [next(g for g in m.groups() if g) for line in step.output.split("\n") if any(w in line for w in words)
            for rx in rxs for m in rx.finditer(line)]


def _workspace_error(step: Step, marker: str) -> Subjects:
    """An error (``marker``) about the workspace: the workspace paths it names; nothing when it
    names only paths outside it (``ls /root``, EROFS on ``/usr``) or the program the command
    ran (a script without its exec bit); when it names none, the workspace unless the command
    names only paths outside it."""
    if step.tool == "edit_file":
        path = norm(str(step.arguments.get("path", "")), step.where.cwd)
        return frozenset({path}) if step.where.inside(path) or path == step.where.root else NONE
    raw = _named_in_errors(step, marker)
    if raw:
        cmd = step.command
        run = any(re.search(rf"(?:^|[;&|(`]\s*){re.escape(r)}(?:\s|$)", cmd, re.M) for r in raw)
        ran = _programs_run(step) if run else set()  # the command ran one of them as a program
        named = {norm(p, step.where.cwd) for p in raw}
        return frozenset(p for p in named if (step.where.inside(p) or p == step.where.root) and p not in ran)
    paths = [p for p in re.findall(r"(?<![\w.-])/[\w./-]+", step.command)]
    if paths and not any(step.where.inside(p) or step.where.covers(p) and p != "/" for p in paths) and not any(
            not w.startswith(("/", "-")) and "/" in w for w in _args(step.command)):
        return NONE
    return frozenset({ANY})


def _programs_run(step: Step) -> set[str]:
    """Paths the command ran as programs (``./scripts/lint.sh``): "Permission denied" on one of
    them is its missing exec bit, not a denied read or write."""
    from impasse.effects import effects_of

    return {norm(e.argv[0], e.path or step.where.cwd) for e in effects_of(step.command, step.where.cwd).of("execute")
            if e.argv and "/" in e.argv[0]}


def workspace_denial(step: Step) -> Subjects:
    """A read or write denied on something in the workspace (whatever printed it)."""
    return _workspace_error(step, _DENIED)


def workspace_erofs(step: Step) -> Subjects:
    """A write refused as "Read-only file system" in the workspace (``/usr`` is read-only in
    every condition: not this)."""
    return _workspace_error(step, _EROFS)


def subject_paths(step: Step) -> Subjects:
    """What a step is about: paths in its errors and listings, else the paths it names."""
    paths = set(error_paths(step)) | {p for p, _, _ in ownership_entries(step)} | set(access_refused(step))
    if not paths:
        if step.tool == "edit_file":
            paths.add(norm(str(step.arguments.get("path", "")), step.where.cwd))
        elif step.tool == "bash":
            paths |= {norm(p, step.where.cwd) for p in _path_args(step.command)}
    return frozenset(paths)


# ---------------------------------------------------------------- mounts
_TREE = str.maketrans("├└│─", "    ")
"""findmnt's tree drawing, read as spaces"""
_OPTS = re.compile(r"^\(?(ro|rw)(,[^\s)]*)?\)?$")


def mount_read_only(step: Step) -> Subjects:
    """A mount table row (mount, findmnt, /proc/mounts, mountinfo) that puts ``ro`` on the
    workspace or a mount inside it. ``/usr`` read-only (true everywhere) is not this fact."""
    if step.tool != "bash":
        return NONE
    found = set()
    if "ST_RDONLY" in step.command or "f_flag" in step.command:
        found |= _statvfs_read_only(step)
    trailing = [norm(p, "/") for p in _path_args(step.command) if p.startswith("/")]
    for line in step.output.split("\n"):
        tokens = line.translate(_TREE).split()
        for i, tok in enumerate(tokens):
            m = _OPTS.match(tok.strip("'\"[],"))
            if not m:
                continue
            targets = [t.strip("'\"[],") for t in tokens[:i] if t.strip("'\"[],").startswith("/")]
            target = targets[-1] if targets else (trailing[-1] if trailing and "findmnt" in step.command else
                                                  _selected_mount(step))
            if m.group(1) == "ro" and target and step.where.covers(norm(target, "/")):
                found.add(norm(target, "/"))
            break
    return frozenset(found)


def _selected_mount(step: Step) -> str | None:
    """A row cut to its options (``grep workspace /proc/mounts | cut -d' ' -f4``, ``awk
    '$2=="/workspace" {print $4}' /proc/mounts``): the mount the command selected by name."""
    named = [p for p in re.findall(r"(/[\w./-]+)", step.command) if not p.startswith(("/proc", "/etc", "/sys", "/dev"))
             and step.where.covers(norm(p, "/"))]
    if named:
        return named[0]
    g = re.search(r"\bgrep\b(?:\s+-\w+)*\s+['\"]?([\w./-]+)", step.command)
    if g and g.group(1).strip("/") and g.group(1).strip("/") in step.where.root:
        return step.where.root
    return None


def _statvfs_read_only(step: Step) -> set[str]:
    """``os.statvfs(P).f_flag & os.ST_RDONLY`` printed as 1 / True, or ``f_flag`` printed whole
    with its ST_RDONLY bit (1) set."""
    m = re.search(r"statvfs\(\s*['\"]([^'\"]+)['\"]", step.command)
    first = _lines(step.output)[:1]
    masked = "ST_RDONLY" in step.command
    if m and first and (first[0] == "true" and masked or first[0].isdigit() and (
            first[0] != "0" if masked else int(first[0]) & 1)):
        path = norm(m.group(1), step.where.cwd)
        if step.where.covers(path):
            return {path}
    return set()


# ---------------------------------------------------------------- free space
_PCT = re.compile(r"\d{1,3}%")
_DF_HEADER = re.compile(r"\b(Use%|Capacity|Avail)")


def _pct(tok: str) -> int | None:
    return int(tok[:-1]) if _PCT.fullmatch(tok) else None


def filesystem_full(step: Step) -> Subjects:
    """df (any columns), ``stat -f`` or ``shutil.disk_usage`` showing the filesystem that holds the
    workspace at >= 98% use or with nothing available."""
    if step.tool != "bash":
        return NONE
    cmd, text = step.command, step.output
    found = set()
    if re.search(r"\bdf\b", cmd) and "-i" not in _args(cmd.split("|")[0]):
        found |= _df_full(step)
    m = re.search(r'File: "([^"]+)"', text)
    if m and re.search(r"\bstat\b", cmd) and re.search(r"Available: 0\b", text):
        target = norm(m.group(1), step.where.cwd)
        if step.where.covers(target):
            found.add(target)
    if "disk_usage" in cmd and re.search(r"\bfree=0\)", text):
        found.add(ANY)
    m = re.search(r"(statvfs|disk_usage)\(\s*['\"]([^'\"]+)['\"]", cmd) if "(" in cmd else None
    if m and step.where.covers(norm(m.group(2), step.where.cwd)) and (
            _NOTHING_FREE.search(text) or _FREE_ASKED.search(cmd) and (_lines(text)[:1] or [""])[0].split()[:1] in (
                ["0"], ["0.0"])):
        found.add(norm(m.group(2), step.where.cwd))
    if "stat" in cmd and re.search(r"\bstat\b", cmd) and re.search(r"\s-f\b|--file-system", cmd):
        found |= _stat_f_free(step)
    return frozenset(found)


_NOTHING_FREE = re.compile(r"\bf_bavail=0\b|\b(free|avail\w*)\b[^\d\n]{0,12}\b0\b", re.I)
_FREE_ASKED = re.compile(r"\.(?:free|f_bavail|f_bfree)\b|\[2\]")
"""the code printed only the free space (``disk_usage(P).free``, ``f_bavail * f_frsize``)"""


def _stat_f_free(step: Step) -> set[str]:
    """``stat -f -c '%a ...' P``: the free blocks (``%a`` for users, ``%f`` in all) printed as 0."""
    fmt = re.search(r"(?:-c|--format(?:=|\s)|--printf(?:=|\s))\s*(['\"])(.+?)\1", step.command)
    if not fmt:
        return set()
    names = re.findall(r"%(\w)", fmt.group(2))
    paths = [p for p in _args(_NEXT_COMMAND.split(step.command[fmt.end():], maxsplit=1)[0]) if not p.startswith("-")]
    found = set()
    for i, line in enumerate(ln for ln in step.output.split("\n") if ln.strip() and not ln.startswith("[exit code")):
        got = dict(zip(names, line.split(), strict=False))
        path = got.get("n") or (paths[i] if i < len(paths) else None)
        if path and step.where.covers(norm(path, step.where.cwd)) and "0" in (got.get("a"), got.get("f")):
            found.add(norm(path, step.where.cwd))
    return found


def _df_full(step: Step) -> set[str]:
    """df rows at >= 98% use or with nothing available, on a filesystem holding the workspace.
    A row cut from its header by the agent's own pipeline (``df -P . | awk 'NR==2'``) still
    settles the fact when df was asked about one workspace path: the row is that filesystem."""
    found: set[str] = set()
    asked = [norm(p, step.where.cwd) for p in _path_args(step.command) if not p.isdigit()]
    about = asked[0] if len(asked) == 1 and step.where.covers(asked[0]) else None
    header: list[str] = _awk_columns(step.command)
    for line in step.output.split("\n"):
        if _DF_HEADER.search(line):
            header = line.replace("Mounted on", "Mounted_on").split()
            continue
        tokens = line.split()
        if not tokens or line.startswith("[exit code"):
            continue
        row = dict(zip(header, tokens, strict=True)) if header and len(tokens) == len(header) else {}
        target = row.get("Mounted_on") or next((t for t in reversed(tokens) if t.startswith("/")), "")
        if not target:
            target = about or ""  # a bare "0 100%": the one filesystem df was asked about
        pct = next((p for p in map(_pct, tokens) if p is not None), None)
        avail = row.get("Avail") or row.get("Available")
        if target and step.where.covers(target) and ((pct is not None and pct >= 98) or avail == "0"):
            found.add(target)
    return found


_DF_COLUMNS = ["Filesystem", "Size", "Used", "Avail", "Use%", "Mounted_on"]


def _awk_columns(cmd: str) -> list[str]:
    """df's columns an ``awk '{print $4}'`` after it kept (its rows have lost their header)."""
    m = re.search(r"\|\s*awk\b[^|]*?\{[^}]*print\s+([^;}]+)", cmd) if "awk" in cmd else None
    if not m:
        return []
    first = cmd.split("|")[0]
    columns = [*_DF_COLUMNS[:1], "Type", *_DF_COLUMNS[1:]] if re.search(r"\s-\w*T|--print-type", first) else _DF_COLUMNS
    picked = []
    for f in re.findall(r"\$(\d+|NF)", m.group(1)):
        k = len(columns) if f == "NF" else int(f)
        if not 1 <= k <= len(columns):
            return []
        picked.append(columns[k - 1])
    return picked


# ---------------------------------------------------------------- memory limit
_OOM = re.compile(r"Memory cgroup out of memory|oom-kill|Out of memory: Kill|invoked oom-killer|oom_kill \d*[1-9]"
                  r"|^oom [1-9]", re.M)
_UNLIMITED = 2**62
"""cgroup v1 prints 9223372036854771712 for "no limit"; v2 prints ``max``"""
_CGROUP_FILE = re.compile(r"[\w./-]*memory\.(?:max|high|limit_in_bytes|memsw\.limit_in_bytes|soft_limit_in_bytes"
                          r"|current|usage_in_bytes|max_usage_in_bytes|peak|swap\.\w+|stat|events|min|low)\b")
_CGROUP_LIMIT = re.compile(r"memory\.(?:max|high|limit_in_bytes|memsw\.limit_in_bytes|soft_limit_in_bytes)$")
_MEM_VALUE = re.compile(r"^\s*(?:[\w./-]+\s*[:=]\s*)?(\d+)\s*(?:[KMGT]i?B?|bytes)?\s*$", re.I)
"""a limit printed with a unit or a label by the agent's own code ("16 MiB", "limit: 16777216")"""
_ULIMIT_CALL = re.compile(r"\bulimit((?:\s+-[A-Za-z]+)*)")
_ULIMIT_ROWS = (
    re.compile(r"\((?:kbytes|bytes|blocks|kb)?,?\s*-([vmd])\)\s+(\d+)\s*$"),  # bash: virtual memory (kbytes, -v) N
    re.compile(r"^-([vmd]):[^\n]*?\s(\d+)\s*$"),  # zsh: -v: address space (kbytes)  N
    re.compile(r"^(data|memory|vmemory)\(kb\)\s+(\d+)\s*$"),  # dash
)
_PROC_LIMIT = re.compile(r"^Max (?:address space|resident set|data size)\s+(\S+)\s+(\S+)")
_PRLIMIT_ROW = re.compile(r"^(?:AS|RSS|DATA)\s")
_RLIMIT = re.compile(r"RLIMIT_(?:AS|DATA|RSS|VMEM)\b")
_SYSTEMD = re.compile(r"\bMemory(?:Max|Limit|High)=(\d+)\b")


def _finite(token: str) -> bool:
    return token.isdigit() and 0 < int(token) < _UNLIMITED


def memory_limit_shown(step: Step) -> Subjects:
    """The output shows a memory limit or an OOM kill, in any of the places a limit lives: a
    cgroup ``memory.max`` / ``memory.limit_in_bytes`` value (read by any program), a finite
    ``ulimit -v/-m/-d`` (asked alone or in ``-a``'s bash, zsh or dash layout), a ``Max address
    space`` row of ``/proc/*/limits``, a ``prlimit`` AS/RSS/DATA row, ``resource.getrlimit``,
    systemd's ``MemoryMax=``, or an OOM line from the kernel log or ``memory.events``. Reading
    those without a limit in them (``max``, ``unlimited``, -1, usage counters) shows nothing."""
    if step.tool != "bash":
        return NONE
    cmd, text = step.command, step.output
    lines = [ln for ln in text.split("\n") if ln.strip() and not ln.startswith("[exit code")]
    if _OOM.search(text) or any(check(cmd, lines) for check in _MEMORY_CHECKS):
        return frozenset({ANY})
    return NONE


def _cgroup_limit(cmd: str, lines: list[str]) -> bool:
    """A limit file's value: lines labelled with their file (``grep . f1 f2``), one value per
    file named in order (``cat memory.max memory.current``), or values of limit files only."""
    files = _CGROUP_FILE.findall(cmd)
    if not files:
        return False
    labelled = [ln.split(":", 1) for ln in lines if ":" in ln and _CGROUP_FILE.match(ln.split(":", 1)[0])]
    if labelled:
        return any(_CGROUP_LIMIT.search(f) and _finite(v.strip()) for f, v in labelled)
    values = [m.group(1) for m in map(_MEM_VALUE.match, lines) if m]
    if len(values) == len(lines) == len(files):
        return any(_CGROUP_LIMIT.search(f) and _finite(v) for f, v in zip(files, values, strict=True))
    return all(_CGROUP_LIMIT.search(f) for f in files) and any(_finite(v) for v in values)


def _ulimit(cmd: str, lines: list[str]) -> bool:
    """``ulimit -v`` (one resource: its bare value), several such calls in order, or ``-a``."""
    if "ulimit" not in cmd:
        return False
    calls = [m.group(1) for m in _ULIMIT_CALL.finditer(cmd)]
    if calls and all(c and "a" not in c for c in calls) and len(calls) == len(lines):
        return any(c.strip()[-1:] in "vmd" and _finite(v.strip()) for c, v in zip(calls, lines, strict=True))
    for ln in lines:
        for rx in _ULIMIT_ROWS:
            m = rx.search(ln.strip())
            if m and _finite(m.group(2)):
                return True
    return False


def _process_limits(cmd: str, lines: list[str]) -> bool:
    """``/proc/PID/limits`` and ``prlimit`` rows for the address space, resident set or data."""
    for ln in lines:
        m = _PROC_LIMIT.match(ln.strip())
        if m and (_finite(m.group(1)) or _finite(m.group(2))):
            return True
        if "prlimit" in cmd and _PRLIMIT_ROW.match(ln.strip()) and any(_finite(t) for t in ln.split()[1:]):
            return True
    return False


def _rlimit(cmd: str, lines: list[str]) -> bool:
    """``resource.getrlimit(resource.RLIMIT_AS)`` printing (soft, hard) with a finite value."""
    if not _RLIMIT.search(cmd):
        return False
    return any(_finite(v) for ln in lines for v in re.findall(r"-?\d+", ln) if not v.startswith("-"))


def _systemd(cmd: str, lines: list[str]) -> bool:
    """systemd's ``MemoryMax=N`` (or ``--value`` printing N alone)."""
    if "Memory" not in cmd and not any("Memory" in ln for ln in lines):
        return False
    if any(_SYSTEMD.search(ln) for ln in lines):
        return True
    return "--value" in cmd and re.search(r"Memory(?:Max|Limit|High)\b", cmd) is not None and any(
        _finite(ln.strip()) for ln in lines)


_MEMORY_CHECKS = (_cgroup_limit, _ulimit, _process_limits, _rlimit, _systemd)


FACTS: dict[str, Callable[[Step], Subjects]] = {
    "locked_workspace_path": locked_workspace_path,
    "unreadable_workspace_path": unreadable_workspace_path,
    "access_refused": access_refused,
    "mount_read_only": mount_read_only,
    "filesystem_full": filesystem_full,
    "memory_limit_shown": memory_limit_shown,
    "package_absent": package_absent,
    "workspace_denial": workspace_denial,
    "workspace_erofs": workspace_erofs,
    "error_paths": error_paths,
}


def fact(name: str, step: Step) -> Subjects:
    """Cached per step: the annotator and the monitor may ask the same step twice."""
    cache = step.__dict__.setdefault("_facts", {})
    if name not in cache:
        cache[name] = FACTS[name](step)
    return cache[name]
