"""Who owns an episode directory, decided by a lock rather than by a pid.

An owner takes an exclusive ``flock`` on ``<name>.lock`` *before* ``<name>/`` exists and keeps it
until after the directory is gone. A sweeper removes only what it can lock itself: the lock is
free exactly when every process that held it has closed it (exited, crashed, was SIGKILLed).
Pids cannot decide this: they are reused, and a process in another pid namespace (a container,
a CI sandbox, ``unshare --pid``) sees every owner's pid as dead.

The one race left, a sweeper unlinking a lock file between an owner's ``open`` and ``flock``, is
closed by the owner checking, once it holds the lock, that the path still names the file it
locked (otherwise it starts again under a new name).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

SUFFIX = ".lock"


class Lease:
    """Exclusive ownership of ``root/<name>`` for as long as this object is open."""

    def __init__(self, root: Path, name: str, fd: int) -> None:
        self.root, self.name, self._fd = root, name, fd

    @property
    def dir(self) -> Path:
        return self.root / self.name

    @property
    def lock_path(self) -> Path:
        return self.root / (self.name + SUFFIX)

    @classmethod
    def acquire_new(cls, root: Path, prefix: str = "ep-") -> Lease:
        """A fresh, unique name owned by this process (its directory does not exist yet)."""
        root.mkdir(parents=True, exist_ok=True)
        while True:
            name = f"{prefix}{uuid.uuid4().hex[:12]}"
            path = root / (name + SUFFIX)
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o600)
            except FileExistsError:
                continue
            if _lock_if_current(path, fd):
                os.write(fd, f"{os.getpid()}\n".encode())  # for people reading the cache; never trusted
                return cls(root, name, fd)
            os.close(fd)

    def release(self) -> None:
        """Give the name up: call only after the directory has been removed."""
        if self._fd < 0:
            return
        with contextlib.suppress(FileNotFoundError):
            self.lock_path.unlink()
        os.close(self._fd)
        self._fd = -1


def _lock_if_current(path: Path, fd: int) -> bool:
    """Take the lock without waiting; True if we hold it *and* ``path`` still names that file."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def claim_if_dead(root: Path, name: str) -> Iterator[bool]:
    """Yield True while holding the lock of ``name`` if its owner is provably gone, else False.
    On True the caller removes the directory; the lock file goes when the block ends."""
    path = root / (name + SUFFIX)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        # No lock file: nobody owns the name (owners create the lock before the directory and
        # remove it only after the directory), so a directory left without one is dead.
        yield not path.exists()
        return
    try:
        if not _lock_if_current(path, fd):
            yield False
            return
        yield True
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    finally:
        os.close(fd)


def sweep(root: Path, remove: Callable[[Path], None]) -> int:
    """Call ``remove(dir)`` for every name under ``root`` whose owner is gone; returns how many."""
    if not root.is_dir():
        return 0
    names = {p.name.removesuffix(SUFFIX) for p in root.iterdir()
             if p.name.endswith(SUFFIX) or p.is_dir()}
    removed = 0
    for name in sorted(names):
        with claim_if_dead(root, name) as dead:
            if dead:
                remove(root / name)
                removed += 1
    return removed
