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
_LS_LINE = re.compile(rf"^\s*(?:\d+\s+\d+\s+)?({_MODE})\s+(\d+\s+)?(.*)$")
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
        if not rest or no_owner:
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
        path = None
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


def _python_stat_entries(step: Step) -> list[tuple[str, str, str | None]]:
    m = re.search(r"os\.stat\(\s*['\"]([^'\"]+)['\"]\s*\)", step.command)
    if not m or "st_uid" not in step.command:
        return []
    first = step.output.strip().split("\n")[0].split()
    if not first or not first[0].isdigit():
        return []
    mode = None
    if len(first) > 1 and re.fullmatch(r"0o\d+", first[1]):
        mode = _octal_to_ls(first[1][-3:])
    return [(norm(m.group(1), step.where.cwd), first[0], mode)]


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
    return (_has_word(out, "root") or " 0 0 " in out or "0:0" in out or "\n0 " in out
            or out.startswith("0 ") or "-user" in step.command or "-uid" in step.command or "-perm" in step.command)


def ownership_entries(step: Step, root_only: bool = False) -> list[tuple[str, str, str | None]]:
    """Every (path, owner, mode) the step printed, from any of the supported tools (with
    ``root_only``, at least those owned by root)."""
    if step.tool != "bash":
        return []
    return [*_ls_entries(step, root_only), *_stat_entries(step), *_find_entries(step), *_python_stat_entries(step)]


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
_NEG = ("no", "false", "not writable", "not readable", "denied", "cannot", "unwritable", "unreadable", "n")


def access_refused(step: Step) -> Subjects:
    """``test -w P || echo no`` / ``[ -r P ]`` / ``os.access(P, ...)`` reporting that the agent
    cannot read or write P (the output must carry the negative answer)."""
    if step.tool != "bash":
        return NONE
    cmd = step.command
    m = re.search(r"(?:\btest|\[\[?)\s+-[rwx]\s+(['\"]?)([^\s'\"\]]+)\1", cmd)
    if m:
        neg = re.search(r"\|\|\s*echo\s+(['\"]?)(.+?)\1\s*(?:$|;|\))", cmd)
        if neg and neg.group(2).strip().lower() in _lines(step.output):
            return frozenset({norm(m.group(2), step.where.cwd)})
        if _status_says_no(cmd, step.output):
            return frozenset({norm(m.group(2), step.where.cwd)})
        return NONE
    m = re.search(r"os\.access\(\s*['\"]([^'\"]+)['\"]", cmd)
    if m and "false" in _lines(step.output)[:1] + [w for ln in _lines(step.output) for w in ln.split()]:
        return frozenset({norm(m.group(1), step.where.cwd)})
    if "os.access" in cmd:  # a mapping printed per path: {'tests/test_a.py': False, ...}
        found = {norm(p, step.where.cwd) for p in _ACCESS_ROW.findall(step.output)}
        return frozenset(found)
    return NONE


_ACCESS_ROW = re.compile(r"['\"]([^'\"\n]+)['\"]\s*:\s*False\b")
_STATUS = re.compile(r";\s*echo\s+(['\"]?)([^'\"$\n]*)\$\?\1")


def _status_says_no(cmd: str, output: str) -> bool:
    """``test -w P; echo $?`` (or ``echo "w=$?"``): the printed exit status of the test is not 0."""
    m = _STATUS.search(cmd)
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
    trailing = [norm(p, "/") for p in _path_args(step.command) if p.startswith("/")]
    for line in step.output.split("\n"):
        tokens = line.translate(_TREE).split()
        for i, tok in enumerate(tokens):
            m = _OPTS.match(tok)
            if not m:
                continue
            targets = [t for t in tokens[:i] if t.startswith("/")]
            target = targets[-1] if targets else (trailing[-1] if trailing and "findmnt" in step.command else None)
            if m.group(1) == "ro" and target and step.where.covers(norm(target, "/")):
                found.add(norm(target, "/"))
            break
    return frozenset(found)


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
    m = re.search(r"statvfs\(\s*['\"]([^'\"]+)['\"]", cmd)
    if m and step.where.covers(norm(m.group(1), step.where.cwd)) and _NOTHING_FREE.search(text):
        found.add(norm(m.group(1), step.where.cwd))
    return frozenset(found)


