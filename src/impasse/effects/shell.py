"""Shell calls into effects, with tree-sitter's bash grammar.

Why tree-sitter-bash: agents' commands are full of heredocs, ``case``, ``[[ ]]`` and ``$(( ))``,
which bashlex (the pure-Python alternative) refuses to parse, and it is MIT-licensed where bashlex
is GPL-3 (this package is MIT and its core is imported into other people's harnesses). It parses a
typical command in ~15 µs (bashlex: ~600 µs), and :func:`effects_of` caches per distinct command.
It is a core dependency (two wheels, ~0.9 MB, no dependencies of their own); without it every
command is one ``unknown`` effect and the monitor and annotator still run on their output rules.

Semantics kept: pipelines (stdin literals flow to ``tee``, ``sudo -S``, ``python -``, ``xargs``),
``&&`` / ``||`` / ``;``, subshells (``cd`` inside does not leak), redirections (``>``, ``>>``,
``<``, heredocs, here-strings), wrappers (``sudo``, ``env``, ``timeout``, ``xargs``, ...),
``find -exec`` / ``-delete``, ``bash -c`` / ``eval`` (parsed again), ``cd`` changing the base of
relative paths, shell variables and ``for`` values that are literal, and interpreters' inline code
(Python read with ``ast``: see :mod:`impasse.effects.python`). Anything else is ``unknown``.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from importlib import resources
from typing import Any

import yaml

from impasse.effects.edits import awk_edits, diff_edits, ex_edits, grep_edits, perl_edits, sed_edits
from impasse.effects.model import Edit, Effect, Effects, resolve
from impasse.effects.python import python_effects

__all__ = ["effects_of", "sed_edits", "table"]

MAX_DEPTH = 4
"""bash -c inside python -c inside bash -c ...: deeper than this is reported as unknown."""
_GLOB = re.compile(r"[*?\[]")
_PYTHON = re.compile(r"^(python[\d.]*|pypy[\d.]*)$")
_SHELLS = ("bash", "sh", "dash", "zsh", "ksh")
_INLINE = {"perl": ("-e", "-E"), "ruby": ("-e",), "expect": ("-c",), "node": ("-e", "-p", "--eval", "--print"),
           "nodejs": ("-e", "-p"), "php": ("-r",), "Rscript": ("-e",), "lua": ("-e",)}


@cache
def table() -> dict[str, Any]:
    return yaml.safe_load(resources.files("impasse.effects").joinpath("programs.yaml").read_text())


@cache
def _parser() -> Any:
    """The bash parser, or None when tree-sitter is not installed (then every command is unknown)."""
    try:
        import tree_sitter_bash
        from tree_sitter import Language, Parser
    except ImportError:
        return None
    return Parser(Language(tree_sitter_bash.language()))


@dataclass(frozen=True)
class Word:
    text: str
    literal: bool = True
    glob: bool = False


@dataclass(frozen=True)
class Feed:
    """What a command sends down a pipe: its stdout when literal, or the paths it lists."""

    text: str | None = None
    paths: tuple[Word, ...] = ()
    fed: bool = False
    """Something reaches stdin (a pipe, a redirection from a file, a heredoc or here-string)."""
    derived: tuple[str, tuple[Edit, ...]] | None = None
    """The text is a file's content with these edits (``grep -v assert f``, ``sed '/x/d' f``,
    ``cat f``): written back over the file, it is an edit of it."""
    source: str | None = None
    """The file redirected to stdin (``patch < fix.diff``)."""


NOTHING = Feed()


@lru_cache(maxsize=65536)
def effects_of(command: str, cwd: str | None = "/workspace/repo") -> Effects:
    """What ``command`` does when run in ``cwd`` (None: unknown base; relative paths stay
    relative). Cached per (command, cwd): agents repeat themselves."""
    w = _Walker(cwd)
    w.shell(command)
    return Effects(tuple(w.out), cwd)


class _Walker:
    def __init__(self, cwd: str | None, depth: int = 0, via: tuple[str, ...] = ()) -> None:
        self.cwd = cwd
        self.depth = depth
        self.via = via
        self.vars: dict[str, str | None] = {}
        self.out: list[Effect] = []
        self.inherited: Feed = NOTHING
        """What the shell itself was given on stdin (``echo pw | bash -c 'sudo -S id'``): the
        commands inside read it unless something else is on their stdin."""
        self.derived: dict[str, tuple[str, tuple[Edit, ...]]] = {}
        """Files this command wrote as another file's edited content (``grep -v x f > t``)."""

    # ------------------------------------------------------------------ entry points
    def shell(self, text: str) -> None:
        parser = _parser()
        if parser is None:
            self.emit("unknown", detail="shell parser not installed (pip install tree-sitter-bash)")
            return
        if self.depth > MAX_DEPTH:
            self.emit("unknown", detail="nested too deep", content=text[:200])
            return
        data = text.encode()
        self._src = data
        self.node(parser.parse(data).root_node)

    def sub(self, via: str) -> _Walker:
        w = _Walker(self.cwd, self.depth + 1, (*self.via, via) if via else self.via)
        w.vars = dict(self.vars)
        w.inherited = self.inherited
        w.derived = self.derived
        return w

    def merge(self, w: _Walker) -> None:
        self.out.extend(w.out)

    def emit(self, kind: str, path: str | None = None, **kw: Any) -> None:
        self.out.append(Effect(kind, path, via=self.via, **kw))  # type: ignore[arg-type]

    # ------------------------------------------------------------------ tree walk
    def node(self, n: Any, feed: Feed = NOTHING) -> Feed:
        handler = _NODES.get(n.type)
        if handler is not None:
            return handler(self, n, feed)
        if n.type in _SILENT:
            return NOTHING
        for c in n.named_children:  # program, list, compound statements, if/while/case, functions
            self.node(c)
        return NOTHING

    def subshell(self, n: Any, feed: Feed) -> Feed:
        saved, vars_ = self.cwd, dict(self.vars)
        for c in n.named_children:
            self.node(c)
        self.cwd, self.vars = saved, vars_
        return NOTHING

    def substitution(self, n: Any, feed: Feed) -> Feed:
        w = self.sub("")
        for c in n.named_children:
            w.node(c)
        self.merge(w)
        return NOTHING

    def error(self, n: Any, feed: Feed) -> Feed:
        self.emit("unknown", detail="shell syntax error", content=self.text(n)[:200])
        return NOTHING

    def text(self, n: Any) -> str:
        return n.text.decode(errors="replace")

    def pipeline(self, parts: list[Any], feed: Feed) -> Feed:
        for k, c in enumerate(parts):
            feed = self.node(c, replace(feed, fed=True) if k else feed)
        return feed

    def redirected(self, n: Any, feed: Feed = NOTHING) -> Feed:
        body = n.child_by_field_name("body")
        redirects = [c for c in n.named_children if c is not body]
        if body is None:  # `> f` alone empties f
            self.redirections(redirects, Feed(""), NOTHING)
            return NOTHING
        if body.type == "command":
            return self.command(body, feed, redirects)
        if body.type in ("list", "pipeline"):  # `a && b > f`: the redirection is b's
            kids = body.named_children
            if body.type == "pipeline":
                feed = self.pipeline(kids[:-1], feed)
            else:
                for c in kids[:-1]:
                    self.node(c)
                feed = NOTHING
            last = kids[-1] if kids else None
            if last is not None and last.type == "command":
                return self.command(last, feed, redirects)
            if last is not None:
                self.node(last, feed)
            self.redirections(redirects, None, NOTHING)
            return NOTHING
        stdin = self.redirections(redirects, None, NOTHING, inputs_only=True)
        self.node(body, stdin or feed)
        self.redirections(redirects, None, NOTHING, outputs_only=True)
        return NOTHING

    # ------------------------------------------------------------------ words
    def word(self, n: Any) -> Word:
        t = n.type
        if t == "command_name":
            return self.word(n.named_children[0]) if n.named_children else Word(self.text(n))
        if t == "word":
            raw = self.text(n)
            return Word(re.sub(r"\\(.)", r"\1", raw), True, bool(_GLOB.search(raw)))
        if t == "raw_string":
            return Word(self.text(n)[1:-1])
        if t == "ansi_c_string":
            body = self.text(n)[2:-1]
            return Word(body.encode().decode("unicode_escape", errors="replace"))
        if t in ("number", "string_content", "heredoc_content"):
            return Word(self.text(n))
        if t in ("simple_expansion", "expansion"):
            name = re.sub(r"[${}]", "", self.text(n))
            value = self.vars.get(name)
            return Word(value, True, bool(_GLOB.search(value))) if value is not None else Word(self.text(n), False)
        if t in ("command_substitution", "process_substitution"):
            self.node(n)
            return Word(self.text(n), False)
        if t in ("string", "concatenation", "translated_string"):
            parts = [self.word(c) for c in n.named_children]
            if t == "string" and not n.named_children:
                return Word("")
            text = "".join(p.text for p in parts)
            if t == "string":  # quotes and spaces between string_content nodes are kept as written
                inner = self.text(n)[1:-1]
                if all(p.literal for p in parts) and "$" not in inner and "`" not in inner:
                    text = inner.replace('\\"', '"').replace("\\\\", "\\").replace("\\$", "$")
            return Word(text, all(p.literal for p in parts), any(p.glob for p in parts) and t != "string")
        return Word(self.text(n), False)

    # ------------------------------------------------------------------ assignments, loops, tests
    def assignments(self, n: Any, feed: Feed = NOTHING) -> Feed:
        export = n.type == "declaration_command"
        nodes = [n] if n.type == "variable_assignment" else [c for c in n.named_children
                                                           if c.type == "variable_assignment"]
        for a in nodes:
            name = a.child_by_field_name("name")
            value = a.child_by_field_name("value")
            key = self.text(name) if name is not None else ""
            w = self.word(value) if value is not None else Word("")
            self.vars[key] = w.text if w.literal else None
            self.emit("env", name=key, content=w.text, detail="export" if export else "")
        return NOTHING

    def for_loop(self, n: Any, feed: Feed = NOTHING) -> Feed:
        var = n.child_by_field_name("variable")
        values = [self.word(v) for v in n.children_by_field_name("value")]
        body = n.child_by_field_name("body")
        key = self.text(var) if var is not None else ""
        if body is None:
            return NOTHING
        if len(values) == 1 and values[0].literal:
            self.vars[key] = values[0].text
        else:  # several values: each path effect of the body is about one of them
            self.vars[key] = None
        for c in body.named_children:
            self.node(c)
        if len(values) > 1:
            for v in values:
                if v.literal:
                    self.emit("inspect", resolve(v.text, self.cwd), program="for", glob=v.glob)
        return NOTHING

    def test(self, n: Any, feed: Feed = NOTHING) -> Feed:
        for c in n.named_children:
            if c.type in ("unary_expression", "binary_expression"):
                for w in c.named_children:
                    if w.type != "test_operator":
                        word = self.word(w)
                        if word.text and not word.text.startswith("-"):
                            self.emit("inspect", resolve(word.text, self.cwd), program="test", glob=word.glob)
        return NOTHING

    # ------------------------------------------------------------------ redirections
    def redirections(self, redirects: list[Any], out: Feed | None, stdin: Feed, inputs_only: bool = False,
                     outputs_only: bool = False) -> Feed | None:
        """Apply ``redirects``: inputs (``<``, heredoc, here-string) return what the command reads
        on stdin; outputs (``>``, ``>>``) are writes of ``out.text`` when literal."""
        got: Feed | None = None
        for r in redirects:
            t = r.type
            if t == "heredoc_redirect" and not outputs_only:
                got = Feed(self.heredoc(r), fed=True)
            elif t == "herestring_redirect" and not outputs_only:
                kids = [c for c in r.named_children]
                w = self.word(kids[-1]) if kids else Word("")
                got = Feed((w.text + "\n") if w.literal else None, fed=True)
            elif t == "file_redirect":
                got = self.file_redirect(r, out, inputs_only, outputs_only) or got
        return got

    def heredoc(self, r: Any) -> str | None:
        start = next((c for c in r.named_children if c.type == "heredoc_start"), None)
        body = next((c for c in r.named_children if c.type == "heredoc_body"), None)
        if body is None:
            return ""
        quoted = start is not None and self.text(start)[:1] in "'\"\\"
        if not quoted and any(c.type != "heredoc_content" for c in body.named_children):
            return None  # an unquoted heredoc with expansions: its text is not literal
        text = self.text(body)
        if start is not None and self.text(r).startswith("<<-"):
            text = "\n".join(ln.lstrip("\t") for ln in text.split("\n"))
        return text

    def file_redirect(self, r: Any, out: Feed | None, inputs_only: bool, outputs_only: bool) -> Feed | None:
        op = next((self.text(c) for c in r.children if not c.is_named), "")
        dest = r.child_by_field_name("destination")
        if dest is None or dest.type == "number" or op in (">&", "<&") and self.text(dest).isdigit():
            return None
        w = self.word(dest)
        if w.text.startswith("/dev/") or w.text in ("-",):
            return None
        path = resolve(w.text, self.cwd)
        if op in ("<",):
            if not outputs_only:
                self.emit("read", path, program="<", glob=w.glob)
                return Feed(None, fed=True, derived=(path, ()), source=path)
            return None
        if inputs_only:
            return None
        descriptor = next((self.text(c) for c in r.named_children if c.type == "file_descriptor"), "")
        content = out.text if (out is not None and descriptor in ("", "1")) else None
        kind = "append" if op in (">>", "&>>") else "write"
        if content == "" and kind == "write" and out is not None and out.text == "":
            kind = "truncate"
        derived = out.derived if out is not None and descriptor in ("", "1") and content is None else None
        if derived is not None and kind == "write":
            self.written_derived(path, derived, op, w.glob)
            return None
        self.emit(kind, path, program=op, content=content, glob=w.glob)
        return None

    def written_derived(self, path: str, derived: tuple[str, tuple[Edit, ...]], program: str,
                        glob: bool = False) -> None:
        """``path`` receives ``derived`` (another file's content, edited): an edit of that file
        when it is the same one, else a write that names its source and the edits."""
        source, edits = derived
        if source in self.derived:  # a copy this command made earlier: its original, edited twice
            source, before = self.derived[source]
            edits = before + edits
        if path == source:
            self.emit("edit", path, program=program, edits=edits, glob=glob)
        else:
            self.emit("write", path, program=program, source=source, edits=edits, glob=glob, detail="filtered")
            self.derived[path] = (source, edits)

    # ------------------------------------------------------------------ simple commands
    def command(self, n: Any, feed: Feed, outer_redirects: list[Any]) -> Feed:
        env_nodes = [c for c in n.named_children if c.type == "variable_assignment"]
        name = n.child_by_field_name("name")
        own_redirects = [c for c in n.named_children if c.type.endswith("redirect")]
        redirects = own_redirects + outer_redirects
        nested = [c for r in redirects if r.type == "heredoc_redirect" for c in r.named_children
                  if c.type in ("file_redirect", "pipeline") or r.field_name_for_named_child(
                      r.named_children.index(c)) == "right"]
        if name is None:
            self.assignments_local(env_nodes)
            self.redirections(redirects, Feed(""), NOTHING)
            return NOTHING
        env = self.assignments_local(env_nodes)
        words = [self.word(name)] + [self.word(a) for a in n.children_by_field_name("argument")]
        stdin = self.redirections(redirects, None, NOTHING, inputs_only=True)
        if stdin is None and feed is NOTHING:
            stdin = self.inherited
        out = self.run(words, stdin if stdin is not None else feed, env)
        self.redirections([r for r in redirects if r.type == "file_redirect"], out, NOTHING, outputs_only=True)
        for c in nested:
            if c.type == "file_redirect":
                self.file_redirect(c, out, False, True)
            elif c.type == "pipeline":
                out = self.pipeline(c.named_children, out)
            else:
                self.node(c)
        return out

    def assignments_local(self, nodes: list[Any]) -> dict[str, str | None]:
        env = {}
        for a in nodes:
            name = a.child_by_field_name("name")
            value = a.child_by_field_name("value")
            key = self.text(name) if name is not None else ""
            w = self.word(value) if value is not None else Word("")
            env[key] = w.text if w.literal else None
            self.emit("env", name=key, content=w.text, detail="command")
        return env

    def run(self, words: list[Word], feed: Feed, env: dict[str, str | None] | None = None) -> Feed:
        """Effects of running ``words`` with ``feed`` on stdin; returns what it prints (when known)."""
        if not words:
            return NOTHING
        head = words[0]
        prog = posixpath.basename(head.text) if head.literal else head.text
        argv = tuple(w.text for w in words)
        self.emit("execute", self.cwd, program=prog, argv=argv, stdin=feed.text, fed=feed.fed or feed.text is not None)
        if not head.literal:
            self.emit("unknown", detail="the program's name is not literal", content=head.text)
            return NOTHING
        handler = _HANDLERS.get(prog)
        if handler is not None:
            return handler(self, words, feed)
        if _PYTHON.match(prog):
            return self.python(words, feed)
        if prog in _SHELLS:
            return self.shell_program(words, feed)
        if prog in _INLINE:
            return self.inline(prog, words, feed)
        t = table()
        spec = t["wrappers"].get(prog)
        if spec is not None:
            return self.wrapper(prog, spec, words, feed)
        if prog in t["command_strings"]:
            return self.command_string(prog, t["command_strings"][prog], words, feed)
        if prog in t["run_verbs"]:
            return self.run_verb(prog, t["run_verbs"][prog], words, feed)
        spec = t["programs"].get(prog)
        if spec is not None:
            return self.operands(prog, spec, words, feed)
        return NOTHING

    # ------------------------------------------------------------------ generic operands
    def split(self, spec: dict[str, Any], words: list[Word]) -> tuple[dict[str, list[Word]], list[Word]]:
        """(options seen -> their values, operands) for ``words`` after the program name."""
        values = set(spec.get("values", [])) | set(spec.get("script_options", []))
        opts: dict[str, list[Word]] = {}
        operands: list[Word] = []
        it = iter(words)
        ended = False
        for w in it:
            t = w.text
            if ended or not t.startswith("-") or t == "-" or not w.literal:
                operands.append(w)
                continue
            if t == "--":
                ended = True
                continue
            if t.startswith("--") and "=" in t:
                k, v = t.split("=", 1)
                opts.setdefault(k, []).append(Word(v))
            elif t in values:
                opts.setdefault(t, []).append(next(it, Word("")))
            elif not t.startswith("--") and len(t) > 2 and t[:2] in values:
                opts.setdefault(t[:2], []).append(Word(t[2:]))  # -n5, -eSCRIPT
            else:
                opts.setdefault(t, [])
                if not t.startswith("--"):
                    for ch in t[1:]:
                        opts.setdefault("-" + ch, [])
        return opts, operands

    def script_of(self, spec: dict[str, Any], opts: dict[str, list[Word]],
                  operands: list[Word]) -> tuple[str | None, list[Word]]:
        """(the program's script: a sed / awk / grep pattern, a chmod mode; its other operands)."""
        scripts = [v for o in spec.get("script_options", []) for v in opts.get(o, [])]
        if scripts:
            return "\n".join(w.text for w in scripts), operands
        if spec.get("first"):
            head, operands = operands[:spec["first"]], operands[spec["first"]:]
            return (head[0].text if head else None), operands
        return None, operands

    def operands(self, prog: str, spec: dict[str, Any], words: list[Word], feed: Feed) -> Feed:
        opts, operands = self.split(spec, words[1:])
        script, operands = self.script_of(spec, opts, operands)
        kind = spec["operands"]
        if kind == "inspect" and any(o in opts for o in spec.get("recursive_list", [])):
            kind = "list"
        if prog == "dd":
            return self.dd(operands)
        for o in spec.get("read_options", []):
            for w in opts.get(o, []):
                self.emit("read", resolve(w.text, self.cwd), program=prog, glob=w.glob, detail=o)
        if kind == "url":
            return self.urls(prog, operands)
        paths = [(resolve(w.text, self.cwd), w) for w in operands if w.text not in ("-", "]", "!")]
        if kind in ("copy", "move", "link"):
            return self.transfer(prog, kind, opts, paths)
        if kind == "write":
            return self.write_out(prog, spec, opts, paths, feed)
        edits = _script_edits(prog, opts, script)
        extra: dict[str, Any] = {}
        if kind in ("chmod", "chown"):
            extra["argv"] = (script or "",)
        if _in_place(prog, spec, opts):
            kind = "edit"
            extra["content"] = script
            extra["edits"] = edits
        recursive = any(o in opts for o in ("-r", "-R", "--recursive")) and kind == "read"
        for path, w in paths:
            self.emit(kind, path, program=prog, glob=w.glob, detail="recursive" if recursive else "", **extra)
        if kind == "read":
            return self.read_out(prog, opts, paths, feed, edits)
        return self.listed(prog, opts, [p for p, _ in paths])

    def urls(self, prog: str, operands: list[Word]) -> Feed:
        """curl's operands are URLs: a ``file://`` one reads that file."""
        for w in operands:
            if w.text.startswith("file://"):
                self.emit("read", resolve(w.text[len("file://"):] or "/", self.cwd), program=prog, detail="url")
        return NOTHING

    def write_out(self, prog: str, spec: dict[str, Any], opts: dict[str, list[Word]], paths: list[tuple[str, Word]],
                  feed: Feed) -> Feed:
        """``tee`` / ``sponge``: their stdin written to each operand (another file's edited
        content, when that is what came down the pipe)."""
        kind = "append" if any(o in opts for o in spec.get("append", [])) else "write"
        for path, w in paths:
            if feed.derived is not None and feed.text is None and kind == "write":
                self.written_derived(path, feed.derived, prog, w.glob)
            else:
                self.emit(kind, path, program=prog, glob=w.glob, content=feed.text)
        return Feed(feed.text, derived=feed.derived) if prog == "tee" else NOTHING

    def read_out(self, prog: str, opts: dict[str, list[Word]], paths: list[tuple[str, Word]], feed: Feed,
                 edits: tuple[Edit, ...]) -> Feed:
        """What a reading program prints: a whole file (``cat f``), or one filtered or edited
        (``grep -v``, ``sed``, ``awk``) — followed when it is written back — or a listing."""
        if prog not in _FILTERS or (prog in ("grep", "egrep", "fgrep") and "-v" not in opts):
            return self.listed(prog, opts, [p for p, _ in paths])
        if not paths:
            if feed.derived is not None:
                return Feed(feed.text if prog == "cat" else None, derived=(feed.derived[0], feed.derived[1] + edits))
            return Feed(feed.text) if prog == "cat" else NOTHING
        if len(paths) == 1 and not paths[0][1].glob:
            if paths[0][0] == "/dev/null" and prog == "cat":
                return Feed("")
            return Feed(None, derived=(paths[0][0], edits))
        return NOTHING

    def listed(self, prog: str, opts: dict[str, list[Word]], paths: list[str]) -> Feed:
        """What a listing sends down a pipe: the paths it names (for xargs)."""
        recursive = "-r" in opts or "-R" in opts
        if prog in ("grep", "rg") and ("-l" in opts or "-L" in opts or recursive):
            return Feed(None, tuple(Word(posixpath.join(p, "**") if recursive else p, True, True) for p in paths))
        if prog == "ls":
            return Feed(None, tuple(Word(posixpath.join(p, "*"), True, True) for p in paths)
                        or (Word(posixpath.join(self.cwd or ".", "*"), True, True),))
        return NOTHING

    def transfer(self, prog: str, kind: str, opts: dict[str, list[Word]], paths: list[tuple[str, Word]]) -> Feed:
        target = opts.get("-t") or opts.get("--target-directory")
        if target:
            dest, sources = resolve(target[0].text, self.cwd), paths
        elif len(paths) >= 2:
            dest, sources = paths[-1][0], paths[:-1]
        else:
            self.emit("unknown", detail=f"{prog} without a destination")
            return NOTHING
        recursive = "recursive" if any(o in opts for o in _RECURSIVE) else ""
        for src, w in sources:
            if src == "/dev/null" and kind == "copy":
                self.emit("truncate", dest, program=prog)
                continue
            if kind == "copy":
                self.emit("read", src, program=prog, glob=w.glob, detail=recursive)
            elif kind == "move":
                self.emit("delete", src, program=prog, glob=w.glob)
            if src in self.derived and kind != "link":  # an edited copy made earlier in this command
                self.written_derived(dest, (src, ()), prog, w.glob)
                continue
            self.emit("write", dest, program=prog, source=src, glob=w.glob, detail=kind)
        return NOTHING

    def dd(self, operands: list[Word]) -> Feed:
        given = {w.text.split("=", 1)[0]: resolve(w.text.split("=", 1)[1], self.cwd) for w in operands if "=" in w.text}
        if "if" in given:
            self.emit("read", given["if"], program="dd")
        if "of" in given:
            if given.get("if") == "/dev/null":
                self.emit("truncate", given["of"], program="dd")
            else:
                self.emit("write", given["of"], program="dd", source=given.get("if"), detail="copy")
        return NOTHING

    # ------------------------------------------------------------------ wrappers and interpreters
    def wrapper(self, prog: str, spec: dict[str, Any], words: list[Word], feed: Feed) -> Feed:
        values = set(spec.get("values", []))
        rest = words[1:]
        i = 0
        env_cwd = None
        while i < len(rest) and rest[i].text.startswith("-") and rest[i].literal and rest[i].text != "-":
            opt = rest[i].text
            if opt == "--":
                i += 1
                break
            if opt in values:
                if prog == "env" and opt in ("-C", "--chdir") and i + 1 < len(rest):
                    env_cwd = rest[i + 1].text
                i += 2
            else:
                i += 1
        while prog == "env" and i < len(rest) and re.match(r"^[A-Za-z_]\w*=", rest[i].text):
            k, v = rest[i].text.split("=", 1)
            self.emit("env", name=k, content=v, detail="command")
            i += 1
        i += spec.get("skip", 0)
        inner = rest[i:]
        if not inner:
            return NOTHING
        w = self.sub(prog)
        if env_cwd:
            w.cwd = resolve(env_cwd, self.cwd)
        if prog == "xargs":
            extra = [Word(x) for x in (feed.text or "").split()] if feed.text is not None else list(feed.paths)
            if not extra:
                w.emit("unknown", detail="xargs operands come from a stream that is not shown")
            placeholder = rest[i - 1].text if i and rest[i - 2].text in ("-I", "-i") else None
            if placeholder:
                inner = [e if x.text == placeholder else x for x in inner for e in (extra or [x])]
                out = w.run(inner, NOTHING)
            else:
                out = w.run([*inner, *extra], NOTHING)
        elif prog == "watch":
            w.shell(" ".join(x.text for x in inner))
            out = NOTHING
        else:
            out = w.run(inner, feed)
        self.merge(w)
        return out

    def shell_program(self, words: list[Word], feed: Feed) -> Feed:
        args = words[1:]
        for k, a in enumerate(args):
            if a.text == "-c" or (a.text.startswith("-") and "c" in a.text[1:] and not a.text.startswith("--")):
                if k + 1 < len(args):
                    self.command_text(words[0].text, args[k + 1], feed, args[k + 2:])
                return NOTHING
        w = self.sub(words[0].text)
        operands = [a for a in args if not a.text.startswith("-")]
        if operands:
            w.emit("execute", program=operands[0].text, argv=tuple(x.text for x in operands))
            w.emit("read", resolve(operands[0].text, self.cwd), program=words[0].text, detail="script")
        elif feed.text is not None:
            w.inherited = NOTHING  # the script came on stdin: its commands read what follows it
            w.shell(feed.text)
        self.merge(w)
        return NOTHING

    def command_text(self, via: str, code: Word, feed: Feed, positional: list[Word] = ()) -> None:  # type: ignore[assignment]
        """Run a command given as one string (``bash -c``, ``script -c``, ``su -c``, ``ssh host
        CMD``): it reads the runner's stdin, and ``$0``, ``$1``... are the words after it."""
        w = self.sub(via)
        if feed is not NOTHING:
            w.inherited = feed
        for k, p in enumerate(positional):
            w.vars[str(k)] = p.text if p.literal else None
        if positional:
            w.vars["@"] = " ".join(p.text for p in positional[1:]) if all(p.literal for p in positional) else None
        if code.literal:
            w.shell(code.text)
        else:
            w.emit("unknown", detail=f"{via} -c with a command that is not literal", content=code.text)
        self.merge(w)

    def command_string(self, prog: str, spec: dict[str, Any], words: list[Word], feed: Feed) -> Feed:
        """Programs that run a command string or the rest of their words: ``script -c CMD``,
        ``flock FILE -c CMD`` / ``flock FILE CMD...``, ``ssh HOST CMD...`` (data:
        ``command_strings`` in programs.yaml)."""
        args = words[1:]
        values = set(spec.get("values", []))
        options = set(spec.get("option", []))
        operands: list[Word] = []
        k = 0
        while k < len(args):
            t = args[k].text
            if (t in options or t.startswith("-") and not t.startswith("--") and f"-{t[-1:]}" in options) and k + 1 < len(args):
                self.command_text(prog, args[k + 1], feed)
                return NOTHING
            if t.startswith("-") and len(operands) < spec.get("skip", 0) + 1 and t != "-":
                k += 2 if t in values else 1
                continue
            operands.append(args[k])
            if len(operands) > spec.get("skip", 0):
                rest = args[k:]
                if spec.get("joined"):
                    self.command_text(prog, Word(" ".join(x.text for x in rest), all(x.literal for x in rest)), feed)
                else:
                    w = self.sub(prog)
                    w.run(rest, feed)
                    self.merge(w)
                return NOTHING
            k += 1
        return NOTHING

    def run_verb(self, prog: str, spec: dict[str, Any], words: list[Word], feed: Feed) -> Feed:
        """``poetry run CMD``, ``uv run CMD``, ``conda run -n env CMD``, ``coverage run -m MOD``:
        the words after the verb (and its options) are a command (data: ``run_verbs``)."""
        args = words[1:]
        values = set(spec.get("values", []))
        k = 0
        while k < len(args) and args[k].text.startswith("-"):
            k += 2 if args[k].text in values else 1
        if k >= len(args) or args[k].text not in spec.get("verbs", ["run"]):
            return NOTHING
        k += 1
        while k < len(args) and args[k].text.startswith("-") and args[k].text not in ("-m",):
            k += 2 if args[k].text in values else 1
        rest = args[k:]
        if not rest:
            return NOTHING
        w = self.sub(prog)
        # coverage run [-m MOD | SCRIPT] ...: as python would run it
        out = w.python([Word("python"), *rest], feed) if spec.get("python") else w.run(rest, feed)
        self.merge(w)
        return out

    def python(self, words: list[Word], feed: Feed) -> Feed:
        args = words[1:]
        i = 0
        code: str | None = None
        while i < len(args):
            t = args[i].text
            if t == "-c" or t.startswith("-c") and len(t) > 2 and args[i].literal:
                piece = args[i + 1] if t == "-c" and i + 1 < len(args) else Word(t[2:])
                if piece.literal:
                    code = piece.text
                else:
                    self.emit("unknown", detail="python -c with code that is not literal", content=piece.text)
                    return NOTHING
                break
            if t == "-m" or (t.startswith("-m") and len(t) > 2):
                module = args[i + 1].text if t == "-m" and i + 1 < len(args) else t[2:]
                rest = args[i + 2:] if t == "-m" else args[i + 1:]
                w = self.sub(words[0].text)
                out = w.run([Word(module), *rest], feed)
                self.merge(w)
                return out
            if t in ("-W", "-X", "--check-hash-based-pycs"):
                i += 2
                continue
            if t.startswith("-") and t != "-":
                i += 1
                continue
            if t != "-":  # a script: read, and run with its words (setup.py develop installs its directory)
                script = resolve(t, self.cwd)
                self.emit("read", script, program=words[0].text, detail="script")
                self.emit("execute", self.cwd, program=posixpath.basename(t), argv=(script, *(a.text for a in args[i + 1:])),
                          detail="script")
                return NOTHING
            code = feed.text
            if code is None:
                self.emit("unknown", detail="python reads code from a stream that is not shown")
                return NOTHING
            break
        else:
            code = feed.text
        if code is None:
            return NOTHING
        self.inline_python(code)
        return NOTHING

    def inline_python(self, code: str) -> None:
        self.emit("inline", name="python", content=code)
        if self.depth > MAX_DEPTH:
            self.emit("unknown", detail="nested too deep")
            return
        self.out.extend(replace(e, via=(*self.via, "python", *e.via)) for e in
                        python_effects(code, self.cwd, self.run_for_python, self.shell_for_python))

    def run_for_python(self, argv: list[str], stdin: str | None, fed: bool, cwd: str | None) -> list[Effect]:
        w = _Walker(cwd, self.depth + 1, ())
        w.run([Word(a) for a in argv], Feed(stdin, fed=fed))
        return w.out

    def shell_for_python(self, command: str, cwd: str | None, fed: bool = False) -> list[Effect]:
        w = _Walker(cwd, self.depth + 1, ())
        if fed:
            w.inherited = Feed(None, fed=True)
        w.shell(command)
        return w.out

    def inline(self, prog: str, words: list[Word], feed: Feed = NOTHING) -> Feed:
        """perl / ruby / node / expect ... with code from ``-e`` (``-c``), a script operand, or
        stdin; perl's ``-i`` edits its operands with what the code does to each line."""
        flags = _INLINE[prog]
        code, operands, in_place, k = [], [], False, 1
        while k < len(words):
            t = words[k].text
            if t in flags and k + 1 < len(words):
                code.append(words[k + 1].text)
                k += 2
                continue
            if t.startswith("-") and len(t) > 1:
                cluster = t[1:]
                if "i" in cluster and prog in ("perl", "ruby"):
                    in_place = True
                if cluster[-1:] in ("e", "E") and prog in ("perl", "ruby") and k + 1 < len(words):
                    code.append(words[k + 1].text)
                    k += 2
                    continue
            else:
                operands.append(words[k])
            k += 1
        if not code and operands:  # `perl script.pl args`: the first operand is the program
            script, operands = operands[0], operands[1:]
            self.emit("read", resolve(script.text, self.cwd), program=prog, detail="script")
        elif not code and feed.text is not None:
            code, feed = [feed.text], NOTHING
        text = "\n".join(code)
        self.emit("inline", name=prog, content=text)
        edits = perl_edits(text) if prog == "perl" else ()
        for w in operands:
            self.emit("edit" if in_place else "read", resolve(w.text, self.cwd), program=prog, glob=w.glob,
                      content=text if in_place else None, edits=edits if in_place else ())
        if prog == "perl" and not in_place and edits:
            if len(operands) == 1 and not operands[0].glob:
                return Feed(None, derived=(resolve(operands[0].text, self.cwd), edits))
            if not operands and feed.derived is not None:
                return Feed(None, derived=(feed.derived[0], feed.derived[1] + edits))
        return NOTHING


