"""Clean layers: a task image's sdist tree committed as a repository's only commit, no bug.

Ask tasks start from the package exactly as released; the layer adds only a fresh ``.git`` so
that ``git diff`` shows the agent's own work and ``git apply`` works on patches written against
the sdist. Built lazily, once per image build, under a file lock; never modified afterwards
(live episodes may use it as an overlay lower layer).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from impasse.tasks.image import Image
from impasse.tasks.layer import build_layer_once, commit_tree, copy_repo


def clean_layer(image: Image) -> Path:
    """The layer dir holding ``/workspace/repo/.git`` for ``image`` (built on first use)."""

    def fill(tmp: Path) -> None:
        repo = copy_repo(image, tmp / "work")
        commit_tree(repo, f"{image.package} {image.version}")
        layer_repo = tmp / "layer" / "workspace" / "repo"
        layer_repo.mkdir(parents=True)
        # Only .git goes into the layer: every tracked file comes from the image layer below,
        # with the sdist's own timestamps (a file stamped "now" could share its second with an
        # agent's first same-size edit, which pyc and git stat caches would then miss).
        shutil.move(str(repo / ".git"), layer_repo / ".git")
        shutil.copystat(image.layer / "workspace" / "repo", layer_repo)

    return build_layer_once(f"ask-clean-{image.key}@{image.build}", fill)
