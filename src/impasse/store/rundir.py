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

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MANIFEST_FORMAT = "impasse.run/1"


class RunDirError(ValueError):
    pass


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
        self.path.mkdir(parents=True, exist_ok=True)
        doc = {"format": MANIFEST_FORMAT, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **data}
        write_json_atomic(self.manifest, doc, indent=1)

    def read_manifest(self) -> dict[str, Any]:
        if not self.manifest.exists():
            raise RunDirError(f"{self.path} is not a run directory (no manifest.json)")
        try:
            return json.loads(self.manifest.read_text())
        except json.JSONDecodeError as e:
            raise RunDirError(f"{self.manifest}: not valid JSON ({e.msg}); the run cannot be resumed") from e

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


def write_json_atomic(path: Path, data: Any, indent: int | None = None) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=indent))
    os.replace(tmp, path)