_FILTERS = frozenset({"cat", "sed", "awk", "gawk", "mawk", "grep", "egrep", "fgrep"})
"""Programs whose output is a file's content, whole or edited (what ``> f`` then writes)."""
_RECURSIVE = ("-r", "-R", "-a", "--recursive", "--archive")


def _script_edits(prog: str, opts: dict[str, list[Word]], script: str | None) -> tuple[Edit, ...]:
    """The edits a filter's script makes: sed's commands, awk's line filters, grep -v."""
    if script is None:
        return ()
    if prog == "sed":
        return sed_edits(script)
    if prog in ("awk", "gawk", "mawk"):
        return awk_edits(script)
    if prog in ("grep", "egrep", "fgrep") and "-v" in opts:
        return grep_edits(script, fixed="-F" in opts or prog == "fgrep")
    return ()


def _in_place(prog: str, spec: dict[str, Any], opts: dict[str, list[Word]]) -> bool:
    """sed -i, perl -i, gawk -i inplace: the operands are edited where they are."""
    if prog in ("awk", "gawk"):
        return any(w.text == "inplace" for w in opts.get("-i", []))
    return any(o in opts or any(k.startswith(o) for k in opts) for o in spec.get("in_place", []))


# ---------------------------------------------------------------------- special programs
def _cd(w: _Walker, words: list[Word], feed: Feed) -> Feed:
    target = words[1] if len(words) > 1 else None
    if target is None or not target.literal or target.text in ("-", "~") or target.text.startswith(("~", "$")):
        w.cwd = None if target is None or target.text != "." else w.cwd
        return NOTHING
    w.cwd = resolve(target.text, w.cwd) if (w.cwd is not None or target.text.startswith("/")) else None
    return NOTHING


