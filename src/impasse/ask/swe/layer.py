"""Clean layers: a task image's sdist tree committed as a repository's only commit, no bug.

Ask tasks start from the package exactly as released; the layer adds only a fresh ``.git`` so
that ``git diff`` shows the agent's own work and ``git apply`` works on patches written against
the sdist. Built lazily, once per image build, under a file lock; never modified afterwards
(live episodes may use it as an overlay lower layer).
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

from impasse import paths
from impasse.layout import AGENT_GID, AGENT_UID
from impasse.tasks.image import Image, _chown_tree
from impasse.tasks.layer import commit_tree, copy_repo


def clean_layer(image: Image) -> Path:
    """The layer dir holding ``/workspace/repo/.git`` for ``image`` (built on first use)."""
    name = f"ask-clean-{image.key}@{image.build}"
    final = paths.layers_dir() / name
    stamp = paths.layers_dir() / f".{name}.complete"  # outside the layer: it would show up at /
    if stamp.exists():
        return final
    paths.layers_dir().mkdir(parents=True, exist_ok=True)
    with open(paths.layers_dir() / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists():
            return final
        tmp = paths.layers_dir() / f".{name}.tmp{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        repo = copy_repo(image, tmp / "work")
        commit_tree(repo, f"{image.package} {image.version}")
        layer_repo = tmp / "layer" / "workspace" / "repo"
        layer_repo.mkdir(parents=True)
        # Only .git goes into the layer: every tracked file comes from the image layer below,
        # with the sdist's own timestamps (a file stamped "now" could share its second with an
        # agent's first same-size edit, which pyc and git stat caches would then miss).
        shutil.move(str(repo / ".git"), layer_repo / ".git")
        shutil.copystat(image.layer / "workspace" / "repo", layer_repo)
        _chown_tree(tmp / "layer" / "workspace", AGENT_UID, AGENT_GID)
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp / "layer", final)
        shutil.rmtree(tmp, ignore_errors=True)
        stamp.touch()
        return final
