"""Instance layers: the bug committed as the repository's only commit, on top of a task image.

An instance layer holds the mutated file and a fresh ``.git`` whose single commit is the buggy
tree, so ``git log``/``git show`` reveal nothing and ``git diff`` shows only the agent's own work.
Built lazily, once, with a file lock (several episodes may start together).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from impasse import paths
from impasse.layout import AGENT_GID, AGENT_UID
from impasse.tasks.image import Image, _chown_tree
from impasse.tasks.schema import TaskInstance

GIT_ENV = {
    "PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "maintainer", "GIT_AUTHOR_EMAIL": "maintainer@example.invalid",
    "GIT_COMMITTER_NAME": "maintainer", "GIT_COMMITTER_EMAIL": "maintainer@example.invalid",
    "GIT_AUTHOR_DATE": "2025-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2025-01-01T00:00:00Z",
}
EXCLUDES = "__pycache__/\n*.pyc\n*.egg-info/\n.pytest_cache/\n.hypothesis/\nbuild/\n"


def commit_tree(tree: Path, message: str) -> str:
    """``git init`` + commit everything in ``tree``; returns the (deterministic) commit hash."""
    git = ["git", "-c", "safe.directory=*", "-c", "init.defaultBranch=main", "-C", str(tree)]
    subprocess.run([*git, "init", "-q"], env=GIT_ENV, check=True, capture_output=True)
    (tree / ".git" / "info").mkdir(exist_ok=True)
    (tree / ".git" / "info" / "exclude").write_text(EXCLUDES)
    subprocess.run([*git, "add", "-A"], env=GIT_ENV, check=True, capture_output=True)
    subprocess.run([*git, "commit", "-q", "--no-gpg-sign", "-m", message], env=GIT_ENV, check=True,
                   capture_output=True)
    # The index git just wrote caches each file's stat data (times, inode, device): two builds
    # would differ there and nowhere else. Read back from the commit, its entries carry no stat
    # data at all, so the layer is the same bytes on every rebuild (git re-hashes such entries
    # on first use, and so can never take a changed file for an unchanged one).
    (tree / ".git" / "index").unlink()
    subprocess.run([*git, "read-tree", "HEAD"], env=GIT_ENV, check=True, capture_output=True)
    out = subprocess.run([*git, "rev-parse", "HEAD"], env=GIT_ENV, check=True, capture_output=True, text=True)
    return out.stdout.strip()


def apply_patch(tree: Path, patch: str, reverse: bool = False) -> None:
    cmd = ["git", "-c", "safe.directory=*", "-C", str(tree), "apply", "--whitespace=nowarn"]
    if reverse:
        cmd.append("-R")
    proc = subprocess.run([*cmd, "-"], input=patch.encode(), env=GIT_ENV, capture_output=True)
    if proc.returncode != 0:
        raise ValueError(f"patch does not apply: {proc.stderr.decode().strip()}")


def copy_repo(image: Image, dest: Path) -> Path:
    src = image.layer / "workspace" / "repo"
    shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return dest


def build_layer_once(name: str, fill: Callable[[Path], None]) -> Path:
    """The shared layer ``layers/<name>``, built on first use and never changed after. ``fill(tmp)``
    writes the layer under ``tmp/layer`` (``tmp`` is its scratch space). Builds are serialised by a lock file; the completion stamp lives
    beside the layer, not in it (it would show up at /)."""
    final = paths.layers_dir() / name
    stamp = paths.layers_dir() / f".{name}.complete"
    if stamp.exists():
        return final
    paths.layers_dir().mkdir(parents=True, exist_ok=True)
    with open(paths.layers_dir() / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists():
            return final
        tmp = paths.layers_dir() / f".{name}.tmp{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        fill(tmp)
        _chown_tree(tmp / "layer" / "workspace", AGENT_UID, AGENT_GID)
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp / "layer", final)
        shutil.rmtree(tmp, ignore_errors=True)
        stamp.touch()
        return final


def instance_layer(inst: TaskInstance, image: Image, *, fixed: bool = False) -> Path:
    """The layer dir for ``inst`` on this image build (built on first use, then never changed).
    ``fixed=True`` gives the task-mismatch variant: the same single-commit repo, but with the
    defect already absent."""

    def fill(tmp: Path) -> None:
        repo = copy_repo(image, tmp / "work")
        if not fixed:
            apply_patch(repo, inst.patch)
        commit_tree(repo, f"{inst.package} {inst.package_version}")
        layer_repo = tmp / "layer" / "workspace" / "repo"
        layer_repo.mkdir(parents=True)
        shutil.move(str(repo / ".git"), layer_repo / ".git")
        if not fixed:
            dst = layer_repo / inst.target_file
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(repo / inst.target_file, dst)
            # The file keeps the sdist's timestamps. Stamped "now", it would share its second
            # with an agent's first edit moments later, and Python's pyc check and git's stat
            # cache (both whole seconds + size) would take a same-size fix for no change at all.
            shutil.copystat(image.layer / "workspace" / "repo" / inst.target_file, dst)

    return build_layer_once(f"{inst.instance_id}{'.fixed' if fixed else ''}@{image.build}", fill)
