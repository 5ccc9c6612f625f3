"""Where impasse keeps what it downloads and builds.

Everything lives under one cache root so that a user can see, move or delete it in one place:
``$IMPASSE_CACHE`` if set, else ``$XDG_CACHE_HOME/impasse``, else ``~/.cache/impasse``.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    if env := os.environ.get("IMPASSE_CACHE"):
        return Path(env).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser().resolve() / "impasse"


def sdists_dir() -> Path:
    return cache_root() / "sdists"


def images_dir() -> Path:
    return cache_root() / "images"


def tasks_dir() -> Path:
    return cache_root() / "tasks"


def layers_dir() -> Path:
    return cache_root() / "layers"


def base_dir() -> Path:
    return cache_root() / "base"


def pip_cache_dir() -> Path:
    return cache_root() / "pip"


def episodes_dir() -> Path:
    """Mount points of live episodes. Kept outside the cache's build folders on purpose."""
    return cache_root() / "episodes"
