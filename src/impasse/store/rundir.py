"""A run directory's layout, in one place (used by ``run``, ``annotate`` and ``report``)::

    RUN/
      manifest.json           config, versions, the planned episodes
      instances.jsonl         the exact task instances the run planned (pinned image builds)
      episodes/<id>.jsonl     one trajectory per episode (+ <id>.annotation.json beside it)
      attempts/<id>.<n>.jsonl attempts that ended in a harness error, kept for inspection
      grades/<key>.json       graded patches, shared by identical patches
      usage.jsonl             one line per model call (tokens, cost): the run's spend ledger
      summary.json            one short row per episode, written when the run ends
      predictions/*.jsonl     SWE-bench predictions per agent, interface and condition
    runs/latest -> RUN        the newest run made in the default location
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MANIFEST_FORMAT = "impasse.run/1"


class RunDirError(ValueError):
    pass


class RunBusy(RunDirError):
    """Another live process owns the run directory (it is running or resuming it)."""


def new_default(runs_root: Path = Path("runs")) -> RunDir:
    """A fresh directory under ``runs/``: a timestamp plus a random suffix, created atomically,
    so two runs started in the same second never share one."""
    runs_root.mkdir(parents=True, exist_ok=True)
    while True:
        path = runs_root / f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return RunDir(path)


@dataclass(frozen=True)
class RunDir:
    path: Path

    @property
    def manifest(self) -> Path:
        return self.path / "manifest.json"

    @property
    def instances(self) -> Path:
        return self.path / "instances.jsonl"

    @property
    def episodes(self) -> Path:
        return self.path / "episodes"

    @property
    def attempts(self) -> Path:
        return self.path / "attempts"

    @property
    def grades(self) -> Path:
        return self.path / "grades"

    @property
    def usage(self) -> Path:
        return self.path / "usage.jsonl"

    @property
    def summary(self) -> Path:
        return self.path / "summary.json"

    @property
    def lock(self) -> Path:
        """The one-run-per-directory lock (:class:`RunLock`); its content names the owner."""
        return self.path / ".lock"

    @property
    def predictions(self) -> Path:
        return self.path / "predictions"

    def trajectory(self, episode_id: str) -> Path:
        return self.episodes / f"{episode_id}.jsonl"

    def trajectories(self) -> list[Path]:
        """Every trajectory of the run (a bare directory of ``*.jsonl`` files is accepted too)."""
        root = self.episodes if self.episodes.is_dir() else self.path
        return sorted(root.glob("*.jsonl"))

    @staticmethod
    def annotation(trajectory: Path) -> Path:
        return trajectory.with_suffix(".annotation.json")

    # ------------------------------------------------------------------ manifest
    def exists(self) -> bool:
        return self.manifest.exists()

    def write_manifest(self, data: dict[str, Any]) -> None:
        """The manifest of a new run, created exclusively: if another process created one first
        (the same ``--out``), this one is refused instead of sharing the directory."""
        self.path.mkdir(parents=True, exist_ok=True)
        doc = {"format": MANIFEST_FORMAT, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **data}
        try:
            fd = os.open(self.manifest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise RunDirError(f"{self.path} already holds a run; use --resume {self.path} or another --out") from None
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(doc, indent=1))
            fh.flush()
            os.fsync(fh.fileno())

    def rewrite_manifest(self, doc: dict[str, Any]) -> None:
        """Replace the manifest of an existing run (its owner only: e.g. new spend limits on resume)."""
        write_json_atomic(self.manifest, doc, indent=1)

    def own(self) -> RunLock:
        """Hold the run for this process's life (``with rd.own(): ...``): a second process that
        tries to run or resume it is refused, naming the owner."""
        return RunLock(self)

    def read_manifest(self) -> dict[str, Any]:
        if not self.manifest.is_file():
            raise RunDirError(f"{self.path} is not a run directory (no manifest.json)")
        try:
            doc = json.loads(self.manifest.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise RunDirError(f"{self.manifest}: not valid JSON ({e}); the run cannot be resumed") from e
        if not isinstance(doc, dict):
            raise RunDirError(f"{self.manifest}: a manifest is a JSON object (format, config, episodes, ...)")
        return doc

    # ------------------------------------------------------------------ attempts and results
    def archive_attempt(self, trajectory: Path) -> Path:
        """Move a failed attempt to ``attempts/<episode>.<n>.jsonl``, out of the way of reports."""
        self.attempts.mkdir(exist_ok=True)
        n = 1 + len(list(self.attempts.glob(f"{trajectory.stem}.*.jsonl")))
        dest = self.attempts / f"{trajectory.stem}.{n}.jsonl"
        os.replace(trajectory, dest)
        return dest

    def write_summary(self, rows: list[dict[str, Any]]) -> None:
        write_json_atomic(self.summary, rows, indent=1)

    def link_latest(self, runs_root: Path = Path("runs")) -> None:
        """``runs/latest`` always names the newest run made in the default location."""
        latest = runs_root / "latest"
        if latest.is_symlink() or not latest.exists():
            tmp = runs_root / f".latest.tmp{os.getpid()}"
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(self.path.name)
            os.replace(tmp, latest)


class RunLock:
    """An exclusive ``flock`` on ``RUN/.lock``, held while a process runs the run; the file says
    who (pid, host, since) so a refused process can name the owner. The lock, not the pid, is
    the proof: a killed owner's lock is free at once."""

    def __init__(self, rd: RunDir) -> None:
        self.rd, self.fd = rd, None

    def __enter__(self) -> RunLock:
        self.rd.path.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.rd.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 512, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise RunBusy(f"{self.rd.path} is being run right now by {owner}; wait for it to finish (or stop "
                          f"it), then `impasse run --resume {self.rd.path}`") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()} since "
                      f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n".encode(), 0)
        self.fd = fd
        from impasse.store import runs

        with contextlib.suppress(OSError):  # an unwritable cache must not stop a run
            runs.register(self.rd.path)  # so `cache prune` keeps what this run needs to go on
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def write_json_atomic(path: Path, data: Any, indent: int | None = None) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=indent))
    os.replace(tmp, path)
