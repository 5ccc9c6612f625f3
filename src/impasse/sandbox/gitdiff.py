"""The agent's patch, computed from the host side with git (shared by the backends)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path


def repo_diff(worktree: Path, base_git: Path, scratch: Path | None = None) -> str:
    """The working tree's changes against the task's base commit, new files included.

    Computed with the *pristine* ``.git`` of the task's layer (so an agent that commits,
    rewrites or deletes its own ``.git`` cannot hide or fake changes) and a fresh index built
    from HEAD. A fresh index has no stat cache: git compares file times in whole seconds, so a
    same-size edit made in the same second as a cached entry would otherwise be skipped as
    unchanged, and the patch would come out empty.
    """
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        (Path(tmp) / "objects").mkdir()
        env = {"PATH": "/usr/bin:/bin", "GIT_DIR": str(base_git), "GIT_WORK_TREE": str(worktree),
               "GIT_INDEX_FILE": str(Path(tmp) / "index"), "GIT_OBJECT_DIRECTORY": str(Path(tmp) / "objects"),
               "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(base_git / "objects"), "HOME": tmp,
               "GIT_CONFIG_NOSYSTEM": "1"}
        git = ["git", "-c", "safe.directory=*", "-c", "core.fileMode=false", "-c", "core.autocrlf=false",
               "-c", "gc.auto=0"]
        for args in (["read-tree", "HEAD"], ["add", "-A", "--", "."]):
            subprocess.run([*git, *args], env=env, check=True, capture_output=True, cwd=worktree)
        out = subprocess.run([*git, "diff", "--cached", "--binary", "HEAD"], env=env, check=True,
                             capture_output=True, cwd=worktree)
        return out.stdout.decode(errors="replace")


def pristine_git(layers: list[Path], repo: str) -> Path | None:
    """The topmost layer's ``.git`` of the repository at sandbox path ``repo``."""
    rel = repo.lstrip("/")
    return next((layer / rel / ".git" for layer in layers if (layer / rel / ".git").is_dir()), None)
