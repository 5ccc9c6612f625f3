"""How a planned list of episodes gets executed: an :class:`Executor` protocol and a registry.

``local`` (the default) is a process pool on this machine; ``ray`` runs episodes as Ray tasks
across a cluster. Every executor gives the same guarantees: one process writes a trajectory at a
time, every event is on disk before the next tool call, an interrupted run is finished by
``--resume`` (complete episodes skipped, interrupted ones rebuilt, harness errors rerun), and a
model endpoint that keeps failing pauses the run instead of failing every remaining episode.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from impasse.registry import Registry
from impasse.run.config import RunConfig, ledger_of
from impasse.store.rundir import RunDir
from impasse.suites.base import EpisodeSpec

OnDone = Callable[[dict[str, Any]], None]


@dataclass
class RunOutcome:
    results: list[dict[str, Any]] = field(default_factory=list)
    paused: str | None = None
    """Why the run stopped before its end (resumable), or None."""


class Executor(Protocol):
    name: str

    def describe(self, cfg: RunConfig) -> str:
        """How many episodes run at once and where, for the run's banner."""

    def run(self, rd: RunDir, cfg: RunConfig, specs: list[EpisodeSpec], on_done: OnDone,
            guard: Guard) -> RunOutcome: ...


EXECUTORS: Registry[type[Executor]] = Registry("executor")


class Guard:
    """Watches finished episodes; says stop when the model endpoint failed in ``limit``
    consecutive ones (a typo in the URL must not burn a whole plan) or the run's spend ceiling
    is reached. A model's own ceiling pauses only that model's episodes (:meth:`skips`)."""

    def __init__(self, limit: int) -> None:
        self.limit, self.streak, self.reason = limit, 0, None
        self.paused_models: dict[str, str] = {}

    def skips(self, spec: EpisodeSpec) -> bool:
        """Whether a queued episode must not start: its model is paused by its own ceiling."""
        from impasse.prices import label

        return any(label(m) == spec.agent for m in self.paused_models)

    def model_pauses(self) -> str | None:
        """Why some models stopped early (the run as a whole went on), or None."""
        if not self.paused_models:
            return None
        return "; ".join(f"{m}: {why}" for m, why in sorted(self.paused_models.items()))

    def observe(self, row: dict[str, Any]) -> bool:
        """True once the run should pause."""
        if row.get("error_kind") == "budget":
            scope = row.get("budget_scope", "*")
            if scope == "*":
                self.reason = row.get("error")
            else:
                self.paused_models.setdefault(scope, row.get("error") or "its ceiling is reached")
        elif row.get("error_kind") == "endpoint":
            self.streak += 1
            if self.limit and self.streak >= self.limit:
                self.reason = (f"the model endpoint failed in {self.streak} consecutive episodes "
                               f"(last: {row.get('error')})")
        else:
            self.streak = 0
        return self.reason is not None


def episode_job(spec: dict[str, Any], cfg_json: str, run_dir: str, store: Any = None) -> dict[str, Any]:
    """One episode in a worker; a broken episode is reported, never sinks the run. ``store``:
    where the trajectory lives when it is not ``run_dir`` on this machine (see
    :mod:`impasse.store.sink`)."""
    from impasse.agent.endings import EndpointError
    from impasse.run.budget import BudgetReached
    from impasse.run.episode import run_episode

    s = EpisodeSpec(**spec)
    try:
        return run_episode(s, RunConfig.model_validate_json(cfg_json), RunDir(Path(run_dir)), store)
    except BudgetReached as e:  # paused between steps (or before the first); --resume continues it
        return {**error_row(s, str(e), "budget"), "ending": "paused", "final_ending": "paused",
                "budget_scope": e.scope}
    except Exception as e:  # noqa: BLE001 - recorded in the trajectory; rerun by --resume
        return error_row(s, f"{type(e).__name__}: {e}", "endpoint" if isinstance(e, EndpointError) else "harness")


def error_row(s: EpisodeSpec, error: str, kind: str) -> dict[str, Any]:
    """The summary row of an episode the harness could not finish (``--resume`` reruns it)."""
    return {"episode_id": s.episode_id, "agent": s.agent, "interface": s.interface, "condition": s.condition,
            "instance_id": s.instance_id, "ending": "harness_error", "final_ending": "harness_error",
            "error": error, "error_kind": kind, "steps": 0, "resolved": False, "nudges": 0}


