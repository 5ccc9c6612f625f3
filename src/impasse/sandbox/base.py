"""The sandbox protocol: what the agent loop, the grader and the conditions may ask of a sandbox.

Lifecycle (as in inspect_ai): a backend ``create``s an episode from image layers and faults;
the episode answers ``exec`` / ``read_file`` / ``write_file`` as the agent user; ``diff`` gives
the agent's patch from the host side; ``restore`` clears the faults and keeps the agent's
changes; ``close`` removes every trace. Episodes are context managers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from types import TracebackType


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


class FileAccessError(OSError):
    """``read_file``/``write_file`` failed inside the sandbox; ``str()`` is the real error text."""


class SandboxError(RuntimeError):
    """A sandbox operation failed on the host side (not a failure of the agent's command)."""


class WorkspaceLost(SandboxError):
    """The episode's filesystem, cgroup or directory vanished or changed under it. A harness
    failure, never the agent's: the episode ends as a harness error and is never graded."""


@runtime_checkable
class Sandbox(Protocol):
    root: Path

    def exec(self, cmd: str, timeout: float = 60.0, stdin: bytes | None = None,
             user: str = "agent") -> ExecResult: ...

    def read_file(self, path: str, as_agent: bool = True) -> str:
        """As the agent (permissions and faults apply), or with ``as_agent=False`` the harness's
        own view of the merged workspace (no permissions, no fault hooks, no agent process)."""
        ...

    def write_file(self, path: str, content: str) -> None: ...

    def diff(self) -> str: ...

    def restore(self) -> None: ...

    def close(self) -> None: ...

    def __enter__(self) -> Sandbox: ...

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None: ...


class Fault(Protocol):
    """What a condition plugs into an episode. Every hook is optional in practice (the
    ``conditions`` package gives a base class with no-op defaults)."""

    def inject(self, sb: Sandbox) -> None: ...

    def before_exec(self, sb: Sandbox) -> None: ...

    def after_exec(self, sb: Sandbox, result: ExecResult) -> None: ...

    def restore(self, sb: Sandbox) -> None: ...

    def close(self, sb: Sandbox) -> None: ...
