"""How the local backend realises each fault spec, with its own internals only: ownership and
modes changed in the episode's overlay, a read-only bind, a filled tmpfs, files removed from
site-packages, a masked shell, cgroup limits, a file held open for writing. ``restore`` undoes
exactly what ``inject`` did and never touches the agent's own changes.

A new fault kind needs one class here, registered with :func:`realises`.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from impasse.conditions import faults as specs
from impasse.layout import AGENT_GID, AGENT_UID, VENV
from impasse.sandbox.base import ExecResult, SandboxError

if TYPE_CHECKING:
    from impasse.sandbox.local import LocalSandbox

_REALISATIONS: dict[type[specs.FaultSpec], type[LocalFault]] = {}


def realises(spec: type[specs.FaultSpec]):
    def register(cls: type[LocalFault]) -> type[LocalFault]:
        _REALISATIONS[spec] = cls
        return cls
    return register


def supported() -> set[type[specs.FaultSpec]]:
    return set(_REALISATIONS)


def realise(faults: list[specs.FaultSpec], facts: specs.TaskFacts) -> list[LocalFault]:
    out = []
    for spec in faults:
        if not spec.runtime:
            continue
        cls = _REALISATIONS.get(type(spec))
        if cls is None:
            raise SandboxError(f"the local backend cannot realise fault kind {spec.kind!r}")
        out.append(cls(spec, facts))
    return out


class LocalFault:
    """No-op hooks; subclasses override what they need."""

    def __init__(self, spec: specs.FaultSpec, facts: specs.TaskFacts) -> None:
        self.spec, self.facts = spec, facts

    def inject(self, sb: LocalSandbox) -> None: ...

    def before_exec(self, sb: LocalSandbox) -> None: ...

    def after_exec(self, sb: LocalSandbox, result: ExecResult) -> None: ...

    def restore(self, sb: LocalSandbox) -> None: ...

    def close(self, sb: LocalSandbox) -> None: ...

    def fork(self, parent: LocalSandbox, child: LocalSandbox) -> LocalFault:
        """This fault, as it stands in ``parent``, for ``child`` (a copy of its writable layer
        and exec options): faults whose state is only there are copied as they are; those that
        hold kernel-side state apply it to the child (see the overrides)."""
        return copy.deepcopy(self)


def _walk(path: Path) -> Iterator[Path]:
    yield path
    if path.is_dir() and not path.is_symlink():
        for dirpath, dirnames, filenames in os.walk(path):
            for name in dirnames + filenames:
                yield Path(dirpath) / name


@realises(specs.LockPaths)
class LockPaths(LocalFault):
    """chown to root and tighten modes; every touched path's owner and mode is kept for restore."""

    spec: specs.LockPaths

    def __init__(self, spec: specs.LockPaths, facts: specs.TaskFacts) -> None:
        super().__init__(spec, facts)
        self.saved: list[tuple[Path, int, int, int]] = []

    def _set(self, p: Path, mode: int) -> None:
        st = p.lstat()
        if stat.S_ISLNK(st.st_mode):
            return
        self.saved.append((p, st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)))
        os.chown(p, 0, 0)
        os.chmod(p, mode)

    def inject(self, sb: LocalSandbox) -> None:
        paths, parents = self.spec.paths(self.facts)
        for rel in parents:  # root-owned parent: the agent cannot delete and recreate the file
            p = sb.host_path(rel)
            self._set(p, stat.S_IMODE(p.stat().st_mode) & ~0o022 | 0o755)
        for rel in paths:
            top = sb.host_path(rel)
            if self.spec.mode == "private":
                self._set(top, 0o700)
                continue
            for p in list(_walk(top)):
                st = p.lstat()
                if stat.S_ISLNK(st.st_mode):
                    continue
                if self.spec.mode == "read_only":
                    self._set(p, stat.S_IMODE(st.st_mode) & ~0o222)
                else:  # unreadable
                    self._set(p, 0o755 if stat.S_ISDIR(st.st_mode) else 0o000)

    def restore(self, sb: LocalSandbox) -> None:
        for p, uid, gid, mode in reversed(self.saved):
            if p.exists():
                os.chown(p, uid, gid)
                os.chmod(p, mode)
        self.saved = []

    def fork(self, parent: LocalSandbox, child: LocalSandbox) -> LockPaths:
        twin = copy.copy(self)  # the owners and modes are in the copied layer; restore needs the child's paths
        twin.saved = [(child.root / p.relative_to(parent.root), uid, gid, mode) for p, uid, gid, mode in self.saved]
        return twin


@realises(specs.ReadOnlyWorkspace)
class ReadOnlyWorkspace(LocalFault):
    def inject(self, sb: LocalSandbox) -> None:
        sb.options.ro_workspace = True

    def restore(self, sb: LocalSandbox) -> None:
        sb.options.ro_workspace = False


