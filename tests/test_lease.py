"""Episode ownership by lock: a sweeper removes exactly the episodes whose owner is gone, never a
live one, whatever pids it can or cannot see."""

import os
import signal
import subprocess
import sys
import textwrap

from impasse.sandbox import lease as leases


def removed_by_sweep(root):
    gone = []
    leases.sweep(root, lambda d: (gone.append(d.name), d.rmdir() if d.exists() else None))
    return gone


def test_live_owner_is_never_swept_and_a_released_name_leaves_nothing(tmp_path):
    lease = leases.Lease.acquire_new(tmp_path)
    assert not lease.dir.exists()  # owned before its directory exists: the window a pid check left open
    assert removed_by_sweep(tmp_path) == []
    lease.dir.mkdir()
    assert removed_by_sweep(tmp_path) == [] and lease.dir.is_dir()
    lease.dir.rmdir()
    lease.release()
    assert list(tmp_path.iterdir()) == []


def test_owner_killed_mid_episode_is_swept(tmp_path):
    code = textwrap.dedent(f"""
        import os, sys, time
        from pathlib import Path
        from impasse.sandbox.lease import Lease
        lease = Lease.acquire_new(Path({str(tmp_path)!r}))
        lease.dir.mkdir()
        print(lease.name, flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    name = proc.stdout.readline().strip()
    assert removed_by_sweep(tmp_path) == []  # alive: its lock is held
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert removed_by_sweep(tmp_path) == [name]
    assert list(tmp_path.iterdir()) == []


def test_lock_unlinked_before_the_owner_locked_it_is_detected(tmp_path):
    """A sweeper that unlinks a lock file between the owner's open and flock must not leave the
    owner believing it holds a name another process can claim."""
    path = tmp_path / "ep-x.lock"
    fd = os.open(path, os.O_CREAT | os.O_RDWR)
    path.unlink()
    assert not leases._lock_if_current(path, fd)
    os.close(fd)


def test_directory_without_a_lock_file_is_dead(tmp_path):
    (tmp_path / "ep-legacy").mkdir()
    assert removed_by_sweep(tmp_path) == ["ep-legacy"]
