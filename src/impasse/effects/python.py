"""Inline Python (``python -c``, a heredoc into ``python``) into effects, with :mod:`ast`.

Agents print a stat with ``os.stat``, read a file with ``open``, patch a test with
``str.replace`` and a write, or shell out with ``subprocess``: the same acts as the shell tools,
spelled in Python. Calls are read where their arguments are literal (strings, names bound once to
a string, ``os.path.join`` / ``Path / "x"`` of those); anything else is ``unknown`` with the call.
Subprocess calls and ``os.system`` are parsed again as shell, through callbacks (this module does
not import the shell walker).
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Callable

from impasse.effects.model import Edit, Effect, resolve

RunArgv = Callable[[list[str], str | None, bool, str | None], list[Effect]]
RunShell = Callable[[str, str | None, bool], list[Effect]]
"""(command, cwd, fed): a shell command run by the code, with something on its stdin or not."""

_READS = {"read_text", "read_bytes"}
_WRITES = {"write_text": "write", "write_bytes": "write"}
_DELETE = {"os.remove", "os.unlink", "os.rmdir", "os.removedirs", "shutil.rmtree", "remove", "unlink", "rmtree"}
_COPY = {"shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree", "copy", "copy2", "copyfile",
         "copytree"}
_MOVE = {"shutil.move", "os.rename", "os.replace", "move", "rename"}
_INSPECT = {"os.stat", "os.lstat", "os.access", "os.path.exists", "os.path.isfile", "os.path.isdir",
            "os.path.getsize", "os.path.getmtime", "os.path.islink", "os.path.realpath", "shutil.disk_usage",
            "os.statvfs", "disk_usage", "stat", "lstat", "access"}
_LIST = {"os.listdir", "os.scandir", "os.walk", "glob.glob", "glob.iglob", "listdir", "scandir", "walk"}
_SUBPROCESS = {"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
               "subprocess.Popen", "run", "call", "check_call", "check_output", "Popen"}
_SHELL_STRING = {"os.system", "os.popen", "subprocess.getoutput", "subprocess.getstatusoutput", "system", "popen",
                 "getoutput", "getstatusoutput"}
_SPAWN = {"pexpect.spawn", "pexpect.run", "pexpect.spawnu", "pexpect.popen_spawn.PopenSpawn", "PopenSpawn", "spawn",
          "wexpect.spawn"}
"""Run a command and drive its prompts (what pexpect is for): something is fed to it."""
_DEFAULT_READS = {"spwd.getspnam": "/etc/shadow", "spwd.getspall": "/etc/shadow", "getspnam": "/etc/shadow",
                  "getspall": "/etc/shadow", "netrc.netrc": "~/.netrc"}
"""Calls that read a file they do not name (the shadow database, ~/.netrc when given no path)."""
_URL_OPENERS = {"urllib.request.urlopen", "urlopen", "urllib.request.urlretrieve", "urlretrieve", "requests.get"}
"""Calls that fetch a URL: a ``file://`` one reads that file."""
_READ_CALLS = {"read", "read_file", "dotenv_values", "load_dotenv", "dotenv.dotenv_values", "dotenv.load_dotenv",
               "from_private_key_file", "netrc.netrc", "netrc", "add", "load_pem_private_key_file"}
"""Calls whose literal path argument is a file they read (configparser's ``read``, python-dotenv,
paramiko keys, ``tarfile.add``)."""
_KNOWN = {"sys.executable": "python"}
"""Names whose value is known: the interpreter running the code is a python."""
_VALUE = "__VALUE__"
"""Stands for a value the code computes, in a command read for its shape (an f-string's hole)."""
_PATH_METHODS = {"unlink": "delete", "rmdir": "delete", "touch": "touch", "mkdir": "mkdir", "chmod": "chmod",
                 "stat": "inspect", "exists": "inspect", "is_file": "inspect", "is_dir": "inspect",
                 "iterdir": "list", "glob": "list", "rglob": "list", "open": "read", "lstat": "inspect"}


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else ""
    return ""


