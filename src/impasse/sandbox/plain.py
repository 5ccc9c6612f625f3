"""The plain-directory backend: an episode is a copy of its layers in a temporary directory, and
commands run as the current user with bash, with no isolation at all.

For fast, unprivileged tests of the loop and the episode machinery, and for users who already run
inside a container they trust. It realises no faults (every condition but ``clean`` is reported
unsupported) and cannot separate the agent from the harness: ``read_file`` as the agent and as
the harness see the same thing. The repository lives at ``<episode>/workspace/repo`` and that
real path is the agent's ``workdir``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from impasse.conditions.faults import FaultSpec, TaskFacts
from impasse.layout import REPO
from impasse.sandbox.base import (
    ClosesOnExit,
    ExecResult,
    FileAccessError,
    ForkUnsupported,
    Limits,
    SandboxError,
)
from impasse.sandbox.gitdiff import pristine_git, repo_diff


def _copy_layers(layers: Sequence[Path], root: Path) -> None:
    """Lowest layer first, upper layers overwrite (overlay whiteouts are skipped)."""
    for layer in reversed(list(layers)):
        for src in layer.rglob("*"):
            rel = src.relative_to(layer)
            dst = root / rel
            if src.is_dir() and not src.is_symlink():
                dst.mkdir(parents=True, exist_ok=True)
            elif src.is_symlink() or src.is_file():
                dst.parent.mkdir(parents=True, exist_ok=True)
                if dst.is_symlink() or dst.exists():
                    dst.unlink()
                shutil.copy2(src, dst, follow_symlinks=False)


class PlainSandbox(ClosesOnExit):
    def __init__(self, layers: Sequence[Path], limits: Limits) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="impasse-plain-"))
        self.id = self.dir.name
        self.layers = list(layers)
        self.limits = limits
        self.workdir = str(self.dir / REPO.lstrip("/"))
        self._closed = False
        _copy_layers(layers, self.dir)
        Path(self.workdir).mkdir(parents=True, exist_ok=True)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            shutil.rmtree(self.dir, ignore_errors=True)

    def fork(self) -> PlainSandbox:
        raise ForkUnsupported("the plain backend cannot fork: its workdir is a real path of the host, so a copy "
                              "would live at another path than the one the episode's history names")

    def restore(self) -> None:
        """Nothing to clear: this backend injects no faults."""

    def _path(self, path: str) -> Path:
        return Path(path) if path.startswith("/") else Path(self.workdir) / path

    def exec(self, cmd: str, timeout: float = 60.0, stdin: bytes | None = None, user: str = "agent", *,
             cwd: str | None = None, env: Mapping[str, str] | None = None,
             output_limit: int | None = None) -> ExecResult:
        if self._closed:
            raise SandboxError(f"episode {self.id} is closed")
        keep = output_limit or self.limits.output_keep_bytes
        start = time.monotonic()
        full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.dir), "LANG": "C.UTF-8",
                    "PYTHONHASHSEED": "0", **(env or {})}
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(["bash", "-c", cmd], cwd=cwd or self.workdir, env=full_env, stdout=out,
                                    stderr=err, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                    start_new_session=True)
            timed_out = False
            try:
                proc.communicate(stdin, timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:  # nothing outlives the call that started it
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            streams = []
            truncated = False
            for f in (out, err):
                size = f.seek(0, os.SEEK_END)
                f.seek(0)
                streams.append(f.read(keep).decode(errors="replace"))
                truncated = truncated or size > keep
        code = 124 if timed_out else proc.returncode
        return ExecResult(code, streams[0], streams[1], truncated, timed_out, time.monotonic() - start)

    def read_file(self, path: str, as_agent: bool = True) -> str:
        try:
            return self._path(path).read_bytes().decode(errors="replace")
        except OSError as e:
            raise FileAccessError(f"{path}: {e.strerror}") from e

    def write_file(self, path: str, content: str) -> None:
        try:
            self._path(path).write_text(content)
        except OSError as e:
            raise FileAccessError(f"{path}: {e.strerror}") from e

    def diff(self) -> str:
        base = pristine_git(self.layers, REPO)
        return repo_diff(Path(self.workdir), base) if base else ""


class PlainBackend:
    name = "plain"
    forks = False  # a plain directory has no writable layer to copy apart from the original

    def create(self, layers: Sequence[Path], faults: Sequence[FaultSpec] = (), facts: TaskFacts | None = None,
               limits: Limits | None = None) -> PlainSandbox:
        for fault in faults:
            if reason := self.unsupported(fault):
                raise SandboxError(reason)
        return PlainSandbox(layers, limits or Limits())

    def unsupported(self, fault: FaultSpec) -> str | None:
        if not fault.runtime:
            return None
        return f"the plain backend realises no faults ({fault.kind!r}); use the local or docker backend"

    def sweep(self) -> int:
        return 0

    def run_build(self, workspace: Path, script: str, *, env: Mapping[str, str], pip_cache: Path,
                  timeout: float = 1800) -> subprocess.CompletedProcess[str]:
        raise SandboxError("the plain backend cannot build task images (they are built at /workspace); "
                           "build them with the local backend")
