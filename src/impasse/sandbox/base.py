"""The sandbox and backend protocols: what the episode, the grader and the task builder may ask.

Lifecycle (as in inspect_ai's sandbox providers): a :class:`Backend` ``create``s an episode
from image layers and fault specs; the :class:`Sandbox` answers ``exec`` / ``read_file`` /
``write_file`` as the agent user; ``diff`` gives the agent's patch from the harness side;
``restore`` clears the faults and keeps the agent's changes; ``close`` removes every trace.
Sandboxes are context managers. A new backend is one module registered in
:mod:`impasse.sandbox.registry`; it realises every fault kind it supports with its own means
and must pass the backend conformance suite (``tests/test_backend_conformance.py``).
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Self, runtime_checkable

if TYPE_CHECKING:
    from types import TracebackType

    from impasse.conditions.faults import FaultSpec, TaskFacts

MiB = 1024 * 1024


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str
    truncated: bool = False
    timed_out: bool = False
    duration_s: float = 0.0

    @property
    def output(self) -> str:
        """stdout and stderr as an agent's terminal would show them (stderr after stdout)."""
        if self.stdout and self.stderr:
            sep = "" if self.stdout.endswith("\n") else "\n"
            return self.stdout + sep + self.stderr
        return self.stdout or self.stderr


@dataclass
class Limits:
    """Per-episode resource limits. Defaults suit real test suites on a 2-core machine."""

    disk_bytes: int = 512 * MiB
    """Size of the episode's writable space: everything the agent writes, copy-ups included."""
    pids_max: int = 256
    """Processes and threads alive at once in the episode (fork bombs stop here)."""
    memory_bytes: int = 2048 * MiB
    """Memory of the episode's processes (page cache included, as cgroups count it)."""
    file_size_bytes: int = 256 * MiB
    """Largest single file a command may write (RLIMIT_FSIZE)."""
    output_keep_bytes: int = 64 * 1024
    """Bytes of stdout and of stderr kept per command; the rest is counted as truncated."""
    output_kill_bytes: int = 8 * MiB
    """A command printing more than this is killed (``yes`` would otherwise run to the timeout)."""


class FileAccessError(OSError):
    """``read_file``/``write_file`` failed inside the sandbox; ``str()`` is the real error text."""


class SandboxError(RuntimeError):
    """A sandbox operation failed on the host side (not a failure of the agent's command)."""


class ForkUnsupported(SandboxError):
    """This backend cannot copy a live episode; ``str()`` says why."""


class WorkspaceLost(SandboxError):
    """The episode's filesystem, cgroup or directory vanished or changed under it. A harness
    failure, never the agent's: the episode ends as a harness error and is never graded."""


