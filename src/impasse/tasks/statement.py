"""Problem statements written from the failing tests, like a user's bug report.

Input: pytest ``--tb=short`` output of the FAIL_TO_PASS tests on the buggy code, and the test
sources. Output: what the user did (a reproduction built from the failing test), what they
expected, what they got. It never names the operator or the fix.

Two promises, checked over every instance of the default suite (``benchmarks/statements.py``):

- the reproduction is whole Python statements that parse, with the imports and module-level
  helpers they use; what it cannot carry (a pytest fixture, the test class's ``self``, a
  parametrized value) is named in a plain sentence beside it;
- no path, frame or line of the package's own source appears anywhere (that would point at the
  bug's location): traceback frames, source paths in error text and doctest node ids are dropped.
"""

from __future__ import annotations

import ast
import builtins
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

_HEADER = re.compile(r"^_{3,} (.+?) _{3,}$")
_FRAME = re.compile(r"^(\S+\.py):(\d+): in (\S+)")
_PATHLIKE = re.compile(r"(?:[\w.-]+/)+[\w.-]+\.py\b|\b[\w.-]+\.py:\d+|site-packages|/workspace/|^\s*File \"")
STATEMENT_VERSION = 2
"""Part of a package's build stamp: a new writer re-validates instances (images are kept)."""
MAX_LINES = 40
"""A reproduction longer than this keeps only the statements the failing one depends on."""
MAX_HELPER_LINES = 25
"""Module-level helpers up to this size are inlined; longer ones are named in a sentence."""
_BUILTINS = set(dir(builtins)) | {"__file__", "__name__"}


