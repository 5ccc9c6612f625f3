"""Who uses a cached layer, decided by locks: live episodes hold a SHARED ``flock`` on each layer
they mount, for as long as the overlay exists; building or pruning a layer takes it EXCLUSIVE.

The lock file sits beside the layer (``layers/.<name>.lock`` for an instance layer, the same
file its lazy build locks; ``images/<key>/.<build>.lock`` for an image build), never inside it,
and is never removed (removing a lock file lets two processes lock two different files).
``impasse cache prune`` removes a layer only while it holds that lock exclusively, and removes
the ``.complete`` stamp first: an episode that found the layer before the prune and locks it
after sees the stamp gone and builds the layer again (instance layers) or fails clearly (images).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from impasse import paths


class LayerGone(RuntimeError):
    """A layer was pruned between being found and being locked for use."""

    def __init__(self, layer: Path, instance: bool) -> None:
        self.layer, self.instance = layer, instance
        what = ("instance layer" if instance else "task image build")
        fix = "it is rebuilt on the next start" if instance else "rebuild it with `impasse tasks build`"
        super().__init__(f"{what} {layer} was removed by `impasse cache prune` while the episode started; {fix}")


def lock_file(layer: Path) -> Path | None:
    """The usage lock of a prunable layer (None for layers that are never pruned, e.g. the base)."""
    if layer.name == "layer" and layer.parent.parent.parent == paths.images_dir():
        build = layer.parent
        return build.parent / f".{build.name}.lock"
    if layer.parent == paths.layers_dir():
        return layer.parent / f".{layer.name}.lock"
    return None


def stamp_of(layer: Path) -> Path | None:
    """The completion stamp of an instance layer (image builds are complete once published)."""
    return layer.parent / f".{layer.name}.complete" if layer.parent == paths.layers_dir() else None


def hold_shared(layers: Iterable[Path]) -> list[int]:
    """Take a shared lock on every prunable layer; raise :class:`LayerGone` if one is gone."""
    fds: list[int] = []
    try:
        for layer in layers:
            lock = lock_file(layer)
            if lock is None:
                continue
            fd = os.open(lock, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o644)
            fds.append(fd)
            fcntl.flock(fd, fcntl.LOCK_SH)  # waits out a build or a prune in progress
            stamp = stamp_of(layer)
            if not layer.is_dir() or (stamp is not None and not stamp.exists()):
                raise LayerGone(layer, stamp is not None)
    except BaseException:
        release(fds)
        raise
    return fds


def release(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)
    fds.clear()


def try_exclusive(lock: Path) -> int | None:
    """An exclusive lock if nobody uses or builds the layer now, else None (never waits)."""
    fd = os.open(lock, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def create_rebuilding(backend, layers: Callable[[], list[Path]], *args, **kwargs):
    """``backend.create(layers(), ...)``, calling ``layers()`` (which builds missing instance
    layers) once more if an instance layer was pruned between being found and being locked."""
    try:
        return backend.create(layers(), *args, **kwargs)
    except LayerGone as e:
        if not e.instance:
            raise
        return backend.create(layers(), *args, **kwargs)
