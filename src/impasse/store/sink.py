"""Where an episode's trajectory lives, seen from the episode: a :class:`TrajectoryStore`.

The episode needs three things from its run directory: the prior trajectory (to skip a complete
episode, rebuild an interrupted one, or set a failed attempt aside), a writer with the
:class:`~impasse.store.trajectory.TrajectoryWriter` API (``append`` returns once the event is on
disk; ``close``), and the finished trajectory (for its summary). :class:`LocalStore` does that on
this machine's filesystem; the Ray executor supplies a store whose calls go to the run's single
writer process, so a worker on another machine keeps the same guarantees.
"""

from __future__ import annotations

from typing import Any, Protocol

from impasse.store.rundir import RunDir
from impasse.store.trajectory import Trajectory, TrajectoryWriter, read_trajectory


class Writer(Protocol):
    def append(self, event: dict[str, Any]) -> None:
        """Return only once the event is durable (the next tool call may then run)."""

    def extend(self, events: list[dict[str, Any]]) -> None:
        """Several events, durable together."""

    def close(self) -> None: ...


class TrajectoryStore(Protocol):
    def prior(self, episode_id: str) -> Trajectory | None:
        """The episode's trajectory so far (torn tail dropped), or None if there is none to
        continue: never started, or its last attempt failed (that attempt is set aside)."""

    def open_writer(self, episode_id: str, header: dict[str, Any]) -> Writer: ...

    def read(self, episode_id: str) -> Trajectory: ...


def load_prior(rd: RunDir, episode_id: str) -> Trajectory | None:
    """What :meth:`TrajectoryStore.prior` means, on a run directory this process can see."""
    path = rd.trajectory(episode_id)
    if not path.exists():
        return None
    prior = read_trajectory(path)  # a torn last line is ignored here and cut by the writer, under its lock
    if prior.failed:
        rd.archive_attempt(path)
        return None
    return prior


class LocalStore:
    """The run directory is on this machine (the local process pool, or the Ray writer actor)."""

    def __init__(self, rd: RunDir) -> None:
        self.rd = rd

    def prior(self, episode_id: str) -> Trajectory | None:
        return load_prior(self.rd, episode_id)

    def open_writer(self, episode_id: str, header: dict[str, Any]) -> TrajectoryWriter:
        return TrajectoryWriter(self.rd.trajectory(episode_id), header)

    def read(self, episode_id: str) -> Trajectory:
        return read_trajectory(self.rd.trajectory(episode_id))
