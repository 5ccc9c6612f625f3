"""One planned episode of a run, in a worker: its Env (from the run's suite), its agent, the loop.

A complete trajectory is skipped (unless the suite wants it run again: an invalid pass); an
interrupted one is continued by the Env (rebuilt from its trajectory); one that ended in a
harness error is set aside to ``attempts/`` by the store and run again. A spend ceiling pauses
the episode between two steps (resumable, not a failure).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from impasse.agent import loop
from impasse.env.registry import SUITES
from impasse.run.budget import BudgetReached, meter, paused_reason
from impasse.run.config import RunConfig, ledger_of
from impasse.store.rundir import RunDir
from impasse.store.sink import LocalStore, TrajectoryStore
from impasse.store.trajectory import Trajectory
from impasse.suites.base import EpisodeSpec


def run_episode(spec: EpisodeSpec, cfg: RunConfig, run_dir: Path | RunDir,
                store: TrajectoryStore | None = None) -> dict[str, Any]:
    """Run (or finish) one planned episode; returns its short summary. ``store``: where the
    trajectory lives (default ``run_dir`` on this machine; the Ray executor passes one that talks
    to the run's single writer on another machine); ``run_dir`` holds the pinned tasks and grades."""
    rd = run_dir if isinstance(run_dir, RunDir) else RunDir(Path(run_dir))
    store = store or LocalStore(rd)
    suite = SUITES.get(cfg.suite)
    prior = store.prior(spec.episode_id)
    if prior is not None and prior.complete:
        if not suite.rerun(prior):
            return summarize(prior)
        rd.archive_attempt(rd.trajectory(spec.episode_id))  # a pass the suite declared invalid
    agent = agent_for(suite.agents(cfg), spec.agent)
    if agent.model_kind == "model" and (pause := paused_reason(ledger_of(cfg, rd), agent.arg)):
        raise pause  # a pause drains: no episode it covers starts after it
    env = suite.make_env(**suite.env_spec(spec, cfg), agent_kind=agent.model_kind, out=rd.path, store=store)
    model = agent.make_model(env.task, {**suite.agent_context(env), "model_config": model_config(cfg, agent.arg)})
    model = meter(model, cfg.spend, ledger_of(cfg, rd), spec.episode_id, name=agent.arg, run=rd.path.name)
    with env:
        try:
            loop.run(env, model)
        except BudgetReached as e:  # between two steps: resumable, not a failure
            env.pause(str(e))
            raise
    traj = store.read(spec.episode_id)
    return {**summarize(traj), **({"invalid": True} if suite.rerun(traj) else {})}


def model_config(cfg: RunConfig, name: str) -> dict[str, Any]:
    """The ModelConfig fields of the run's model ``name``: its own (a sweep's or ``--agent
    openai:A,openai:B``'s per-model settings), else the run's one model config."""
    if name in cfg.models:
        return cfg.models[name]
    return {**(cfg.model or {}), "model": name}


def agent_for(agents: list[Any], label: str) -> Any:
    """The run's agent whose label is ``label`` (as the episode's spec records it)."""
    for a in agents:
        if a.label == label:
            return a
    if len(agents) == 1 and agents[0].kind != "reference":  # a run of one model or one replay file
        return agents[0]
    raise ValueError(f"agent {label!r} is not part of this run")


def summarize(traj: Trajectory) -> dict[str, Any]:
    h = traj.header
    endings = traj.endings
    g = traj.grade or {}
    return {"episode_id": h["episode_id"], "agent": h["agent"], "interface": h["interface"],
            "condition": h["condition"], "condition_class": h.get("condition_class", ""),
            "instance_id": h["instance_id"], "ending": endings[0]["ending"] if endings else None,
            "final_ending": endings[-1]["ending"] if endings else None,
            "steps": max([s.index for s in traj.steps], default=0), "resolved": bool(g.get("resolved")),
            "nudges": len(traj.of_type("nudge")), "restored": bool(traj.of_type("restore")),
            **({"error": endings[0]["error"]} if endings and endings[0].get("error") else {})}
