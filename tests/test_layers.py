"""The package's layers, checked from the source: no upward import (lazy ones included), no
module-level import cycle, no private name imported across packages.

Ranks go from the pure core up to the command line; a module may import its own rank and below.
``if TYPE_CHECKING:`` blocks are annotations, not imports, and registry entries written as
``"module:attribute"`` strings are plug-ins found at run time, not imports.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
RANKS = {
    0: ("registry", "paths", "layout", "toolschema", "prices", "locks"),
    1: ("effects", "facts", "steps"),
    2: ("conditions", "tickets"),
    3: ("monitor", "annotate", "metrics", "rewards"),
    4: ("store",),
    5: ("sandbox",),
    6: ("tasks", "grade"),
    7: ("env",),
    8: ("agent",),
    9: ("ask", "report", "review"),
    10: ("suites",),
    11: ("run",),
    12: ("handoff", "integrations", "convert"),
    13: ("cli", "__main__"),
}
RANK = {pkg: r for r, pkgs in RANKS.items() for pkg in pkgs}


def _modules() -> dict[str, ast.Module]:
    out = {}
    for p in sorted((SRC / "impasse").rglob("*.py")):
        name = ".".join(p.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        out[name] = ast.parse(p.read_text(), str(p))
    return out


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(tree: ast.AST, top_level_only: bool = False):
    """(imported module, names, line) for every ``impasse`` import, skipping TYPE_CHECKING blocks."""
    stack = list(ast.iter_child_nodes(tree))
    while stack:
        node = stack.pop()
        if _is_type_checking(node):
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "impasse":
            yield node.module, [a.name for a in node.names], node.lineno
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "impasse":
                    yield a.name, [], node.lineno
        if not (top_level_only and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))):
            stack.extend(ast.iter_child_nodes(node))


def test_every_package_has_a_rank():
    packages = {_package(m) for m in _modules()} - {""}
    assert packages <= set(RANK), f"give these packages a rank in RANKS: {sorted(packages - set(RANK))}"


def test_no_upward_import():
    bad = []
    for module, tree in _modules().items():
        here = RANK.get(_package(module), 0)
        for target, _names, line in _imports(tree):
            there = RANK.get(_package(target), 0)
            if there > here:
                bad.append(f"{module}:{line} imports {target} (rank {there} > {here})")
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_no_private_name_across_packages():
    bad = []
    for module, tree in _modules().items():
        for target, names, line in _imports(tree):
            if _package(target) != _package(module):
                bad += [f"{module}:{line} imports {target}.{n}" for n in names if n.startswith("_")]
    assert not bad, "private names used across packages:\n" + "\n".join(bad)


def test_no_module_level_import_cycle():
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for module, tree in mods.items():
        deps = set()
        for target, names, _line in _imports(tree, top_level_only=True):
            deps |= {f"{target}.{n}" for n in names if f"{target}.{n}" in mods} or ({target} & set(mods))
        graph[module] = deps - {module}
    seen: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        seen[node] = 1
        for dep in sorted(graph.get(node, ())):
            if seen.get(dep) == 1:
                return [*path[path.index(dep):], dep] if dep in path else [node, dep]
            if dep not in seen and (cycle := visit(dep, [*path, dep])):
                return cycle
        seen[node] = 2
        return None

    for module in sorted(graph):
        if module not in seen and (cycle := visit(module, [module])):
            raise AssertionError("module-level import cycle: " + " -> ".join(cycle))
