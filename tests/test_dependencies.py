"""`make run` installs only ``impasse[bench]``: every module it may load must import only what that
extra brings in. A package that happens to be installed by the test suite's extras (typer stopped
depending on click, yet ``ray`` and ``uvicorn`` still pull it in) hides a missing pin until a fresh
clone's main job dies on it; this test reads the imports instead of trusting the environment."""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "impasse"
BEHIND_OTHER_EXTRAS = ("integrations",)
"""Packages whose modules are loaded only by commands of another extra (MCP, inspect_ai, OpenEnv...)."""
NOT_IMPASSE_CODE = ("ask/data",)
"""The ask suite's held-out tests: they run inside a task's own environment, not impasse's."""


def _requirement_names(dist: str, extras: set[str]) -> set[str]:
    names = set()
    for req in md.requires(dist) or []:
        name, _, marker = req.partition(";")
        wanted = re.findall(r'extra\s*==\s*"([^"]+)"', marker)
        if wanted and not set(wanted) & extras:
            continue
        if not wanted and "extra" in marker:
            continue
        base = re.split(r"[\s\[<>=!~]", name.strip(), maxsplit=1)[0]
        sub = set(re.findall(r"\[([^\]]+)\]", name))
        names.add((base.lower().replace("_", "-"), frozenset(e.strip() for s in sub for e in s.split(","))))
    return names


def closure(dist: str, extras: set[str]) -> set[str]:
    """Every distribution ``pip install dist[extras]`` brings in (names normalised)."""
    seen: set[str] = set()
    todo = [(dist, frozenset(extras))]
    visited: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, ex = todo.pop()
        if (name, ex) in visited:
            continue
        visited.add((name, ex))
        seen.add(name.lower().replace("_", "-"))
        try:
            todo.extend(_requirement_names(name, set(ex)))
        except md.PackageNotFoundError:
            continue
    return seen


def top_level_imports(path: Path) -> set[str]:
    """Third-party packages a module imports when it is loaded (imports inside functions are lazy)."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n not in ("impasse", "__future__")}


def test_what_make_run_loads_is_what_impasse_bench_installs():
    installed = closure("impasse", {"bench"})
    providers = md.packages_distributions()
    missing = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith(BEHIND_OTHER_EXTRAS + NOT_IMPASSE_CODE):
            continue
        for name in top_level_imports(path):
            dists = {d.lower().replace("_", "-") for d in providers.get(name, [name])}
            if not dists & installed:
                missing.append(f"{rel} imports {name} (from {sorted(dists)}), which impasse[bench] does not install")
    assert not missing, "\n".join(missing)


def test_the_check_sees_a_package_the_extra_does_not_bring(tmp_path):
    """The check is not vacuous: ray is installed here but not by impasse[bench]."""
    assert "ray" not in closure("impasse", {"bench"})
    assert "ray" in closure("impasse", {"ray"})
    mod = tmp_path / "m.py"
    mod.write_text("import ray\nimport json\n\ndef f():\n    import mcp\n")
    assert top_level_imports(mod) == {"ray"}