def _echo(w: _Walker, words: list[Word], feed: Feed) -> Feed:
    args = words[1:]
    newline, escapes = True, False
    while args and args[0].text in ("-n", "-e", "-ne", "-en", "-E"):
        newline = newline and "n" not in args[0].text
        escapes = escapes or "e" in args[0].text
        args = args[1:]
    if not all(a.literal for a in args):
        return Feed(None, fed=True)
    text = " ".join(a.text for a in args)
    if escapes:
        text = text.encode().decode("unicode_escape", errors="replace")
    return Feed(text + ("\n" if newline else ""))


def _printf(w: _Walker, words: list[Word], feed: Feed) -> Feed:
    args = words[1:]
    if args and args[0].text == "-v":
        return NOTHING
    if not args or not all(a.literal for a in args):
        return Feed(None, fed=True)
    fmt, values = args[0].text, [a.text for a in args[1:]]
    if re.search(r"%[^s%]", fmt.replace("%%", "")):
        return NOTHING  # only %s is rendered; other conversions would be a guess
    fmt = fmt.encode().decode("unicode_escape", errors="replace")
    slots = fmt.count("%s")
    if slots == 0:
        return Feed(fmt.replace("%%", "%"))
    out = []
    values = values or [""]
    for k in range(0, max(len(values), 1), slots):
        chunk = values[k:k + slots] + [""] * (slots - len(values[k:k + slots]))
        out.append(fmt.replace("%%", "\0") % tuple(chunk))
    return Feed("".join(out).replace("\0", "%"))


