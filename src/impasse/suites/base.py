"""The suite protocol: a benchmark = dataset + conditions + tools + scorers + metrics.

The environment-blocker benchmark is the first suite (:mod:`impasse.suites.blockers`); the
ask_human benchmark is the second. A suite makes the Env of one episode from its typed spec
(``make_env``: sandbox, tools, prompts, grading, reward), plans a run's episodes from the run's
configuration, and turns finished trajectories into report rows. Running them (executors, the
run directory, resume) is shared and lives in :mod:`impasse.run`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from impasse.env.core import Env
    from impasse.run.config import RunConfig
    from impasse.store.rundir import RunDir


@dataclass(frozen=True)
class EpisodeSpec:
    """One planned episode of a run (the manifest lists them)."""

    episode_id: str
    instance_id: str
    condition: str
    interface: str
    agent: str


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")


class Suite(Protocol):
    name: str
    interfaces: tuple[str, ...]
    """What the run's ``--interfaces`` may name (the blockers suite: baseline, tool, monitor)."""

    def make_env(self, **spec: Any) -> Env:
        """The Env of one episode from the suite's typed spec (``impasse.env.make``)."""

    def check(self, cfg: RunConfig) -> None:
        """Raise ValueError naming what is wrong with ``cfg`` for this suite, before anything runs."""

    def plan(self, cfg: RunConfig) -> tuple[list[EpisodeSpec], list[Any]]:
        """The run's episodes and the task rows they use (pinned into the run directory)."""

    def env_spec(self, spec: EpisodeSpec, cfg: RunConfig) -> dict[str, Any]:
        """The Env spec of one planned episode of a run."""

    def agents(self, cfg: RunConfig) -> list[Any]:
        """The run's agents (``AgentSpec``s) as this suite runs them."""

    def agent_context(self, env: Env) -> dict[str, Any]:
        """What a reference agent of this suite is given besides the messages (the task's key)."""

    def image_of(self, rd: RunDir, instance_id: str) -> tuple[str, str, str] | None:
        """The task image one of the run's tasks needs on a worker node (ref, package, version)."""

    def annotate(self, trajectory: Any) -> dict[str, Any]:
        """A finished trajectory -> one report row (ValueError saying why one cannot be annotated)."""

    def report(self, rows: list[dict[str, Any]], sources: list[str], *, compare: list[dict[str, Any]] | None = None,
               judge_model: str | None = None, judge_base_url: str | None = None) -> dict[str, Any]:
        """The report document (JSON) over the annotated rows of one or more runs."""

    def show(self, report: dict[str, Any], console: Any) -> None:
        """The report's tables in the terminal."""

    def html(self, report: dict[str, Any]) -> str:
        """The report as a self-contained HTML page."""

    def rerun(self, trajectory: Any) -> bool:
        """Whether a complete trajectory must be run again (the ask suite's invalid passes)."""