@realises(specs.FillDisk)
class FillDisk(LocalFault):
    """A filler file beside the overlay's upper dir (invisible inside) takes all but a few KiB."""

    spec: specs.FillDisk

    def inject(self, sb: LocalSandbox) -> None:
        free = os.statvfs(sb.disk)
        with open(sb.disk / "filler", "wb") as fh:
            os.posix_fallocate(fh.fileno(), 0, max(free.f_bavail * free.f_frsize - self.spec.leave_bytes, 0))

    def restore(self, sb: LocalSandbox) -> None:
        (sb.disk / "filler").unlink(missing_ok=True)

    def fork(self, parent: LocalSandbox, child: LocalSandbox) -> FillDisk:
        twin = copy.copy(self)
        twin.inject(child)  # the child's own disk, filled the same way (what was copied in counts)
        return twin


@realises(specs.HideDependency)
class HideDependency(LocalFault):
    """Remove a runtime dependency's files from site-packages (whiteouts in the upper layer)."""

    spec: specs.HideDependency

    def __init__(self, spec: specs.HideDependency, facts: specs.TaskFacts) -> None:
        super().__init__(spec, facts)
        self.dist, self.names = spec.choose(facts)
        self.removed: list[str] = []

    def inject(self, sb: LocalSandbox) -> None:
        site = sb.host_path(self.facts.site_packages)
        for name in self.names:
            p = site / name
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
            self.removed.append(name)

    def restore(self, sb: LocalSandbox) -> None:
        site = sb.host_path(self.facts.site_packages)
        rel = self.facts.site_packages.lstrip("/")
        for name in self.removed:
            src = next((layer / rel / name for layer in sb.layers if (layer / rel / name).exists()), None)
            dst = site / name
            if src is None:
                continue
            if src.is_dir():
                shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)
            else:
                shutil.copy2(src, dst)
            for p in _walk(dst):
                os.chown(p, AGENT_UID, AGENT_GID, follow_symlinks=False)
        self.removed = []


@realises(specs.MaskShell)
class MaskShell(LocalFault):
    """Bind /dev/null over the shell: every call fails with 'failed to execute bash: Permission denied'."""

    spec: specs.MaskShell

    def inject(self, sb: LocalSandbox) -> None:
        sb.options.masked_files = list(self.spec.paths)

    def restore(self, sb: LocalSandbox) -> None:
        sb.options.masked_files = []


@realises(specs.MemoryLimit)
class MemoryLimit(LocalFault):
    spec: specs.MemoryLimit

    def inject(self, sb: LocalSandbox) -> None:
        if sb.cgroup is None or "memory" not in sb.cgroup.paths:
            raise SandboxError("test_killed needs a memory cgroup (v1 or delegated v2) on this machine")
        sb.cgroup.set_memory_max(self.spec.bytes)

    def restore(self, sb: LocalSandbox) -> None:
        sb.cgroup.set_memory_max(sb.limits.memory_bytes)

    def fork(self, parent: LocalSandbox, child: LocalSandbox) -> MemoryLimit:
        twin = copy.copy(self)
        twin.inject(child)
        return twin


class _Transient(LocalFault):
    """Active until ``failures`` calls have shown ``signal`` in their output, then clears."""

    signal: re.Pattern[str]

    def __init__(self, spec: specs.FaultSpec, facts: specs.TaskFacts) -> None:
        super().__init__(spec, facts)
        self.remaining = spec.failures
        self.active = False

    def after_exec(self, sb: LocalSandbox, result: ExecResult) -> None:
        if self.active and self.signal.search(result.output):
            self.remaining -= 1
            if self.remaining <= 0:
                self.clear(sb)

    def clear(self, sb: LocalSandbox) -> None:
        self.active = False

    def restore(self, sb: LocalSandbox) -> None:
        if self.active:
            self.clear(sb)

    def close(self, sb: LocalSandbox) -> None:
        self.restore(sb)

    def fork(self, parent: LocalSandbox, child: LocalSandbox) -> _Transient:
        twin = copy.copy(self)  # the same failures remaining
        if self.active:
            twin.inject(child)
        return twin


@realises(specs.TextFileBusy)
class TextFileBusy(_Transient):
    """Hold the venv's interpreter open O_WRONLY (as a package manager mid-upgrade would)."""

    signal = re.compile(r"Text file busy")

    def inject(self, sb: LocalSandbox) -> None:
        bindir = sb.host_path(f"{VENV}/bin")
        self.fds = [os.open(p, os.O_WRONLY) for p in sorted(bindir.glob("python*"))
                    if p.is_file() and not p.is_symlink()]
        self.active = True

    def clear(self, sb: LocalSandbox) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []
        self.active = False


@realises(specs.PidsExhausted)
class PidsExhausted(_Transient):
    """pids.max = 1: the sandbox cannot even create its namespace (EAGAIN), then it clears."""

    signal = re.compile(r"Resource temporarily unavailable")

    def inject(self, sb: LocalSandbox) -> None:
        if sb.cgroup is None or "pids" not in sb.cgroup.paths:
            raise SandboxError("resource_busy needs a pids cgroup on this machine")
        sb.cgroup.set_pids_max(1)
        self.active = True

    def clear(self, sb: LocalSandbox) -> None:
        sb.cgroup.set_pids_max(sb.limits.pids_max)
        self.active = False