def _yes(w: _Walker, words: list[Word], feed: Feed) -> Feed:
    return Feed((" ".join(x.text for x in words[1:]) or "y") + "\n")


def _eval(w: _Walker, words: list[Word], feed: Feed) -> Feed:
    if all(x.literal for x in words[1:]):
        sub = w.sub("eval")
        sub.shell(" ".join(x.text for x in words[1:]))
        w.merge(sub)
    else:
        w.emit("unknown", detail="eval of text that is not literal")
    return NOTHING


def _su(w: _Walker, words: list[Word], feed: Feed) -> Feed:
    args = words[1:]
    for k, a in enumerate(args):
        if a.text in ("-c", "--command") and k + 1 < len(args):
            sub = w.sub("su")
            sub.shell(args[k + 1].text)
            w.merge(sub)
    return NOTHING


_FIND_TESTS = {"-name": "name", "-iname": "name", "-path": "path", "-ipath": "path", "-wholename": "path",
               "-iwholename": "path"}
_FIND_VALUES = {"-maxdepth", "-mindepth", "-type", "-xtype", "-user", "-group", "-uid", "-gid", "-perm", "-size",
                "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-newer", "-regex", "-iregex", "-fstype",
                "-links", "-inum", "-samefile", "-printf", "-fprint", "-fprintf", "-fls", "-regextype", "-used"}


