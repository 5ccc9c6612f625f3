"""Thin wrappers over the Linux primitives the local backend needs.

Each function does one system-level thing and raises ``SandboxError`` with the errno text when it
fails, so callers never see a bare ctypes return code.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import signal
import time
from pathlib import Path

from impasse.sandbox.base import SandboxError

__all__ = ["SandboxError"]

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]

MS_RDONLY = 1
MNT_DETACH = 2
PR_SET_CHILD_SUBREAPER = 36


def require_root() -> None:
    if os.geteuid() != 0:
        raise SandboxError(
            "the local sandbox needs root (it mounts overlayfs/tmpfs and switches to the agent user); "
            "run impasse as root, e.g. `sudo -E .venv/bin/impasse ...`, or on a machine where you are root"
        )


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise SandboxError(f"{what}: {os.strerror(err)} (errno {errno.errorcode.get(err, err)})")


def mount(source: str, target: Path, fstype: str, data: str = "", flags: int = 0) -> None:
    rc = _libc.mount(source.encode(), str(target).encode(), fstype.encode(), flags, data.encode() or None)
    _check(rc, f"mount {fstype} on {target}")


def umount(target: Path) -> None:
    rc = _libc.umount2(str(target).encode(), MNT_DETACH)
    if rc != 0 and ctypes.get_errno() not in (errno.EINVAL, errno.ENOENT):
        _check(rc, f"umount {target}")


def mount_overlay(lowers: list[Path], upper: Path, work: Path, target: Path) -> None:
    lower = ":".join(str(p) for p in lowers)
    mount("overlay", target, "overlay", f"lowerdir={lower},upperdir={upper},workdir={work}")


def mounts_under(path: Path) -> list[Path]:
    """Mount points at or below ``path`` in this process's mount namespace, deepest first."""
    prefix = str(path).rstrip("/")
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].encode().decode("unicode_escape")  # mountinfo escapes spaces as \040
        if point == prefix or point.startswith(prefix + "/"):
            found.append(Path(point))
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def copy_tree(src: Path, dest: Path) -> None:
    """Copy a directory tree exactly: owners, modes, times, device nodes (overlay whiteouts) and
    extended attributes (overlay's ``trusted.overlay.*``), as only root's ``cp -a`` does."""
    import subprocess

    proc = subprocess.run(["cp", "-a", "--", str(src), str(dest)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SandboxError(f"copying {src} to {dest}: {proc.stderr.strip()}")


def remove_tree(path: Path) -> None:
    """Unmount whatever is mounted at or below ``path``, then delete it. Refuses to delete if a
    mount survives: ``rmtree`` would otherwise walk into a live filesystem (an episode's overlay
    or its upper dir) and delete files under whoever is using it."""
    for point in mounts_under(path):
        umount(point)
    left = mounts_under(path)
    if left:
        raise SandboxError(f"refusing to delete {path}: {left[0]} is still mounted")
    shutil.rmtree(path, ignore_errors=True)


def become_subreaper() -> None:
    """Orphans of sandboxed commands (bwrap's in-namespace init) must be reaped by us, not by a
    host init that may reap late and leave zombies counted in the episode's pids limit."""
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def reap_orphans(keep: set[int] = frozenset()) -> None:
    """Reap exited children we did not start through ``subprocess`` (those are in ``keep``)."""
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None or info.si_pid in keep:
            return
        try:
            os.waitpid(info.si_pid, 0)
        except ChildProcessError:
            return


# --------------------------------------------------------------------------- cgroups


class Cgroup:
    """One episode's pids + memory (+ freezer) control group, v2 if delegated else v1.

    If neither is usable (rare), ``available`` is False and the backend falls back to rlimits.
    """

    ROOT = Path("/sys/fs/cgroup")

    def __init__(self, name: str, pids_max: int, memory_max: int, *, create: bool = True) -> None:
        self.name = name
        self.version = _cgroup_version()
        self.paths: dict[str, Path] = {}
        if self.version == 2:
            candidates = {ctrl: self.ROOT / "impasse" / name for ctrl in ("pids", "memory", "freezer")}
        elif self.version == 1:
            candidates = {ctrl: self.ROOT / ctrl / "impasse" / name for ctrl in ("pids", "memory", "freezer")
                          if (self.ROOT / ctrl).is_dir()}
        else:
            candidates = {}
        for ctrl, path in candidates.items():
            if create:
                path.mkdir(parents=True, exist_ok=True)
            if path.is_dir():
                self.paths[ctrl] = path
        if create:
            self.set_pids_max(pids_max)
            self.set_memory_max(memory_max)

    @classmethod
    def existing(cls, name: str) -> Cgroup:
        """Attach to a group left by an earlier process (to clean it up)."""
        return cls(name, 0, 0, create=False)

    @classmethod
    def controllers(cls) -> set[str]:
        """Controllers an episode's group gets on this machine (empty: rlimits only)."""
        version = _cgroup_version()
        if version == 2:
            return {"pids", "memory", "freezer"}
        if version == 1:
            return {c for c in ("pids", "memory", "freezer") if (cls.ROOT / c).is_dir()}
        return set()

    @property
    def available(self) -> bool:
        return bool(self.paths)

    def procs_files(self) -> list[Path]:
        return sorted({p / "cgroup.procs" for p in self.paths.values()})

    def _write(self, ctrl: str, v1: str, v2: str, value: str) -> None:
        if ctrl in self.paths:
            (self.paths[ctrl] / (v2 if self.version == 2 else v1)).write_text(value)

    def set_pids_max(self, n: int | None) -> None:
        self._write("pids", "pids.max", "pids.max", "max" if n is None else str(n))

    def set_memory_max(self, n: int | None) -> None:
        if self.version == 1 and "memory" in self.paths:
            # v1 refuses a limit below current usage only for swap; plain limit is fine.
            value = "-1" if n is None else str(n)
            (self.paths["memory"] / "memory.limit_in_bytes").write_text(value)
        else:
            self._write("memory", "", "memory.max", "max" if n is None else str(n))

    def pids(self) -> list[int]:
        ctrl = "pids" if "pids" in self.paths else next(iter(self.paths), None)
        if ctrl is None:
            return []
        text = (self.paths[ctrl] / "cgroup.procs").read_text()
        return [int(x) for x in text.split()]

    def _freeze(self, frozen: bool) -> None:
        if "freezer" not in self.paths:
            return
        if self.version == 2:
            (self.paths["freezer"] / "cgroup.freeze").write_text("1" if frozen else "0")
        else:
            (self.paths["freezer"] / "freezer.state").write_text("FROZEN" if frozen else "THAWED")

    def kill_all(self, keep: set[int] = frozenset(), timeout: float = 5.0) -> int:
        """SIGKILL every process in the group (frozen first so a fork bomb cannot outrun us)
        and wait until the group is empty. Returns how many processes were killed."""
        killed = 0
        deadline = time.monotonic() + timeout
        while True:
            pids = self.pids()
            if not pids:
                return killed
            if self.version == 2 and (self.paths["pids"] / "cgroup.kill").exists():
                (self.paths["pids"] / "cgroup.kill").write_text("1")
                killed += len(pids)
            else:
                self._freeze(True)
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                        killed += 1
                    except ProcessLookupError:
                        pass
                self._freeze(False)
            reap_orphans(keep)
            if time.monotonic() > deadline:
                raise SandboxError(f"cgroup {self.name}: processes {self.pids()} survived SIGKILL")
            time.sleep(0.002)

    def destroy(self, keep: set[int] = frozenset()) -> None:
        self.kill_all(keep)
        for path in set(self.paths.values()):
            for _ in range(100):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # still busy for a moment after the last exit
                    reap_orphans(keep)
                    time.sleep(0.005)


def _cgroup_version() -> int:
    root = Cgroup.ROOT
    controllers = root / "cgroup.controllers"
    if controllers.exists():
        have = set(controllers.read_text().split())
        if {"pids", "memory"} <= have:
            sub = root / "impasse"
            sub.mkdir(exist_ok=True)
            try:
                (root / "cgroup.subtree_control").write_text("+pids +memory")
                (sub / "cgroup.subtree_control").write_text("+pids +memory")
                return 2
            except OSError:
                pass
    if (root / "pids" / "cgroup.procs").exists() and (root / "memory" / "cgroup.procs").exists():
        return 1
    return 0


# --------------------------------------------------------------------------- seccomp


def seccomp_filter_file(path: Path) -> Path:
    """Write (once per version of the deny list) the BPF program of ``seccomp_denies.yaml``: the
    calls Docker's default profile refuses (user namespaces, mounts, io_uring, keyctl, bpf, ...).
    Without it, ``unshare -r`` hands the agent a root shell on this kind of kernel. The file name
    carries the list's digest, so an edited list never reuses a stale program."""
    from impasse.sandbox import seccomp

    versioned = path.with_name(f"{path.stem}-{seccomp.digest()}{path.suffix}")
    return versioned if versioned.exists() else seccomp.write_bpf(versioned)
