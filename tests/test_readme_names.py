"""Every Python name the README shows exists: dotted ``impasse.…`` names and the names its code
blocks import (a reader who copies them must not meet an ImportError)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
GROUPS = set(re.findall(r'^\[project\.entry-points\."([^"]+)"\]', (ROOT / "pyproject.toml").read_text(), re.M))
"""Entry-point groups (``impasse.reference_agents``) are names in package metadata, not modules."""
DOTTED = re.compile(r"(?<![\w/.-])impasse(?:\.[A-Za-z_]\w*)+(?![\w/-])")
IMPORTS = re.compile(r"^\s*from (impasse(?:\.\w+)*) import ([\w, ()]+)$", re.M)


def names() -> list[str]:
    found = {m.group(0).rstrip(".") for m in DOTTED.finditer(README)}
    for module, listed in IMPORTS.findall(README):
        found |= {f"{module}.{n.strip()}" for n in listed.strip("()").split(",") if n.strip()}
    return sorted(found - GROUPS)


def resolve(dotted: str) -> object:
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ModuleNotFoundError:
            continue
        for attr in parts[k:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def test_the_readme_names_something():
    assert len(names()) > 20


@pytest.mark.parametrize("dotted", names())
def test_a_name_the_readme_shows_exists(dotted):
    try:
        resolve(dotted)
    except (ImportError, AttributeError) as e:
        pytest.fail(f"README names {dotted}, which does not exist: {e}")