def _find(w: _Walker, words: list[Word], feed: Feed) -> Feed:
    """``find ROOTS EXPR``: what its ``-exec`` / ``-delete`` act on are the paths its positive
    name tests select (a pattern: ``-not -path '*/proc/*'`` selects nothing by itself)."""
    args = words[1:]
    roots = []
    k = 0
    while k < len(args) and not args[k].text.startswith(("-", "(", "!")):
        roots.append(resolve(args[k].text, w.cwd))
        k += 1
    roots = roots or [w.cwd or "."]
    matches = _find_matches(roots, _find_tests(args[k:]))
    while k < len(args):
        t = args[k].text
        if t in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(k + 1, len(args)) if args[j].text in (";", "+")), len(args))
            inner = [Word(m, True, True) if x.text == "{}" else x for x in args[k + 1:end] for m in
                     (matches if x.text == "{}" else [x.text])]
            sub = w.sub("find")
            sub.run(inner, NOTHING)
            w.merge(sub)
            k = end + 1
            continue
        if t == "-delete":
            for m in matches:
                w.emit("delete", m, program="find", glob=True)
        elif t in ("-fprint", "-fls", "-fprintf") and k + 1 < len(args):
            w.emit("write", resolve(args[k + 1].text, w.cwd), program="find")
        k += 2 if t in _FIND_VALUES else 1
    for r in roots:
        w.emit("list", r, program="find")
    return Feed(None, tuple(Word(m, True, True) for m in matches))


