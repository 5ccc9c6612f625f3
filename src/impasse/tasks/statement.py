"""Problem statements written from the failing tests, like a user's bug report.

Input: pytest ``--tb=short`` output of the FAIL_TO_PASS tests on the buggy code, and the test
sources. Output: what the user did (the failing call, from the test), what they expected (the
check), what they got (the assertion/exception). It never names the operator or the fix, and
never shows a frame from the package's own source (that would point at the bug's location).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

_HEADER = re.compile(r"^_{3,} (.+?) _{3,}$")
_FRAME = re.compile(r"^(\S+\.py):(\d+): in (\S+)")


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


def _test_source(repo: Path, node_id: str, upto_line: int | None) -> list[str]:
    """Lines of the test function, up to the failing line, dedented and trimmed to a reproduction."""
    file, _, rest = node_id.partition("::")
    name = rest.split("::")[-1].split("[")[0]
    path = repo / file
    if not path.exists():
        return []
    text = path.read_text(errors="replace")
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            lines = text.splitlines()
            body_start = node.body[0].lineno
            if isinstance(node.body[0], ast.Expr) and isinstance(getattr(node.body[0], "value", None), ast.Constant):
                body_start = node.body[1].lineno if len(node.body) > 1 else body_start
            end = upto_line if upto_line and body_start <= upto_line <= (node.end_lineno or upto_line) else node.end_lineno
            chunk = lines[body_start - 1:end]
            chunk = chunk[-10:]
            indent = min((len(line) - len(line.lstrip()) for line in chunk if line.strip()), default=0)
            return [line[indent:] for line in chunk]
    return []


def write_statement(package: str, version: str, f2p: list[str], output: str, repo: Path,
                    test_files: set[str]) -> str:
    sections = _sections(output)
    chosen, repro, errors = None, [], []
    for node_id in f2p:
        short = node_id.split("::", 1)[-1].replace("::", ".")
        lines = sections.get(short) or next((v for k, v in sections.items() if k.endswith(short.split(".")[-1])), None)
        if not lines:
            continue
        test_name = node_id.split("::")[-1].split("[")[0]
        frames = [(int(m.group(2)), m.group(3)) for m in map(_FRAME.match, lines) if m and m.group(1) in test_files]
        own = [ln for ln, fn in frames if fn == test_name]  # the call as written in the test itself
        test_line = (own or [ln for ln, _ in frames] or [None])[-1]
        errors = [ln[1:].strip() for ln in lines if ln.startswith("E ")][:8]
        repro = _test_source(repo, node_id, test_line)
        if errors and repro:
            chosen = node_id
            break
    if chosen is None:
        chosen = f2p[0]
        repro = _test_source(repo, chosen, None)
    func = chosen.split("::")[-1].split("[")[0]
    exc = next((e.split(":")[0] for e in errors if re.match(r"^[A-Za-z_.]+(Error|Exception|Warning)\b", e)), None)
    title = f"{package}: unexpected {exc} in {func.removeprefix('test_')}" if exc else \
        f"{package}: wrong result in {func.removeprefix('test_').replace('_', ' ')}"
    parts = [title, "",
             f"I'm using {package} {version} and hit a regression. A minimal reproduction, taken from the "
             f"project's own check `{chosen}`:", "", "```python", *repro, "```", ""]
    if errors:
        parts += ["I expected this to run cleanly, but instead got:", "", "```", *errors, "```", ""]
    else:
        parts += ["I expected this to run cleanly, but it fails.", ""]
    others = [t for t in f2p if t != chosen]
    if others:
        shown = ", ".join(f"`{t}`" for t in others[:3])
        more = f" and {len(others) - 3} more" if len(others) > 3 else ""
        parts += [f"Other checks that fail the same way: {shown}{more}.", ""]
    parts.append("Everything else in the suite still passes, so the problem looks specific to this behaviour.")
    return "\n".join(parts)
