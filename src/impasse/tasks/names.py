"""Package names and versions, by the standards (PEP 503 names, PEP 440 versions), in one place."""

from __future__ import annotations

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version


def canonical(name: str) -> str:
    """``Markdown_It.py`` and ``markdown-it-py`` name the same project."""
    return canonicalize_name(name)


def version_key(version: str) -> tuple[int, Version | str]:
    """Sort key: valid PEP 440 versions in order, anything else before them."""
    try:
        return (1, Version(version))
    except InvalidVersion:
        return (0, version)


def is_final(version: str) -> bool:
    """A final release (post-releases included): no pre- or dev-release."""
    try:
        v = Version(version)
    except InvalidVersion:
        return False
    return not (v.is_prerelease or v.is_devrelease)