def _find_tests(args: list[Word]) -> list[list[tuple[str, str]]]:
    """find's name tests as alternatives (split at ``-o``) of conjunctions, negated ones left
    out: [[("name", "id_*"), ("path", "*/.ssh/*")], ...]."""
    alts: list[list[tuple[str, str]]] = [[]]
    negate = False
    k = 0
    while k < len(args):
        t = args[k].text
        if t in ("!", "-not"):
            negate = True
        elif t in ("-o", "-or"):
            alts.append([])
        elif t in _FIND_TESTS and k + 1 < len(args):
            if not negate:
                alts[-1].append((_FIND_TESTS[t], args[k + 1].text))
            negate = False
            k += 2
            continue
        elif t in ("-exec", "-execdir", "-ok", "-okdir"):
            k = next((j for j in range(k + 1, len(args)) if args[j].text in (";", "+")), len(args))
        elif t not in ("(", ")", "\\(", "\\)"):
            negate = False
            if t in _FIND_VALUES:
                k += 1
        k += 1
    return [a for a in alts if a] or [[]]


def _find_matches(roots: list[str], alts: list[list[tuple[str, str]]]) -> list[str]:
    """One pattern per alternative: a ``-path`` pattern (narrowed by a ``-name`` when it ends
    in ``*``), else ``ROOT/**/NAME``."""
    out: list[str] = []
    for tests in alts:
        names = [v for kind, v in tests if kind == "name"]
        paths = [v for kind, v in tests if kind == "path"]
        if paths:
            p = paths[0]
            out.append(p[:-1] + names[0] if names and p.endswith("*") else p)
            continue
        for r in roots:
            out.append(posixpath.join(r, "**", names[0]) if names else posixpath.join(r, "**"))
    return list(dict.fromkeys(out))