def _mode(node: ast.AST) -> str:
    """A chmod mode as written in the shell (0o644 -> 644), or the expression."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return oct(node.value)[2:]
    return ast.unparse(node)


class _Reader(ast.NodeVisitor):
    def __init__(self, cwd: str | None, run_argv: RunArgv, run_shell: RunShell, depth: int) -> None:
        self.cwd = cwd
        self.run_argv, self.run_shell = run_argv, run_shell
        self.depth = depth
        self.consts: dict[str, str | None] = {}
        self.handles: dict[str, tuple[str, str]] = {}
        """a name bound to open(path, mode) -> (path, kind)"""
        self.out: list[Effect] = []
        self.replacements: list[Edit] = []

    # ---------------------------------------------------------------- literal values
    def value(self, node: ast.AST | None) -> str | None:
        if node is None:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            v = node.value
            return v.decode(errors="replace") if isinstance(v, bytes) else v
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self.consts.get(node.id) if isinstance(node, ast.Name) else _KNOWN.get(_dotted(node))
        if isinstance(node, ast.JoinedStr):
            parts = [self.value(v.value) if isinstance(v, ast.FormattedValue) else self.value(v) for v in node.values]
            return "".join(parts) if all(p is not None for p in parts) else None  # type: ignore[arg-type]
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Add)):
            a, b = self.value(node.left), self.value(node.right)
            if a is None or b is None:
                return None
            return posixpath.join(a, b) if isinstance(node.op, ast.Div) else a + b
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            args = [self.value(a) for a in node.args]
            if name.endswith(("Path", "PurePath", "PosixPath")) and len(args) >= 1 and all(a is not None for a in args):
                return posixpath.join(*args)  # type: ignore[arg-type]
            if name in ("os.path.join", "path.join", "posixpath.join") and args and all(a is not None for a in args):
                return posixpath.join(*args)  # type: ignore[arg-type]
            if name in ("os.path.expanduser", "expanduser", "os.path.abspath", "os.fspath", "str", "shutil.which",
                        "which") and len(args) == 1:
                return args[0]
            if isinstance(node.func, ast.Attribute) and node.func.attr in ("expanduser", "resolve", "absolute"):
                return self.value(node.func.value)
        return None

    def path(self, node: ast.AST | None) -> str | None:
        v = self.value(node)
        return None if v is None else resolve(v, self.cwd)

    def template(self, node: ast.AST | None) -> str | None:
        """A command string's shape: its literal parts, with what the code computes (an
        f-string's holes, ``'...' + pw``) as one placeholder word. None when it has no literal part."""
        v = self.value(node)
        if v is not None or node is None:
            return v
        if isinstance(node, ast.JoinedStr):
            return "".join(self.value(x.value) or _VALUE if isinstance(x, ast.FormattedValue) else self.value(x) or ""
                           for x in node.values)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return (self.template(node.left) or _VALUE) + (self.template(node.right) or _VALUE)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            return re.sub(r"\{[^{}]*\}", _VALUE, self.value(node.func.value) or "") or None
        return None

    def fragments(self, node: ast.AST | None) -> list[str]:
        """The literal text inside an expression written to a file whose whole value is not
        literal (``'import pytest\\npytestmark = ...' + s``, an f-string, ``'\\n'.join([...])``)."""
        if node is None:
            return []
        v = self.value(node)
        if v is not None:
            return [v]
        if isinstance(node, ast.JoinedStr):
            return [x.value for x in node.values if isinstance(x, ast.Constant) and isinstance(x.value, str)]
        if isinstance(node, ast.BinOp):
            return self.fragments(node.left) + self.fragments(node.right)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return [f for e in node.elts for f in self.fragments(e)]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("join", "format"):
            return [f for a in node.args for f in self.fragments(a)] + (
                self.fragments(node.func.value) if node.func.attr == "format" else [])
        return []

    def emit(self, kind: str, path: str | None, **kw) -> None:
        self.out.append(Effect(kind, path, program="python", **kw))  # type: ignore[arg-type]

    def unknown(self, node: ast.AST, why: str) -> None:
        self.out.append(Effect("unknown", program="python", detail=why, content=ast.unparse(node)[:200]))

    # ---------------------------------------------------------------- bindings
    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        v = self.value(node.value)
        for t in node.targets:
            if isinstance(t, ast.Name):
                self.consts[t.id] = v if t.id not in self.consts or self.consts[t.id] == v else None
                self.bind_handle(t.id, node.value)
            elif isinstance(t, ast.Subscript) and _dotted(t.value) in ("os.environ", "environ"):
                self.emit("env", None, name=self.value(t.slice) or "", content=v)
            elif isinstance(t, ast.Subscript) and _dotted(t.value) == "sys.path":
                for e in getattr(node.value, "elts", []):
                    self.emit("env", self.path(e), name="sys.path", content=self.value(e))
            elif isinstance(t, ast.Subscript) and _dotted(t.value) == "sys.modules":
                self.emit("env", None, name="sys.modules", content=self.value(t.slice))

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            if isinstance(item.optional_vars, ast.Name):
                self.bind_handle(item.optional_vars.id, item.context_expr)
        self.generic_visit(node)

    def bind_handle(self, name: str, call: ast.AST) -> None:
        opened = self.opened(call)
        if opened is not None:
            self.handles[name] = opened

    def opened(self, call: ast.AST) -> tuple[str, str] | None:
        """(path, read|write|append) of ``open(p, mode)`` / ``Path(p).open(mode)``."""
        if not isinstance(call, ast.Call):
            return None
        name = _dotted(call.func)
        if name in ("open", "io.open", "codecs.open", "builtins.open"):
            target, mode_node = (call.args[0] if call.args else None), (call.args[1] if len(call.args) > 1 else None)
        elif isinstance(call.func, ast.Attribute) and call.func.attr == "open" and name != "os.open":
            target, mode_node = call.func.value, (call.args[0] if call.args else None)
        else:
            return None
        for kw in call.keywords:
            if kw.arg == "mode":
                mode_node = kw.value
        path = self.path(target)
        if path is None:
            return ("", "unknown")
        mode = self.value(mode_node) if mode_node is not None else "r"
        if mode is None:
            return (path, "unknown")
        return (path, "append" if "a" in mode else "write" if ("w" in mode or "x" in mode) else
                "edit" if "+" in mode else "read")

    # ---------------------------------------------------------------- calls
    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self.out.append(Effect("import", program="python", name=a.name))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and not node.level:
            self.out.append(Effect("import", program="python", name=node.module))

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        name = _dotted(node.func)
        if name == "filter" and node.args and isinstance(node.args[0], ast.Lambda):
            self.line_filter(node.args[0].body)
        attr = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        for handler in (self.call_io, self.call_text, self.call_files, self.call_paths, self.call_process,
                        self.call_reads):
            if handler(node, name, attr):
                return

    def call_reads(self, node: ast.Call, name: str, attr: str) -> bool:
        """Calls that read a file without ``open``: the shadow database (``spwd``), ``netrc``,
        ``configparser.read(path)``, python-dotenv, ``os.open`` (by its flags)."""
        args = node.args
        if name == "os.open" and args:
            flags = ast.unparse(args[1]) if len(args) > 1 else ""
            kind = "write" if re.search(r"O_(WRONLY|CREAT|TRUNC)", flags) else "edit" if "O_RDWR" in flags else "read"
            self.path_effect(kind, args[0], node)
            return True
        if name in _DEFAULT_READS and not args:
            self.emit("read", _DEFAULT_READS[name])
            return True
        target = self.value(args[0]) if args else None
        if name in _URL_OPENERS and target is not None and target.startswith("file://"):
            self.emit("read", resolve(target[len("file://"):], self.cwd))
            return True
        if (name in _READ_CALLS or attr in _READ_CALLS) and target is not None and target.startswith(("/", "~", ".")):
            self.emit("read", resolve(target, self.cwd))
            return True
        if name in _DEFAULT_READS:
            self.emit("read", _DEFAULT_READS[name])
            return True
        return False

    def visit_comprehension(self, node: ast.comprehension) -> None:
        """``[l for l in lines if 'assert' not in l]`` written back drops those lines: each
        negative test of a line against a literal is a deletion of the lines holding it."""
        self.generic_visit(node)
        for cond in node.ifs:
            self.line_filter(cond)

    def line_filter(self, cond: ast.AST) -> None:
        negated = isinstance(cond, ast.UnaryOp) and isinstance(cond.op, ast.Not)
        test = cond.operand if negated else cond  # type: ignore[attr-defined]
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            needle = self.value(test.left)
            drops = isinstance(test.ops[0], ast.NotIn) != negated
            if needle is not None and drops and isinstance(test.ops[0], (ast.In, ast.NotIn)):
                self.replacements.append(Edit("delete", needle, regex=False))
        elif negated and isinstance(test, ast.Call) and test.args:
            name = _dotted(test.func)
            needle = self.value(test.args[0])
            if needle is None:
                return
            if isinstance(test.func, ast.Attribute) and test.func.attr in ("startswith", "endswith"):
                self.replacements.append(Edit("delete", needle, regex=False))
            elif name in ("re.match", "re.search", "re.fullmatch"):
                self.replacements.append(Edit("delete", needle))
        elif isinstance(cond, ast.BoolOp):
            for v in cond.values:
                self.line_filter(v)

    def call_io(self, node: ast.Call, name: str, attr: str) -> bool:
        """open(), a handle's write(), Path.read_text / write_text."""
        args = node.args
        opened = self.opened(node)
        if opened is not None:
            if opened[1] == "unknown":
                self.unknown(node, "open() of a path or with a mode that is not literal")
            else:
                self.emit(opened[1], opened[0])
            return True
        if attr == "close" and isinstance(node.func, ast.Attribute):
            handle = self.handles.get(node.func.value.id) if isinstance(node.func.value, ast.Name) else self.opened(
                node.func.value)
            if handle is not None and handle[0] and handle[1] == "write" and not isinstance(node.func.value, ast.Name):
                self.emit("truncate", handle[0])  # open(p, 'w').close(): emptied
                return True
        if attr in ("write", "writelines") or name == "print":
            handle = self.handle_of(node, name)
            if handle is not None and handle[0]:
                text = args if name == "print" else args[:1]
                content = "".join(v + ("\n" if name == "print" else "") for v in map(self.value, text)
                                  if v is not None) if all(self.value(a) is not None for a in text) else None
                self.emit("append" if handle[1] == "append" else "write", handle[0], content=content,
                          edits=self.partial(text[0] if len(text) == 1 else ast.List(list(text)), content))
                return True
        if attr in _READS or attr in _WRITES:
            path = self.path(node.func.value)  # type: ignore[attr-defined]
            if path is None:
                return False
            if attr in _READS:
                self.emit("read", path)
            else:
                content = self.value(args[0]) if args else None
                self.emit("write", path, content=content, edits=self.partial(args[0] if args else None, content))
            return True
        return False

    def handle_of(self, node: ast.Call, name: str) -> tuple[str, str] | None:
        """The file a ``write`` / ``print(..., file=f)`` goes to: a handle bound to an open()."""
        if name == "print":
            target = next((kw.value for kw in node.keywords if kw.arg == "file"), None)
            if target is None:
                return None
        else:
            target = node.func.value  # type: ignore[attr-defined]
        return self.handles.get(target.id) if isinstance(target, ast.Name) else self.opened(target)

    def partial(self, node: ast.AST | None, content: str | None) -> tuple[Edit, ...]:
        """Text written around what the code computed, when the whole is not literal."""
        if content is not None:
            return ()
        return tuple(Edit("insert", "", f, regex=False) for f in self.fragments(node) if f.strip())

    def call_text(self, node: ast.Call, name: str, attr: str) -> bool:
        """str.replace / re.sub with literal arguments: what a read-modify-write changes."""
        args = node.args
        if len(args) < 2 or not (attr == "replace" and name not in _MOVE and not name.startswith("os.")
                                 or name in ("re.sub", "re.subn")):
            return False
        old, new = self.value(args[0]), self.value(args[1])
        if old is not None and new is not None:
            self.replacements.append(Edit("sub", old, new, regex=attr != "replace"))
        return True

    def call_files(self, node: ast.Call, name: str, attr: str) -> bool:
        """Deletions, copies and moves, chmod / chown, stat-like and listing calls."""
        args = node.args
        if name in _DELETE:
            self.path_effect("delete", args[0] if args else None, node)
        elif name in _COPY or name in _MOVE:
            src, dst = (self.path(args[0]) if args else None), (self.path(args[1]) if len(args) > 1 else None)
            self.transfer(node, name, src, dst, copy=name in _COPY)
        elif attr == "rename" and isinstance(node.func, ast.Attribute):
            self.transfer(node, attr, self.path(node.func.value), self.path(args[0]) if args else None, copy=False)
        elif name in ("os.chmod", "os.lchmod", "os.chown", "os.lchown", "shutil.chown", "chmod", "chown"):
            mode = (_mode(args[1]),) if len(args) > 1 else ()
            self.path_effect("chown" if "chown" in name else "chmod", args[0] if args else None, node, argv=mode)
        elif name in _INSPECT:
            self.path_effect("inspect", args[0] if args else None, node)
        elif name in _LIST:
            self.path_effect("list", args[0] if args else ast.Constant("."), node)
        elif name in ("os.chdir", "chdir") and args:
            self.cwd = self.path(args[0])
        else:
            return False
        return True

    def transfer(self, node: ast.AST, name: str, src: str | None, dst: str | None, copy: bool) -> None:
        if src is None or dst is None:
            self.unknown(node, f"{name} of paths that are not literal")
            return
        self.emit("read" if copy else "delete", src)
        self.emit("write", dst, source=src, detail="copy" if copy else "move")

    def call_paths(self, node: ast.Call, name: str, attr: str) -> bool:
        """The import path and the environment: sys.path, os.environ, imports by name;
        pathlib methods on a literal Path."""
        args = node.args
        if name in ("sys.path.insert", "sys.path.append") and args:
            self.emit("env", self.path(args[-1]), name="sys.path", content=self.value(args[-1]))
        elif name in ("os.putenv", "os.environ.setdefault") and len(args) >= 2:
            self.emit("env", None, name=self.value(args[0]) or "", content=self.value(args[1]))
        elif name in ("importlib.import_module", "import_module", "__import__") and args:
            self.out.append(Effect("import", program="python", name=self.value(args[0]) or ""))
        elif attr in _PATH_METHODS and isinstance(node.func.value, ast.Call) and (  # type: ignore[attr-defined]
                self.value(node.func.value) is not None):  # type: ignore[attr-defined]
            self.path_effect(_PATH_METHODS[attr], node.func.value, node)  # type: ignore[attr-defined]
        else:
            return False
        return True

    def call_process(self, node: ast.Call, name: str, attr: str) -> bool:
        """exec/eval of literal code, os.system and subprocess, pytest.main."""
        args = node.args
        if not args:
            return False
        if name in ("exec", "eval") and self.value(args[0]) is not None:
            self.out.extend(python_effects(self.value(args[0]) or "", self.cwd, self.run_argv, self.run_shell,
                                           self.depth + 1))
        elif name in _SHELL_STRING or name in _SPAWN:
            command = self.template(args[0])
            if command is None:
                self.unknown(node, f"{name} of a command that is not literal")
            else:
                mode = self.value(args[1]) if len(args) > 1 else None
                fed = name in _SPAWN or (name in ("os.popen", "popen") and bool(mode) and "w" in (mode or ""))
                self.out.extend(self.run_shell(command, self.cwd, fed))
        elif name in _SUBPROCESS and (name.startswith("subprocess") or name == "Popen"):
            self.subprocess(node, name)
        elif name == "pytest.main":
            argv = self.list_of(args[0])
            if argv is not None:
                self.out.extend(self.run_argv(["pytest", *argv], None, False, self.cwd))
        else:
            return False
        return True

    def path_effect(self, kind: str, target: ast.AST | None, node: ast.AST, **kw) -> None:
        path = self.path(target)
        if path is None:
            self.unknown(node, f"{kind} of a path that is not literal")
        else:
            self.emit(kind, path, **kw)

    def list_of(self, node: ast.AST, shape: bool = False) -> list[str] | None:
        """A literal list of strings; with ``shape``, a computed item (a password from a loop)
        is a placeholder so the program and its options can still be read."""
        if isinstance(node, (ast.List, ast.Tuple)):
            vals = [self.value(e) for e in node.elts]
            if shape and vals and vals[0] is not None:
                return [v if v is not None else _VALUE for v in vals]
            return vals if all(v is not None for v in vals) else None  # type: ignore[return-value]
        return None

    def subprocess(self, node: ast.Call, name: str) -> None:
        first = node.args[0]
        kws = {kw.arg: kw.value for kw in node.keywords if kw.arg}
        shell = isinstance(kws.get("shell"), ast.Constant) and kws["shell"].value is True  # type: ignore[attr-defined]
        stdin = self.value(kws["input"]) if "input" in kws else None
        fed = "input" in kws or "stdin" in kws
        cwd = self.path(kws["cwd"]) if "cwd" in kws else self.cwd
        if shell:
            command = self.template(first)
            if command is None:
                self.unknown(node, f"{name} of a command that is not literal")
            else:
                self.out.extend(self.run_shell(command, cwd, fed))
            return
        argv = self.list_of(first, shape=True)
        if argv is None:
            single = self.value(first)
            argv = [single] if single is not None else None
        if argv is None:
            self.unknown(node, f"{name} of arguments that are not literal")
            return
        self.out.extend(self.run_argv(argv, stdin, fed, cwd))


