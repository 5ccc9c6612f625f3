"""Docker realisations of the blocker cards' faults, one small class per fault ``kind`` in a
registry. Each works on a :class:`DockerSandbox` through root (privileged) execs of the
in-container tool ``faultctl.py`` or plain mount/cgroup commands, and ``restore`` undoes exactly
what ``inject`` did. They take the card's fault dict plus :class:`TaskFacts` (where the task's
source, tests, site-packages and dependency live), never local-backend internals.

A fork (``DockerSandbox.fork``) copies the parent's files and faultctl's recorded state; each
fault then says, in ``fork``, what else it carries: the kernel's side of a fault (a mount, a
cgroup limit, a process holding a file, the exec chain) is not in any file, so those faults apply
themselves to the fork as they stand in the parent.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

from impasse.conditions import faults as specs
from impasse.layout import AGENT_HOME, VENV, WORKSPACE
from impasse.sandbox.base import ExecResult, SandboxError


class DockerFault:
    """No-op hooks (same hook names as the local backend's faults)."""

    def inject(self, sb) -> None: ...

    def before_exec(self, sb) -> None: ...

    def after_exec(self, sb, result: ExecResult) -> None: ...

    def restore(self, sb) -> None: ...

    def close(self, sb) -> None: ...

    def fork(self, parent, child) -> DockerFault:
        """This fault, as it stands in ``parent``, for ``child`` (which holds a copy of the
        parent's files and of faultctl's state): by default a plain copy, its state being in
        those files (owners and modes, removed files, what to restore)."""
        return copy.deepcopy(self)


class _KernelSide(DockerFault):
    """A fault whose effect is the kernel's (a mount), not the files': a fork applies it again."""

    def fork(self, parent, child) -> DockerFault:
        twin = copy.copy(self)
        twin.inject(child)
        return twin


class LockPaths(DockerFault):
    """chown to root and tighten modes (read_only | unreadable | private), recorded for restore."""

    def __init__(self, paths: list[str], mode: str, parents: list[str] = ()) -> None:
        self.paths, self.mode, self.parents = paths, mode, list(parents)

    def inject(self, sb) -> None:
        sb.faultctl("lock", "lock", self.mode, *[a for p in self.parents for a in ("--parent", p)], *self.paths)

    def restore(self, sb) -> None:
        sb.faultctl("unlock", "lock")


class ReadOnlyWorkspace(_KernelSide):
    """Remount the workspace tmpfs read-only: EROFS, and ``mount`` shows ``/workspace … ro``."""

    def inject(self, sb) -> None:
        sb.root_exec(f"mount -o remount,ro {WORKSPACE}")

    def restore(self, sb) -> None:
        sb.root_exec(f"mount -o remount,rw {WORKSPACE}")


class FillDisk(_KernelSide):
    """The workspace gets an overlay with a full upper layer (changing a file needs a copy-up:
    ENOSPC, as in the local backend's episode overlay); every other tmpfs the agent can write to
    is shrunk to what it holds now. ``df`` shows 100% everywhere. (Filling them with a file would
    charge the container's memory limit with the filler's pages; the local backend's filler sits
    outside the episode.) A fork fills its own copy the same way (what was copied in counts)."""

    MOUNTS = ("/tmp", "/var/tmp", AGENT_HOME)

    def inject(self, sb) -> None:
        sb.faultctl("freeze", "fill", WORKSPACE)  # the workspace: a full overlay, as on the local backend
        sb.faultctl("fill", "fill", *self.MOUNTS)

    def restore(self, sb) -> None:
        sb.faultctl("unfill", "fill")
        sb.faultctl("unfreeze", "fill")


class HideDependency(DockerFault):
    def __init__(self, site_packages: str, entries: list[str]) -> None:
        self.site, self.entries = site_packages, entries

    def inject(self, sb) -> None:
        sb.faultctl("hide", "dep", self.site, *self.entries)

    def restore(self, sb) -> None:
        sb.faultctl("unhide", "dep")


class MaskShell(_KernelSide):
    """/dev/null bound over bash: ``setpriv: failed to execute bash: Permission denied``."""

    def inject(self, sb) -> None:
        sb.root_exec("mount --bind /dev/null /usr/bin/bash")

    def restore(self, sb) -> None:
        sb.root_exec("umount /usr/bin/bash")


class MemoryLimit(DockerFault):
    """Lower the container's memory limit to what it holds now (tmpfs pages and resident
    memory, which cannot be reclaimed without swap) plus ``limit`` bytes: a test run no longer
    fits and the kernel's OOM killer ends it (``Killed``, exit 137)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def inject(self, sb) -> None:
        stat = _memory_stat(sb)
        held = sum(int(stat.get(k, 0)) for k in ("total_rss", "total_shmem")) or \
            sum(int(stat.get(k, 0)) for k in ("anon", "shmem"))
        name = "memory.limit_in_bytes" if "total_rss" in stat else "memory.max"
        sb.faultctl("cgroup", "memory", name, str(held + self.limit))

    def restore(self, sb) -> None:
        sb.faultctl("cgroup", "memory", _memory_file(sb), str(sb.limits.memory_bytes))

    def fork(self, parent, child) -> MemoryLimit:
        """The parent's lowered limit, as it stands, for the fork (which holds the same tmpfs pages)."""
        name = _memory_file(parent)
        limit = parent.faultctl("cgroup", "memory", name).strip()
        if not (limit.isdigit() or limit == "max"):
            raise SandboxError(f"episode {parent.id}: its {name} reads {limit!r}, not a limit; cannot fork it")
        child.faultctl("cgroup", "memory", name, limit)
        return copy.copy(self)


def _memory_stat(sb) -> dict[str, str]:
    return dict(ln.split() for ln in sb.faultctl("cgroup", "memory", "memory.stat").splitlines() if " " in ln)


def _memory_file(sb) -> str:
    return "memory.limit_in_bytes" if "total_rss" in _memory_stat(sb) else "memory.max"


class _Transient(DockerFault):
    """Active until ``failures`` calls have shown ``signal`` in their output, then clears."""

    signal: re.Pattern[str]

    def __init__(self, failures: int = 2) -> None:
        self.remaining, self.active = failures, False

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

    def fork(self, parent, child) -> _Transient:
        twin = copy.copy(self)  # the same failures remaining
        if self.active:
            twin.inject(child)
        return twin


class TextFileBusy(_Transient):
    """A root process holds the venv's interpreter open for writing (ETXTBSY on exec)."""

    signal = re.compile(r"Text file busy")

    def inject(self, sb) -> None:
        files = sb.root_exec(f"find {VENV}/bin -maxdepth 1 -name 'python*' -type f")[1].split()
        sb.faultctl("busy", "busy", *files)
        self.active = True

    def clear(self, sb) -> None:
        sb.faultctl("release", "busy")
        self.active = False


class PidsExhausted(_Transient):
    """The agent's process limit is 1 for its next calls, so the first fork of each call fails
    with EAGAIN. Through RLIMIT_NPROC in the exec chain: lowering the container's pids.max this
    far would stop the engine's own exec helper (a multi-threaded runc) before the agent's
    command, and a Docker-API engine cannot change pids.max of a running container portably."""

    signal = re.compile(r"Resource temporarily unavailable")

    def inject(self, sb) -> None:
        sb.exec_prefix = ["prlimit", "--nproc=1:1"]
        self.active = True

    def clear(self, sb) -> None:
        sb.exec_prefix = []
        self.active = False


REALISE: dict[type[specs.FaultSpec], Callable[[Any, specs.TaskFacts], list[DockerFault]]] = {
    specs.LockPaths: lambda s, f: [LockPaths(*s.paths(f)[:1], s.mode, parents=s.paths(f)[1])],
    specs.ReadOnlyWorkspace: lambda s, f: [ReadOnlyWorkspace()],
    specs.FillDisk: lambda s, f: [FillDisk()],
    specs.HideDependency: lambda s, f: [HideDependency(f.site_packages, s.choose(f)[1])],
    specs.MaskShell: lambda s, f: [MaskShell()],
    specs.MemoryLimit: lambda s, f: [MemoryLimit(s.bytes)],
    specs.TextFileBusy: lambda s, f: [TextFileBusy(s.failures)],
    specs.PidsExhausted: lambda s, f: [PidsExhausted(s.failures)],
}
"""How this backend realises each fault spec (a new kind: one class above and one entry here)."""

NEEDS_CGROUP_MOUNT = (specs.MemoryLimit,)


def unsupported(spec: specs.FaultSpec, backend) -> str | None:
    """None if ``backend``'s engine can realise ``spec``, else the reason it cannot (the
    condition is then skipped with that reason, never run without its fault)."""
    if not spec.runtime:
        return None
    if type(spec) not in REALISE:
        return f"the Docker backend has no realisation of fault kind {spec.kind!r}"
    if isinstance(spec, NEEDS_CGROUP_MOUNT) and backend.rootless:
        return (f"{spec.kind} lowers the container's memory limit from inside (a cgroup mount by a privileged "
                "exec); a rootless engine does not allow that")
    return None


def realise(faults, facts: specs.TaskFacts) -> list[DockerFault]:
    out: list[DockerFault] = []
    for spec in faults:
        if spec.runtime:
            out += REALISE[type(spec)](spec, facts)
    return out