def _git(w: _Walker, words: list[Word], feed: Feed) -> Feed:
    args = list(words[1:])
    while len(args) > 1 and args[0].text in ("-C", "-c"):
        if args[0].text == "-C":
            w.cwd = resolve(args[1].text, w.cwd)
        args = args[2:]
    if not args:
        return NOTHING
    verb = args[0].text
    texts = [a.text for a in args]
    rest = [a for a in args[1:] if not a.text.startswith("-")]
    if verb == "restore" or (verb == "checkout" and "--" in texts):
        for a in (args[texts.index("--") + 1:] if "--" in texts else rest):
            w.emit("write", resolve(a.text, w.cwd), program="git", detail=verb, glob=a.glob)
    elif verb in ("rm", "mv"):
        _git_remove(w, verb, rest)
    elif verb == "apply" and not any(t.startswith(("--check", "--stat", "--numstat", "-R", "--reverse")) for t in texts):
        _apply_diff(w, feed, [a for a in args[1:]], "git")
    elif verb in ("am", "stash", "reset", "merge", "pull", "cherry-pick", "revert", "apply"):
        w.emit("unknown", detail=f"git {verb} changes files that the command does not name")
    elif verb == "show":
        for a in rest:
            if ":" in a.text:
                w.emit("read", resolve(a.text.split(":", 1)[1], w.cwd), program="git")
    return NOTHING


def _git_remove(w: _Walker, verb: str, rest: list[Word]) -> None:
    if verb == "rm":
        for a in rest:
            w.emit("delete", resolve(a.text, w.cwd), program="git", glob=a.glob)
    elif len(rest) >= 2:
        src = resolve(rest[0].text, w.cwd)
        w.emit("delete", src, program="git")
        w.emit("write", resolve(rest[1].text, w.cwd), program="git", source=src, detail="move")


def _patch(w: _Walker, words: list[Word], feed: Feed) -> Feed:
    if any(a.text in ("--dry-run", "-R", "--reverse") for a in words[1:]):
        return NOTHING
    _apply_diff(w, feed, words[1:], "patch")
    return NOTHING