def _sections(output: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current = None
    for line in output.splitlines():
        m = _HEADER.match(line.strip())
        if m:
            current = m.group(1)
            sections[current] = []
        elif current is not None:
            if line.startswith(("=", "FAILED ", "PASSED ")):
                current = None
            else:
                sections[current].append(line)
    return sections


@dataclass
class Repro:
    """A reproduction: code that parses, and sentences for what the code cannot carry."""

    code: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _span(node: ast.stmt) -> tuple[int, int]:
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return start, node.end_lineno or node.lineno


def _source(lines: list[str], nodes: list[ast.stmt]) -> list[str]:
    out: list[str] = []
    for n in nodes:
        a, b = _span(n)
        out += textwrap.dedent("\n".join(lines[a - 1:b])).splitlines()
    return out


def _bound(node: ast.AST) -> set[str]:
    """Names a statement binds (assignments, defs, classes, imports, for/with targets)."""
    names = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(n.name)
        elif isinstance(n, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in n.names}
        elif isinstance(n, ast.arg):
            names.add(n.arg)
    return names


def _used(nodes: list[ast.AST]) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _find(tree: ast.Module, parts: list[str]) -> tuple[ast.AST | None, list[ast.ClassDef]]:
    """The function named by a node id's ``Class::...::func`` parts, and its enclosing classes."""
    scope: list[ast.stmt] = tree.body
    classes: list[ast.ClassDef] = []
    for part in parts[:-1]:
        cls = next((n for n in scope if isinstance(n, ast.ClassDef) and n.name == part), None)
        if cls is None:
            return None, classes
        classes.append(cls)
        scope = cls.body
    name = parts[-1]
    fn = next((n for n in scope if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name), None)
    if fn is None and classes:  # inherited from a base class in the same module
        for base in classes[-1].bases:
            if isinstance(base, ast.Name):
                fn, _ = _find(tree, [base.id, name])
                if fn is not None:
                    break
    return fn, classes


def _needed(body: list[ast.stmt], upto: int) -> list[ast.stmt]:
    """Whole statements up to the failing one; when too long, only those it depends on."""
    chosen = body[:upto + 1]
    if sum(_span(n)[1] - _span(n)[0] + 1 for n in chosen) <= MAX_LINES:
        return chosen
    keep, wanted, size = [], _used([chosen[-1]]), 0
    for n in reversed(chosen):
        if n is chosen[-1] or _bound(n) & wanted:
            size += _span(n)[1] - _span(n)[0] + 1
            if keep and size > MAX_LINES * 2:
                break
            keep.insert(0, n)
            wanted |= _used([n])
    return keep


def _module_context(tree: ast.Module, lines: list[str], need: set[str]) -> tuple[list[str], set[str], list[str]]:
    """Module-level imports and small helpers that bind ``need``: (code, names still unresolved,
    names of helpers too long to inline)."""
    imports: list[ast.stmt] = []
    helpers: list[ast.stmt] = []
    long_helpers: list[str] = []
    resolved: set[str] = set()
    pending = set(need)
    for _ in range(3):  # helpers may use further imports/helpers
        for node in tree.body:
            names = _bound(node) if not isinstance(node, ast.FunctionDef | ast.ClassDef) else {node.name}
            hit = names & pending
            if not hit or node in imports or node in helpers:
                continue
            if isinstance(node, ast.Import | ast.ImportFrom):
                imports.append(node)
            elif _span(node)[1] - _span(node)[0] + 1 <= MAX_HELPER_LINES and not isinstance(node, ast.If | ast.Try):
                helpers.append(node)
                pending |= _used([node]) - _bound(node) - _BUILTINS
            else:
                long_helpers += sorted(hit)
            resolved |= hit
        pending -= resolved
    imports.sort(key=lambda n: n.lineno)
    helpers.sort(key=lambda n: n.lineno)
    code = [_only(n, resolved) for n in imports] + ([""] if imports and helpers else []) + _source(lines, helpers)
    return code, pending - set(long_helpers), long_helpers


def _only(node: ast.Import | ast.ImportFrom, names: set[str]) -> str:
    """The import statement, narrowed to the names the reproduction uses."""
    keep = [a for a in node.names if (a.asname or a.name).split(".")[0] in names] or node.names
    if isinstance(node, ast.ImportFrom):
        return ast.unparse(ast.ImportFrom(module=node.module, names=keep, level=node.level))
    return ast.unparse(ast.Import(names=keep))


def _suite_modules(context: list[str], repo: Path, test_dir: Path) -> list[str]:
    """Modules the reproduction imports from the test directory that the repository root alone
    does not make importable (e.g. tabulate's ``test/common.py``)."""
    out = []
    for node in ast.parse("\n".join(context)).body if context else []:
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        mods = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
        for mod in mods:
            top = mod.split(".")[0]
            at_root = (repo / top).exists() or (repo / f"{top}.py").exists()
            if top and not at_root and ((test_dir / f"{top}.py").exists() or (test_dir / top).is_dir()):
                out.append(top)
    return sorted(set(out))


def _test_repro(repo: Path, node_id: str, fail_line: int | None) -> Repro | None:
    file, _, rest = node_id.partition("::")
    parts = [p.split("[")[0] for p in rest.split("::")]
    path = repo / file
    if not path.exists() or not parts:
        return None
    text = path.read_text(errors="replace")
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    fn, classes = _find(tree, parts)
    if fn is None:
        return None
    lines = text.splitlines()
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and len(body) > 1:
        body = body[1:]
    upto = next((i for i, n in enumerate(body) if fail_line and _span(n)[0] <= fail_line <= _span(n)[1]),
                len(body) - 1)
    stmts = _needed(body, upto)
    code = _source(lines, stmts)
    params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
    unresolved = _used(stmts) - set().union(*(_bound(n) for n in stmts)) - _BUILTINS - set(params)
    context, unresolved, long_helpers = _module_context(tree, lines, unresolved)
    notes = []
    local = _suite_modules(context, repo, path.parent)
    if local:
        where = path.parent.relative_to(repo).as_posix()
        notes.append(f"Run it from the repository root with `{where}` on the import path (as pytest does): it imports "
                     f"the suite's own {', '.join(f'`{m}`' for m in local)}.")
    if classes and "self" in params:
        notes.append(f"`self` is an instance of the suite's test class `{classes[-1].name}` in `{file}`.")
    fixtures = [p for p in params if p != "self"]
    if fixtures:
        origin = "parametrized values and fixtures" if "[" in node_id else "pytest fixtures"
        notes.append(f"It uses the test suite's {origin} " + ", ".join(f"`{p}`" for p in fixtures)
                     + (f" (the failing case is `{node_id.split('::')[-1]}`)." if "[" in node_id else "."))
    if long_helpers or unresolved:
        names = ", ".join(f"`{n}`" for n in sorted(set(long_helpers) | unresolved))
        notes.append(f"It also relies on {names} from the test suite (`{file}` or its conftest).")
    full = context + ([""] if context else []) + code
    try:
        ast.parse("\n".join(full))
    except SyntaxError:
        return None
    return Repro(full, notes)


def _doctest_repro(repo: Path, node_id: str) -> Repro | None:
    """A doctest in the package source: its examples, imported from the top-level package (the
    source file itself is never named)."""
    import doctest

    file, _, dotted = node_id.partition("::")
    path = repo / file
    if not path.exists():
        return None
    try:
        tree = ast.parse(path.read_text(errors="replace"))
    except SyntaxError:
        return None
    module = file.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    parts = dotted.removeprefix(module + ".").split(".") if dotted.startswith(module + ".") else dotted.split(".")[1:]
    node: ast.AST | None = tree
    for part in parts:
        body = getattr(node, "body", [])
        node = next((n for n in body if isinstance(n, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                     and n.name == part), None)
        if node is None:
            return None
    doc = ast.get_docstring(node) if isinstance(node, ast.AST) else None
    examples = doctest.DocTestParser().get_examples(doc or "")
    code = [line for ex in examples for line in ex.source.rstrip("\n").splitlines()]
    top = dotted.split(".")[0]
    full = [f"from {top} import *", "", *code]
    try:
        ast.parse("\n".join(full))
    except SyntaxError:
        return None
    return Repro(full, [f"These are the documented examples of `{'.'.join(parts) or top}`; the names they use "
                        f"come from `{top}`'s module namespace."]) if code else None


def _clean_errors(lines: list[str], test_files: set[str]) -> list[str]:
    """Exception text without anything pointing into the package source."""
    out = []
    for ln in lines:
        if not ln.startswith("E "):
            continue
        text = ln[1:].strip()
        paths = re.findall(r"(?:[\w.-]+/)+[\w.-]+\.py|[\w.-]+\.py(?=:\d)", text)
        if _PATHLIKE.search(text) and not all(p in test_files for p in paths if p):
            continue
        out.append(text)
    return out[:8]


def _names_source(repro: Repro, repo: Path, test_files: set[str]) -> bool:
    """Does the reproduction spell out a path of the package source (e.g. a test that runs
    ``pkg/__init__.py`` as a script)? Such a candidate is passed over."""
    text = "\n".join(repro.code + repro.notes)
    return any((repo / p).is_file() and p not in test_files for p in re.findall(r"[\w.-]+(?:/[\w.-]+)*\.py", text))


def _is_test(node_id: str, test_files: set[str]) -> bool:
    return node_id.split("::")[0] in test_files


def write_statement(package: str, version: str, f2p: list[str], output: str, repo: Path,
                    test_files: set[str]) -> str:
    sections = _sections(output)
    ordered = sorted(f2p, key=lambda t: not _is_test(t, test_files))  # tests before doctests in the source
    chosen, repro, errors = None, None, []
    for node_id in ordered:
        short = node_id.split("::", 1)[-1].replace("::", ".")
        lines = sections.get(short) or next((v for k, v in sections.items() if k.endswith(short.split(".")[-1])), [])
        test_name = node_id.split("::")[-1].split("[")[0]
        frames = [(int(m.group(2)), m.group(3)) for m in map(_FRAME.match, lines) if m and m.group(1) in test_files]
        own = [ln for ln, fn in frames if fn == test_name]  # the call as written in the test itself
        fail_line = (own or [ln for ln, _ in frames] or [None])[-1]
        found = (_test_repro(repo, node_id, fail_line) if _is_test(node_id, test_files)
                 else _doctest_repro(repo, node_id))
        if not found or _names_source(found, repo, test_files):
            continue
        found_errors = _clean_errors(lines, test_files)
        if chosen is None or (found_errors and not errors):
            chosen, repro, errors = node_id, found, found_errors
        if errors:
            break
    if chosen is None:
        chosen = ordered[0]
    return _render(package, version, chosen, repro, errors, [t for t in f2p if t != chosen], test_files)


def _render(package: str, version: str, chosen: str, repro: Repro | None, errors: list[str], others: list[str],
            test_files: set[str]) -> str:
    is_test = _is_test(chosen, test_files)
    func = chosen.split("::")[-1].split("[")[0].split(".")[-1]
    exc = next((e.split(":")[0] for e in errors if re.match(r"^[A-Za-z_.]+(Error|Exception|Warning)\b", e)), None)
    title = f"{package}: unexpected {exc} in {func.removeprefix('test_')}" if exc else \
        f"{package}: wrong result in {func.removeprefix('test_').replace('_', ' ')}"
    source = f"the project's own check `{chosen}`" if is_test else f"a documented example of `{func}`"
    parts = [title, ""]
    if repro:
        parts += [f"I'm using {package} {version} and hit a regression. A minimal reproduction, taken from {source}:",
                  "", "```python", *repro.code, "```", ""]
        if repro.notes:
            parts += [" ".join(repro.notes), ""]
    else:
        parts += [f"I'm using {package} {version} and hit a regression: {source} fails.", ""]
    if errors:
        parts += ["I expected this to run cleanly, but instead got:", "", "```", *errors, "```", ""]
    else:
        parts += ["I expected this to run cleanly, but it fails.", ""]
    tests = [t for t in others if _is_test(t, test_files)]
    docs = len(others) - len(tests)
    if tests or docs:
        shown = ", ".join(f"`{t}`" for t in tests[:3])
        more = len(tests) - 3 if len(tests) > 3 else 0
        tail = [f"{more} more" if more else "", f"{docs} documented example{'s' if docs > 1 else ''}" if docs else ""]
        extra = " and ".join(x for x in tail if x)
        parts += [f"Other checks that fail the same way: {shown}{' and ' + extra if shown and extra else extra}.", ""]
    parts.append("Everything else in the suite still passes, so the problem looks specific to this behaviour.")
    return "\n".join(parts)


def statement_problems(text: str, source_files: set[str]) -> list[str]:
    """What breaks the two promises above: a ```python block that does not parse, or a path,
    frame or line of the package source (``source_files``: repo-relative, tests excluded)."""
    problems = []
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        try:
            ast.parse(block)
        except SyntaxError as e:
            problems.append(f"reproduction does not parse: {e.msg} (line {e.lineno})")
    for f in sorted(source_files):
        if f in text:
            problems.append(f"names package source file {f}")
    if re.search(r"^\s*File \"|site-packages|/workspace/|\bTraceback \(most recent", text, re.M):
        problems.append("contains a traceback frame or an installed path")
    for m in re.finditer(r"\b([\w.-]+\.py):\d+", text):
        if any(f.endswith("/" + m.group(1)) or f == m.group(1) for f in source_files):
            problems.append(f"points at a source line ({m.group(0)})")
    return problems
