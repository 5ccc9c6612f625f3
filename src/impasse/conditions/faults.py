"""Fault implementations: the small amount of code behind each card's ``fault.kind``.

Every fault is real at the OS level: ownership and modes changed in the episode's overlay, a
read-only bind mount, a filled tmpfs, files removed from site-packages, a masked shell, cgroup
limits, a file held open for writing. ``restore`` undoes exactly what ``inject`` did and never
touches the agent's own changes.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path

from impasse.sandbox.base import ExecResult
from impasse.sandbox.rootfs import AGENT_GID, AGENT_UID, REPO, VENV
from impasse.tasks.image import Image
from impasse.tasks.schema import TaskInstance


class FaultBase:
    """No-op hooks; subclasses override what they need."""

    def inject(self, sb) -> None: ...

    def before_exec(self, sb) -> None: ...

    def after_exec(self, sb, result: ExecResult) -> None: ...

    def restore(self, sb) -> None: ...

    def close(self, sb) -> None: ...


def _walk(path: Path):
    yield path
    if path.is_dir() and not path.is_symlink():
        for dirpath, dirnames, filenames in os.walk(path):
            for name in dirnames + filenames:
                yield Path(dirpath) / name


class LockPaths(FaultBase):
    """chown to root and tighten modes: read_only (a-w), unreadable (files 000, dirs 755 root),
    private (dir 0700 root). Original owner/mode of every touched path is recorded for restore."""

    def __init__(self, paths: list[str], mode: str, parents: list[str] = ()) -> None:
        self.paths, self.mode, self.parents = paths, mode, list(parents)
        self.saved: list[tuple[Path, int, int, int]] = []

    def _set(self, p: Path, mode: int) -> None:
        st = p.lstat()
        if stat.S_ISLNK(st.st_mode):
            return
        self.saved.append((p, st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)))
        os.chown(p, 0, 0)
        os.chmod(p, mode)

    def inject(self, sb) -> None:
        for rel in self.parents:  # root-owned parent: the agent cannot delete and recreate the file
            p = sb.host_path(rel)
            self._set(p, stat.S_IMODE(p.stat().st_mode) & ~0o022 | 0o755)
        for rel in self.paths:
            top = sb.host_path(rel)
            if self.mode == "private":
                self._set(top, 0o700)
                continue
            for p in list(_walk(top)):
                st = p.lstat()
                if stat.S_ISLNK(st.st_mode):
                    continue
                is_dir = stat.S_ISDIR(st.st_mode)
                if self.mode == "read_only":
                    self._set(p, stat.S_IMODE(st.st_mode) & ~0o222)
                else:  # unreadable
                    self._set(p, 0o755 if is_dir else 0o000)

    def restore(self, sb) -> None:
        for p, uid, gid, mode in reversed(self.saved):
            if p.exists():
                os.chown(p, uid, gid)
                os.chmod(p, mode)
        self.saved = []


class ReadOnlyWorkspace(FaultBase):
    def inject(self, sb) -> None:
        sb.options.ro_workspace = True

    def restore(self, sb) -> None:
        sb.options.ro_workspace = False


class FillDisk(FaultBase):
    """A filler file beside the overlay's upper dir (invisible inside) takes all but a few KiB."""

    def __init__(self, leave_bytes: int = 8192) -> None:
        self.leave = leave_bytes

    def inject(self, sb) -> None:
        filler = sb.disk / "filler"
        free = os.statvfs(sb.disk)
        size = free.f_bavail * free.f_frsize - self.leave
        with open(filler, "wb") as fh:
            os.posix_fallocate(fh.fileno(), 0, max(size, 0))

    def restore(self, sb) -> None:
        (sb.disk / "filler").unlink(missing_ok=True)


class HideDependency(FaultBase):
    """Remove a runtime dependency's files from site-packages (whiteouts in the upper layer)."""

    def __init__(self, image: Image, dist: str, layer: Path | None = None) -> None:
        self.image, self.dist = image, dist
        self.layer = layer or image.layer  # where the dependency's files live (the image's layer)
        self.removed: list[str] = []

    def inject(self, sb) -> None:
        site = sb.host_path(self.image.site_packages)
        for name in self.image.runtime_deps[self.dist]:
            p = site / name
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
            self.removed.append(name)

    def restore(self, sb) -> None:
        site_img = self.layer / self.image.site_packages.removeprefix("/")
        site = sb.host_path(self.image.site_packages)
        for name in self.removed:
            src, dst = site_img / name, site / name
            if src.is_dir():
                shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)
            elif src.exists():
                shutil.copy2(src, dst)
            for p in _walk(dst):
                os.chown(p, AGENT_UID, AGENT_GID, follow_symlinks=False)
        self.removed = []


class MaskShell(FaultBase):
    """Bind /dev/null over bash: every call fails with 'failed to execute bash: Permission denied'."""

    def inject(self, sb) -> None:
        sb.options.masked_files = ["/usr/bin/bash"]

    def restore(self, sb) -> None:
        sb.options.masked_files = []