def _apply_diff(w: _Walker, feed: Feed, args: list[Word], program: str) -> None:
    """``patch`` / ``git apply``: a literal diff (a heredoc, a pipe from one) is read as the
    edits it makes; a diff in a file is an unknown effect naming that file (the trajectory may
    show what was written there)."""
    strip: int | None = None
    diff_file = feed.source
    k = 0
    while k < len(args):
        t = args[k].text
        m = re.fullmatch(r"-p(\d+)|--strip=(\d+)", t)
        if m:
            strip = int(m.group(1) or m.group(2))
        elif t in ("-p", "--strip") and k + 1 < len(args) and args[k + 1].text.isdigit():
            strip, k = int(args[k + 1].text), k + 1
        elif t in ("-i", "--input") and k + 1 < len(args):
            diff_file, k = resolve(args[k + 1].text, w.cwd), k + 1
        elif not t.startswith("-") and program == "git":
            diff_file = resolve(t, w.cwd)
        k += 1
    text = feed.text if diff_file is None else None
    if text is None:
        w.emit("unknown", diff_file, program=program, detail=f"{program} applies a diff the command does not show")
        return
    for d in diff_edits(text, strip):
        path = resolve(d.path, w.cwd)
        if d.deleted:
            w.emit("delete", path, program=program)
        elif d.content is not None:
            w.emit("write", path, program=program, content=d.content)
        else:
            w.emit("edit", path, program=program, edits=d.edits)


def _tar(w: _Walker, words: list[Word], feed: Feed) -> Feed:
    args = words[1:]
    mode = args[0].text.lstrip("-") if args else ""
    create = "c" in mode or any(a.text in ("--create", "-c") for a in args)
    archive = None
    operands = []
    base = w.cwd
    k = 1 if args and not args[0].text.startswith("-") else 0
    while k < len(args):
        t = args[k].text
        if t in ("-f", "--file", "-C", "--directory") and k + 1 < len(args):
            if t in ("-C", "--directory"):
                base = resolve(args[k + 1].text, base)
            else:
                archive = args[k + 1].text
            k += 2
            continue
        if not t.startswith("-"):
            operands.append(resolve(t, base) if base is not None or t.startswith("/") else t)
        k += 1
    if archive is None and "f" in mode and operands:
        archive, operands = operands[0], operands[1:]
    if create:
        for p in operands:
            w.emit("read", p, program="tar", detail="recursive")
        if archive and archive != "-":
            w.emit("write", resolve(archive, w.cwd), program="tar")
    else:
        if archive and archive != "-":
            w.emit("read", resolve(archive, w.cwd), program="tar")
        if "x" in mode:
            w.emit("unknown", detail="tar extracts files the command does not name")
    return NOTHING


def _noop(w: _Walker, words: list[Word], feed: Feed) -> Feed:
    return Feed("")  # prints nothing: `: > f` empties f


def _zip(w: _Walker, words: list[Word], feed: Feed) -> Feed:
    """``zip [-r] ARCHIVE FILES...``: the files are read (recursively with -r), the archive written."""
    opts = [a.text for a in words[1:] if a.text.startswith("-")]
    operands = [a for a in words[1:] if not a.text.startswith("-")]
    if not operands:
        return NOTHING
    recursive = "recursive" if any(o in ("-r", "-R", "--recurse-paths") or (not o.startswith("--") and "r" in o)
                                   for o in opts) else ""
    for a in operands[1:]:
        w.emit("read", resolve(a.text, w.cwd), program="zip", glob=a.glob, detail=recursive)
    w.emit("write", resolve(operands[0].text, w.cwd), program="zip")
    return NOTHING


_GETENT = {"shadow": "/etc/shadow", "gshadow": "/etc/gshadow", "passwd": "/etc/passwd", "group": "/etc/group"}


def _getent(w: _Walker, words: list[Word], feed: Feed) -> Feed:
    """``getent DATABASE``: reads the database's file (``getent shadow`` is /etc/shadow)."""
    db = next((a.text for a in words[1:] if not a.text.startswith("-")), "")
    if db in _GETENT:
        w.emit("read", _GETENT[db], program="getent")
    return NOTHING


def _editor(w: _Walker, words: list[Word], feed: Feed) -> Feed:
    """vim / vi / ex / nano / emacs ...: opening a file reads it; ex commands given with ``-c``
    or ``+CMD`` (``vim -es -c 'g/assert/d' -c wq f``) edit it."""
    commands: list[str] = []
    operands: list[Word] = []
    args = words[1:]
    k = 0
    while k < len(args):
        t = args[k].text
        if t in ("-c", "--cmd", "-S") and k + 1 < len(args):
            commands.append(args[k + 1].text)
            k += 2
            continue
        if t.startswith("+") and len(t) > 1:
            commands.append(t[1:])
        elif not t.startswith("-"):
            operands.append(args[k])
        k += 1
    edits = ex_edits(commands)
    for a in operands:
        path = resolve(a.text, w.cwd)
        w.emit("read", path, program=words[0].text, glob=a.glob)
        if edits:
            w.emit("edit", path, program=words[0].text, glob=a.glob, edits=edits)
    return NOTHING


def _ed(w: _Walker, words: list[Word], feed: Feed) -> Feed:
    """``ed FILE`` reading its commands on stdin (``printf 'g/assert/d\\nw\\n' | ed -s f``)."""
    operands = [a for a in words[1:] if not a.text.startswith("-")]
    edits = ex_edits((feed.text or "").split("\n"))
    for a in operands[:1]:
        path = resolve(a.text, w.cwd)
        w.emit("read", path, program="ed", glob=a.glob)
        if edits:
            w.emit("edit", path, program="ed", glob=a.glob, edits=edits)
    if feed.text is None and feed.fed:
        w.emit("unknown", detail="ed's commands come from a stream that is not shown")
    return NOTHING


_NODES = {"command": lambda w, n, feed: w.command(n, feed, []), "redirected_statement": _Walker.redirected,
          "pipeline": lambda w, n, feed: w.pipeline(n.named_children, feed), "subshell": _Walker.subshell,
          "variable_assignment": _Walker.assignments, "variable_assignments": _Walker.assignments,
          "declaration_command": _Walker.assignments, "for_statement": _Walker.for_loop,
          "test_command": _Walker.test, "command_substitution": _Walker.substitution,
          "process_substitution": _Walker.substitution, "ERROR": _Walker.error,
          "file_redirect": lambda w, n, feed: (w.redirections([n], Feed(""), NOTHING), NOTHING)[1]}
_SILENT = frozenset({"comment", "heredoc_body", "heredoc_start", "heredoc_end", "file_descriptor"})


_HANDLERS = {"cd": _cd, "pushd": _cd, "popd": lambda w, words, feed: (setattr(w, "cwd", None), NOTHING)[1],
             "echo": _echo, "printf": _printf, "yes": _yes, "eval": _eval, "su": _su, "find": _find,
             "git": _git, "patch": _patch, "tar": _tar, "true": _noop, "false": _noop, ":": _noop, "zip": _zip,
             "getent": _getent, "ed": _ed, "red": _ed,
             **dict.fromkeys(("vim", "vi", "nvim", "view", "vimdiff", "ex", "nano", "pico", "emacs", "micro", "joe",
                              "mcedit", "gedit", "code"), _editor)}