def python_effects(code: str, cwd: str | None, run_argv: RunArgv, run_shell: RunShell, depth: int = 0) -> list[Effect]:
    """Effects of running ``code`` in ``cwd``. A file both read and written by the code is an
    ``edit`` carrying the literal replacements the code makes (``str.replace``, ``re.sub``)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError) as e:
        return [Effect("unknown", program="python", detail=f"python does not parse: {e.__class__.__name__}",
                       content=code[:200])]
    if depth > 4:
        return [Effect("unknown", program="python", detail="nested too deep")]
    r = _Reader(cwd, run_argv, run_shell, depth)
    r.visit(tree)
    read = {e.path for e in r.out if e.kind == "read"}
    out = []
    rich = {e.path for e in r.out if e.kind in ("write", "append", "truncate") and (
        e.content is not None or e.edits or e.kind == "truncate")}
    for e in r.out:
        if e.kind == "write" and e.content is None and not e.edits and e.path in rich:
            continue  # open(p, 'w') seen again as its .write(...), which says what was written
        if e.kind == "write" and e.path in read and e.content is None:
            e = Effect("edit", e.path, program="python", edits=tuple(r.replacements) + e.edits, via=e.via)
        elif e.kind == "edit" and r.replacements and not e.edits:
            e = Effect(e.kind, e.path, program="python", content=e.content, edits=tuple(r.replacements), via=e.via,
                       source=e.source, detail=e.detail)
        out.append(e)
    return list(dict.fromkeys(out))  # open(p, 'w').write(s) is seen as the open and as the write
