"""Who holds a ``flock``, asked without taking one.

Listing the cache must not disturb what it lists: probing a lock by taking it exclusively, even
for a moment, can make a starting episode wait or a ``run --resume`` be refused as busy. The
kernel's own table (``/proc/locks``) says which files are locked, by device and inode, so a
read-only look is enough. That table shows only holders in the reader's pid namespace, so only a
reader outside the initial one (in a container), or one that cannot read the table, confirms an
unlisted file with a non-blocking *shared* probe on the existing file (never created), which sees
an exclusive holder anywhere. The probe is a lock for an instant, and an episode's lease or a
run's owner is taken with a non-blocking exclusive lock that such an instant would refuse, so
it is never taken where the table is complete.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable
from pathlib import Path

PROC_LOCKS = Path("/proc/locks")
INIT_PID_NS = 0xEFFFFFFC
"""The inode of the initial pid namespace (the kernel's PROC_PID_INIT_INO): its /proc/locks lists every holder."""


def parse_proc_locks(text: str) -> set[tuple[int, int, int]]:
    """(major, minor, inode) of every file with a FLOCK lock in ``/proc/locks`` text (pure).

    A line reads ``1: FLOCK  ADVISORY  WRITE 4561 fe:00:2146644 0 EOF``; lines of blocked
    waiters (``1: -> FLOCK ...``) name files someone else holds and are skipped."""
    out: set[tuple[int, int, int]] = set()
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 6 or fields[1] != "FLOCK":
            continue
        major, minor, inode = fields[5].split(":")
        out.add((int(major, 16), int(minor, 16), int(inode)))
    return out


def _key(st: os.stat_result) -> tuple[int, int, int]:
    return os.major(st.st_dev), os.minor(st.st_dev), st.st_ino


def held(locks: Iterable[Path]) -> set[Path]:
    """The lock files among ``locks`` that some process holds now (missing files: nobody)."""
    existing = {}
    for p in locks:
        try:
            existing[p] = os.stat(p)
        except FileNotFoundError:
            continue
    try:
        table = parse_proc_locks(PROC_LOCKS.read_text())
    except OSError:
        table = None
    if table is not None and _sees_every_holder():
        return {p for p, st in existing.items() if _key(st) in table}
    return {p for p, st in existing.items() if (table is not None and _key(st) in table) or _probe(p)}


def listed(locks: Iterable[Path]) -> set[Path] | None:
    """The lock files among ``locks`` that some process holds, from the kernel's table alone (no
    probe, not even a shared one), or None when this reader cannot see every holder (a container's
    pid namespace, or no table): for a reader polled over and over while a run starts and resumes
    (``impasse status``), where even an instant's lock could refuse the run's owner."""
    try:
        table = parse_proc_locks(PROC_LOCKS.read_text())
    except OSError:
        return None
    if not _sees_every_holder():
        return None
    out = set()
    for p in locks:
        try:
            if _key(os.stat(p)) in table:
                out.add(p)
        except FileNotFoundError:
            continue
    return out


def _sees_every_holder() -> bool:
    try:
        return os.stat("/proc/self/ns/pid").st_ino == INIT_PID_NS
    except OSError:
        return False


def _probe(lock: Path) -> bool:
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