class ClosesOnExit:
    """``with sandbox:`` closes it, whatever the body raised (every backend's sandbox mixes this in)."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@runtime_checkable
class Sandbox(Protocol):
    id: str
    workdir: str
    """The repository's path as the agent sees it (relative tool paths resolve against it)."""

    def exec(self, cmd: str, timeout: float = 60.0, stdin: bytes | None = None, user: str = "agent", *,
             cwd: str | None = None, env: Mapping[str, str] | None = None,
             output_limit: int | None = None) -> ExecResult:
        """Run ``cmd`` with bash as ``user`` (default cwd: ``workdir``; ``env`` is added to the
        agent's environment); ``output_limit`` bytes of each stream are kept (harness use: a
        whole suite's report is larger than what an agent is shown). An episode's commands run
        one at a time, as an agent's do: each call ends by removing the agent's leftover
        (background) processes, which would include a concurrent call's."""
        ...

    def read_file(self, path: str, as_agent: bool = True) -> str:
        """As the agent (permissions and faults apply), or with ``as_agent=False`` the harness's
        own view of the workspace (no permissions, no fault hooks, no agent process)."""
        ...

    def write_file(self, path: str, content: str) -> None:
        """As the agent: permissions and faults apply."""
        ...

    def diff(self) -> str:
        """The agent's changes against the task's base commit (new files included)."""
        ...

    def restore(self) -> None:
        """Clear every fault (the condition's scripted restoration); the agent's edits stay."""
        ...

    def fork(self) -> Sandbox:
        """An independent copy of the episode as it is now (its files and its faults' state);
        raise :class:`ForkUnsupported` saying why if this backend cannot."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Sandbox: ...

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None: ...


@runtime_checkable
class Backend(Protocol):
    name: str
    forks: bool
    """Whether its sandboxes ``fork`` (drivers that branch episodes check this before starting)."""

    def create(self, layers: Sequence[Path], faults: Sequence[FaultSpec] = (), facts: TaskFacts | None = None,
               limits: Limits | None = None) -> Sandbox:
        """A fresh episode over ``layers`` (top first) with ``faults`` injected."""
        ...

    def run_build(self, workspace: Path, script: str, *, env: Mapping[str, str], pip_cache: Path,
                  timeout: float = 1800) -> subprocess.CompletedProcess[str]:
        """Run a task image's build ``script`` as root, *with* network, with ``workspace`` at
        /workspace (images are built at the paths where episodes will see them)."""
        ...

    def unsupported(self, fault: FaultSpec) -> str | None:
        """Why this backend cannot realise ``fault`` on this machine, or None if it can."""
        ...

    def sweep(self) -> int:
        """Remove episodes whose owner is provably gone; safe while other processes run episodes."""
        ...


TRANSFER_TRIES = 3
TRANSFER_RETRIES = {"read": 0, "write": 0}
"""Transfers this process had to repeat because what arrived differed from the file (the stress
tests print them; a transfer that keeps differing is a harness error, never an empty success)."""


def _in_view(sb: Sandbox, path: str) -> str:
    return path if path.startswith("/") else f"{sb.workdir}/{path}"


def _exact(sb: Sandbox, path: str) -> str | None:
    """The file's content by the harness's own means (no agent process, no exec stream); None when
    the harness cannot read it exactly (not a regular file)."""
    try:
        return sb.read_file(path, as_agent=False)
    except FileAccessError:
        return None


def read_as_agent(sb: Sandbox, path: str, max_bytes: int) -> str:
    """``read_file`` as the agent, on any backend: ``cat`` run as the agent user, so permissions
    and fault hooks apply; a file over ``max_bytes`` is refused rather than cut. What came back is
    checked against the file itself (length and content, read by the harness's own means); a
    difference is retried, then a harness error: an agent never gets a cut or empty file."""
    path = _in_view(sb, path)
    for _ in range(TRANSFER_TRIES):
        res = sb.exec(f"cat -- {shlex.quote(path)}", timeout=30, output_limit=max_bytes)
        if res.truncated:
            raise FileAccessError(f"{path} is larger than {max_bytes} bytes")
        if res.exit_code != 0:
            raise FileAccessError(res.stderr.strip() or f"cannot read {path} (exit {res.exit_code})")
        exact = _exact(sb, path)
        if exact is None or res.stdout == exact:
            return res.stdout
        TRANSFER_RETRIES["read"] += 1
    raise SandboxError(f"reading {path}: the agent's read returned {len(res.stdout)} characters where the file "
                       f"holds {len(exact)}, {TRANSFER_TRIES} times; the backend's transfers cannot be trusted")


def verified_write(sb: Sandbox, path: str, content: str, write_once) -> None:
    """Write as the agent (``write_once(path, content)`` raises the agent's own error), then read
    the file back by the harness's own means: a difference is written again, then a harness error."""
    path = _in_view(sb, path)
    for _ in range(TRANSFER_TRIES):
        write_once(path, content)
        exact = _exact(sb, path)
        if exact is None or exact == content:
            return
        TRANSFER_RETRIES["write"] += 1
    raise SandboxError(f"writing {path}: the file holds {len(exact)} characters after a write of {len(content)} "
                       f"reported success, {TRANSFER_TRIES} times; the backend's transfers cannot be trusted")


def write_as_agent(sb: Sandbox, path: str, content: str) -> None:
    """``write_file`` as the agent, on any backend (the error the agent's own write would meet)."""

    def once(p: str, text: str) -> None:
        res = sb.exec(f"cat > {shlex.quote(p)}", timeout=30, stdin=text.encode())
        if res.exit_code != 0:
            raise FileAccessError(res.stderr.strip() or f"cannot write {p} (exit {res.exit_code})")

    verified_write(sb, path, content, once)
