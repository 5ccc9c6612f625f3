"""The suite protocol: a benchmark = dataset + conditions + tools + scorers + metrics.

The environment-blocker benchmark is the first suite (:mod:`impasse.suites.blockers`); the
ask_human benchmark is the second. A suite plans a run's episodes, supplies each episode's parts
(sandbox, tools, prompts, phase handlers, grader) and turns finished trajectories into report
rows; the run machinery (episode phases, executors, the run directory, resume) is shared.
"""

from __future__ import annotations

from typing import Any, Protocol

from impasse.episode import EpisodeParts
from impasse.run.config import EpisodeSpec, RunConfig
from impasse.store.rundir import RunDir


class Suite(Protocol):
    name: str
    interfaces: tuple[str, ...]
    """What the run's ``--interfaces`` may name (the blockers suite: baseline, tool, monitor)."""

    def check(self, cfg: RunConfig) -> None:
        """Raise ValueError naming what is wrong with ``cfg`` for this suite, before anything runs."""

    def plan(self, cfg: RunConfig) -> tuple[list[EpisodeSpec], list[Any]]:
        """The run's episodes and the task rows they use (pinned into the run directory)."""

    def episode_parts(self, spec: EpisodeSpec, cfg: RunConfig, rd: RunDir) -> EpisodeParts: ...

    def annotate(self, trajectory: Any) -> dict[str, Any]:
        """A finished trajectory -> one report row."""