class MemoryLimit(FaultBase):
    def __init__(self, limit: int) -> None:
        self.limit = limit

    def inject(self, sb) -> None:
        if sb.cgroup is None or "memory" not in sb.cgroup.paths:
            raise RuntimeError("test_killed needs a memory cgroup (v1 or delegated v2) on this machine")
        sb.cgroup.set_memory_max(self.limit)

    def restore(self, sb) -> None:
        sb.cgroup.set_memory_max(sb.limits.memory_bytes)


class _Transient(FaultBase):
    """Active until ``failures`` calls have shown ``signal`` in their output, then clears."""

    signal: re.Pattern[str]

    def __init__(self, failures: int = 2) -> None:
        self.remaining = failures
        self.active = False

    def after_exec(self, sb, result: ExecResult) -> None:
        if self.active and self.signal.search(result.output):
            self.remaining -= 1
            if self.remaining <= 0:
                self.clear(sb)

    def clear(self, sb) -> None:
        self.active = False

    def restore(self, sb) -> None:
        if self.active:
            self.clear(sb)

    def close(self, sb) -> None:
        self.restore(sb)


class TextFileBusy(_Transient):
    """Hold the venv's interpreter open O_WRONLY (as a package manager mid-upgrade would)."""

    signal = re.compile(r"Text file busy")

    def inject(self, sb) -> None:
        bindir = sb.host_path(f"{VENV}/bin")
        self.fds = [os.open(p, os.O_WRONLY) for p in sorted(bindir.glob("python*"))
                    if p.is_file() and not p.is_symlink()]
        self.active = True

    def clear(self, sb) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []
        self.active = False


class PidsExhausted(_Transient):
    """pids.max = 1: the sandbox cannot even create its namespace (EAGAIN), then it clears."""

    signal = re.compile(r"Resource temporarily unavailable")

    def inject(self, sb) -> None:
        if sb.cgroup is None or "pids" not in sb.cgroup.paths:
            raise RuntimeError("resource_busy needs a pids cgroup on this machine")
        sb.cgroup.set_pids_max(1)
        self.active = True

    def clear(self, sb) -> None:
        sb.cgroup.set_pids_max(sb.limits.pids_max)
        self.active = False


def pick_dependency(inst: TaskInstance, image: Image) -> str | None:
    """The runtime dependency the missing_dependency condition removes: the first one whose
    absence really breaks ``import <package>`` (measured when the image was built)."""
    if image.import_breaking_deps is None:
        raise ValueError(f"image {image.key} predates the dependency probe; run `impasse tasks build "
                         f"{image.package}=={image.version}` once to update it")
    return image.import_breaking_deps[0] if image.import_breaking_deps else None


def make_faults(kind_spec: dict, inst: TaskInstance, image: Image) -> list[FaultBase]:
    kind = kind_spec["kind"]
    repo = REPO.lstrip("/")
    if kind in ("none", "already_fixed"):
        return []
    if kind == "lock_paths":
        target, mode = kind_spec["target"], kind_spec["mode"]
        if target == "source":
            return [LockPaths([f"{repo}/{d}" for d in inst.source_dirs], mode)]
        if target == "target_file":
            parent = str(Path(inst.target_file).parent)
            return [LockPaths([f"{repo}/{inst.target_file}"], mode,
                              parents=[f"{repo}/{parent}"] if parent != "." else [])]
        if target == "tests":
            dirs = sorted({str(Path(f).parent) for f in inst.test_files} - {"."})
            tops = [d for d in dirs if not any(d.startswith(o + "/") for o in dirs if o != d)]
            loose = [f for f in inst.test_files if str(Path(f).parent) == "."]
            return [LockPaths([f"{repo}/{p}" for p in [*tops, *loose]], mode)]
        if target == "site_packages":
            return [LockPaths([image.site_packages], mode)]
    if kind == "read_only_workspace":
        return [ReadOnlyWorkspace()]
    if kind == "fill_disk":
        return [FillDisk(kind_spec.get("leave_bytes", 8192))]
    if kind == "hide_dependency":
        dist = pick_dependency(inst, image)
        if dist is None:
            raise ValueError(f"{inst.instance_id}: missing_dependency needs a package with a third-party runtime "
                             "dependency imported by its source")
        return [HideDependency(image, dist)]
    if kind == "mask_shell":
        return [MaskShell()]
    if kind == "memory_limit":
        return [MemoryLimit(int(kind_spec["bytes"]))]
    if kind == "text_file_busy":
        return [TextFileBusy(kind_spec.get("failures", 2))]
    if kind == "pids_exhausted":
        return [PidsExhausted(kind_spec.get("failures", 2))]
    raise ValueError(f"unknown fault kind {kind!r} in a blocker card")