def _worker_init() -> None:
    """Workers die with the run: a SIGKILLed ``impasse run`` must not leave episodes running."""
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() == 1:  # the parent died before we got here
        os._exit(1)


@EXECUTORS.register("local")
class LocalPool:
    """A process pool on this machine (``--jobs`` workers)."""

    name = "local"

    def describe(self, cfg: RunConfig) -> str:
        return f"{cfg.jobs} in parallel (local executor)"

    def run(self, rd: RunDir, cfg: RunConfig, specs: list[EpisodeSpec], on_done: OnDone, guard: Guard) -> RunOutcome:
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

        out = RunOutcome()
        cfg_json = cfg.model_dump_json()
        queue = list(reversed(specs))
        if cfg.jobs <= 1:
            while queue and out.paused is None:
                s = queue.pop()
                if not guard.skips(s):
                    self._done(episode_job(asdict(s), cfg_json, str(rd.path)), out, on_done, guard)
            out.paused = out.paused or guard.model_pauses()
            return out
        with ProcessPoolExecutor(max_workers=cfg.jobs, initializer=_worker_init) as pool:
            pending = set()
            while queue or pending:
                # at most one episode per worker is handed over: a queued one could not be taken back
                while queue and len(pending) < cfg.jobs and out.paused is None:
                    s = queue.pop()
                    if not guard.skips(s):
                        pending.add(pool.submit(episode_job, asdict(s), cfg_json, str(rd.path)))
                if not pending:
                    continue
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    self._done(fut.result(), out, on_done, guard)
                if out.paused is not None:
                    queue.clear()  # let the running ones finish; nothing new starts
        out.paused = out.paused or guard.model_pauses()
        return out

    @staticmethod
    def _done(row: dict[str, Any], out: RunOutcome, on_done: OnDone, guard: Guard) -> bool:
        out.results.append(row)
        on_done(row)
        if guard.observe(row) and out.paused is None:
            out.paused = guard.reason
        return out.paused is not None


EXECUTORS.add("ray", "impasse.run.ray:RayExecutor")


def execute(rd: RunDir, cfg: RunConfig, specs: list[EpisodeSpec], on_done: OnDone = lambda _r: None,
            fresh: bool = True) -> RunOutcome:
    """Run the plan with the configured executor, then write the summary and the predictions.
    ``fresh=False``: the ledger's session was started by the caller (a sweep: its pauses hold
    across its runs)."""
    from impasse.run.budget import Ledger
    from impasse.sandbox.registry import get_backend

    get_backend(cfg.backend)  # sweeps stale episodes of a killed earlier run before anything starts
    if fresh:
        Ledger(ledger_of(cfg, rd)).new_session()  # no call in flight, no pause: the limits given now decide
    outcome = EXECUTORS.get(cfg.executor)().run(rd, cfg, specs, on_done, Guard(cfg.pause_after_endpoint_failures))
    order = {s.episode_id: k for k, s in enumerate(specs)}
    outcome.results.sort(key=lambda r: order.get(r["episode_id"], 0))
    rd.write_summary(outcome.results)
    export_predictions(rd)
    return outcome


def export_predictions(rd: RunDir) -> None:
    """SWE-bench predictions, one file per (agent, interface, condition)."""
    from impasse.store.trajectory import read_trajectory
    from impasse.suites.base import slug

    groups: dict[str, list[dict[str, Any]]] = {}
    for p in rd.trajectories():
        t = read_trajectory(p)
        if not t.complete:
            continue
        h = t.header
        key = slug(f"{h['agent'].split('/', 1)[-1]}.{h['interface']}.{h['condition']}")
        groups.setdefault(key, []).append({"instance_id": h["instance_id"], "model_name_or_path": h["agent"],
                                           "model_patch": (t.grade or {}).get("model_patch", "")})
    rd.predictions.mkdir(exist_ok=True)
    for key, rows in groups.items():
        (rd.predictions / f"{key}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