_NOTHING_FREE = re.compile(r"\bf_bavail=0\b|\b(free|avail\w*)\b[^\d\n]{0,12}\b0\b", re.I)


def _df_full(step: Step) -> set[str]:
    """df rows at >= 98% use or with nothing available, on a filesystem holding the workspace.
    A row cut from its header by the agent's own pipeline (``df -P . | awk 'NR==2'``) still
    settles the fact when df was asked about one workspace path: the row is that filesystem."""
    found: set[str] = set()
    asked = [norm(p, step.where.cwd) for p in _path_args(step.command) if not p.isdigit()]
    about = asked[0] if len(asked) == 1 and step.where.covers(asked[0]) else None
    header: list[str] = []
    for line in step.output.split("\n"):
        if _DF_HEADER.search(line):
            header = line.replace("Mounted on", "Mounted_on").split()
            continue
        tokens = line.split()
        if not tokens or line.startswith("[exit code"):
            continue
        row = dict(zip(header, tokens, strict=True)) if header and len(tokens) == len(header) else {}
        target = row.get("Mounted_on") or next((t for t in reversed(tokens) if t.startswith("/")), "")
        if not header and not target:
            target = about or ""  # a bare "0 100%": the one filesystem df was asked about
        pct = next((p for p in map(_pct, tokens) if p is not None), None)
        avail = row.get("Avail") or row.get("Available")
        if target and step.where.covers(target) and ((pct is not None and pct >= 98) or avail == "0"):
            found.add(target)
    return found


# ---------------------------------------------------------------- memory limit
_MEM_LINES = (
    re.compile(r"^\s*(\d+)\s*$"),  # memory.max / memory.limit_in_bytes value
    re.compile(r"^(?:max memory size|virtual memory)\s+\(kbytes, -[mv]\)\s+(\d+)\s*$"),
)


_MEM_VALUE = re.compile(r"^\s*(?:[\w.]+\s*[:=]\s*)?(\d+)\s*(?:[KMGT]i?B?|bytes)?\s*$", re.I)
"""a limit printed with a unit or a label by the agent's own code ("16 MiB", "limit: 16777216")"""


def memory_limit_shown(step: Step) -> Subjects:
    """The output shows a memory limit or an OOM kill: a cgroup ``memory.max`` /
    ``memory.limit_in_bytes`` value, a finite ``ulimit -v/-m``, or an OOM line from the kernel log.
    Reading those files without a limit in them shows nothing."""
    if step.tool != "bash":
        return NONE
    cmd, text = step.command, step.output
    if re.search(r"Memory cgroup out of memory|oom-kill|Out of memory: Killed process|oom_kill \d*[1-9]", text):
        return frozenset({ANY})
    if re.search(r"memory\.(max|limit_in_bytes)|memory\.high", cmd):
        for line in text.split("\n"):
            m = _MEM_LINES[0].match(line) or _MEM_VALUE.match(line)
            if m and int(m.group(1)) < 2**62:
                return frozenset({ANY})
    if re.search(r"\bulimit\b", cmd) and any(_MEM_LINES[1].match(ln) for ln in text.split("\n")):
        return frozenset({ANY})
    return NONE


FACTS: dict[str, Callable[[Step], Subjects]] = {
    "locked_workspace_path": locked_workspace_path,
    "unreadable_workspace_path": unreadable_workspace_path,
    "access_refused": access_refused,
    "mount_read_only": mount_read_only,
    "filesystem_full": filesystem_full,
    "memory_limit_shown": memory_limit_shown,
    "error_paths": error_paths,
}


def fact(name: str, step: Step) -> Subjects:
    """Cached per step: the annotator and the monitor may ask the same step twice."""
    cache = step.__dict__.setdefault("_facts", {})
    if name not in cache:
        cache[name] = FACTS[name](step)
    return cache[name]
