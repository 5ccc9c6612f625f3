"""Running a handoff experiment over the blockers suite (the thin I/O shell).

Per task x condition: each model alone (full budget), then per direction x switch point x
interface one handoff episode (same sandbox continues; :class:`HandoffHandler`). Controls are
composed from measured episodes: ``abort+fresh`` = the prefix's cost up to the switch plus the
suffix model alone (restarting in a clean sandbox is the suffix-alone episode); ``lc_full+hc_full``
= both models alone, costs added, the fresh HC run's outcome. Each episode is a trajectory in
``OUT/episodes`` (resumable: complete ones are reused), one row per episode in ``OUT/handoff.jsonl``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from impasse.handoff import reference as _reference  # noqa: F401 - registers the weak/strong profiles
from impasse.handoff.metrics import bucket_percentile_steps, call_cost, percentile_steps

CONTROLS = ("abort+fresh", "lc_full+hc_full")


@dataclass
class Side:
    spec: str
    """Agent spec: reference:<profile> or openai:<model>."""
    model_config: dict[str, Any] = field(default_factory=dict)

    def make(self, inst: Any) -> Any:
        from impasse.agent.agents import AgentSpec

        return Tracked(AgentSpec.parse(self.spec).make_model(inst, {"model_config": self.model_config}),
                       self.label)

    @property
    def label(self) -> str:
        from impasse.agent.agents import AgentSpec

        return AgentSpec.parse(self.spec).label


class Tracked:
    """A model whose every usage record names it (costs are priced per model)."""

    def __init__(self, model: Any, label: str) -> None:
        self.inner, self.name, self.kind = model, label, model.kind

    def query(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        resp = self.inner.query(messages, tools)
        resp.usage = {**(resp.usage or {}), "model": self.name}
        return resp


@dataclass
class Plan:
    lc: Side
    hc: Side
    interfaces: list[str]
    switches: list[str]
    """'5' (a fixed step), 'p10' (a percentile of the prefix's own termination steps), 'escalation'."""
    directions: list[str]
    tasks: list[Any]
    conditions: list[str]
    step_limit: int = 40
    command_timeout: float = 60.0
    restore: bool = False
    backend: str = "local"
    prior: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Single-model runs per model label from a prior run, ``{"instance", "steps", "resolved"}``
    each (else this run's single-model episodes): the percentiles' termination steps."""
    bucket: str | None = None
    """Take percentiles within difficulty buckets (:data:`impasse.handoff.metrics.BUCKETS`)."""


def run_plan(plan: Plan, out: Path, prices: dict[str, Any], on_row: Callable[[dict], None] = lambda r: None) -> list[dict]:
    from impasse.store.rundir import RunDir
    from impasse.tasks.schema import write_jsonl

    rd = RunDir(out)
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(plan.tasks, rd.instances)
    rows: list[dict] = []

    def record(row: dict) -> None:
        rows.append(row)
        on_row(row)

    for inst in plan.tasks:
        for cond in plan.conditions:
            for side in (plan.lc, plan.hc):
                record(_episode(rd, plan, prices, inst, cond, side, None, None, "alone:" + side.label, None))
    for direction in plan.directions:
        pre, suf = (plan.lc, plan.hc) if direction == "escalation" else (plan.hc, plan.lc)
        runs = plan.prior.get(pre.label) or [r for r in rows if r["strategy"] == "alone:" + pre.label]
        for sw in plan.switches:
            k_steps = switch_steps(sw, runs, plan.bucket)
            for inst in plan.tasks:
                for cond in plan.conditions:
                    k_step = _k_of(k_steps, f"{inst.instance_id}@{cond}", pre.label)
                    for iface in plan.interfaces:
                        record(_episode(rd, plan, prices, inst, cond, pre, suf, iface, f"{direction}:{iface}",
                                        (sw, k_step)))
    for r in controls(rows, plan):
        record(r)
    (out / "handoff.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def switch_steps(sw: str, runs: list[dict[str, Any]], bucket: str | None = None) -> int | dict[str, int] | None:
    """The step a switch point means (pure): None at 'escalation', the step itself for a fixed K,
    and for a percentile the step per instance (one K for all unless ``bucket`` splits them)."""
    if sw == "escalation":
        return None
    if sw.startswith("p") and sw[1:].isdigit():
        if bucket is None:  # one K for every instance, those absent from a prior run included
            return percentile_steps([r["steps"] for r in runs], [int(sw[1:])])[int(sw[1:])]
        return bucket_percentile_steps(runs, int(sw[1:]), bucket)
    if sw.isdigit() and int(sw) > 0:
        return int(sw)
    raise ValueError(f"switch point {sw!r}: use a step (e.g. 5), a percentile (p5, p10, ... p50) or 'escalation'")


def unbucketed(plan: Plan) -> list[str]:
    """Instances a bucketed percentile cannot place: the prior run has runs of the prefix model
    but none on them (pure; checked before any episode runs)."""
    if plan.bucket is None or not any(sw.startswith("p") for sw in plan.switches):
        return []
    out = []
    for direction in plan.directions:
        label = (plan.lc if direction == "escalation" else plan.hc).label
        known = {r["instance"] for r in plan.prior.get(label, [])}
        if known:
            out += [f"{i.instance_id}@{c} ({label})" for i in plan.tasks for c in plan.conditions
                    if f"{i.instance_id}@{c}" not in known]
    return out


def _k_of(k_steps: int | dict[str, int] | None, instance: str, label: str) -> int | None:
    if not isinstance(k_steps, dict):
        return k_steps
    if instance not in k_steps:
        raise ValueError(f"{instance}: no single-model run of {label} in the prior run, so it has no difficulty "
                         "bucket; run it alone first, or leave --buckets out")
    return k_steps[instance]


def _episode(rd: Any, plan: Plan, prices: dict, inst: Any, cond: str, pre: Side, suf: Side | None,
             iface: str | None, strategy: str, switch: tuple[str, int | None] | None) -> dict:
    from impasse.agent.loop import LoopConfig
    from impasse.episode import Episode, now
    from impasse.handoff.handler import HandoffHandler
    from impasse.run.config import EpisodeSpec, RunConfig, slug
    from impasse.store.trajectory import TrajectoryWriter, read_trajectory, rewrite_without_torn_tail
    from impasse.suites.blockers import SUITE, RestoreAfterEscalation

    k = switch[0] if switch else None
    kb = f"{k}-{plan.bucket}" if k and k.startswith("p") and plan.bucket else k  # a bucketed pK is another switch
    eid = slug(f"{strategy}__{kb or 'full'}__{cond}__{inst.instance_id}".replace("/", "-"))
    path = rd.trajectory(eid)
    prior = None
    if path.exists():
        rewrite_without_torn_tail(path)
        prior = read_trajectory(path)
        if prior.complete:
            return row_of(prior, prices)
        if prior.failed:
            rd.archive_attempt(path)
            prior = None
    cfg = RunConfig(agents=["reference:oracle"], interfaces=["tool"], step_limit=plan.step_limit,
                    command_timeout=plan.command_timeout, backend=plan.backend)
    parts = SUITE.episode_parts(EpisodeSpec(eid, inst.instance_id, cond, "tool", "reference/oracle"), cfg, rd)
    parts.model = pre.make(inst)
    parts.header.update(agent=pre.label, agent_kind=parts.model.kind, strategy=strategy, k=k,
                        k_step=switch[1] if switch else None, prefix=pre.label, suffix=suf.label if suf else None,
                        interface=iface or "alone", handoff_interface=iface, restore=plan.restore,
                        k_bucket=plan.bucket if kb != k else None)
    handlers: list[Any] = []
    if suf is not None:
        handlers.append(HandoffHandler(iface, suf.make(inst), at_escalation=k == "escalation", restore=plan.restore))
    if plan.restore and k != "escalation":
        handlers.append(RestoreAfterEscalation())
    parts.handlers = handlers
    writer = TrajectoryWriter(path, {**parts.header, "started_at": now()})
    try:
        config = LoopConfig(plan.step_limit, plan.command_timeout, switch_at=switch[1] if switch else None)
        grade = Episode(parts, config, writer).run(prior)
        writer.append({"type": "grade", **grade})
        writer.append({"type": "final"})
    except Exception as e:
        writer.append({"type": "harness_error", "error": f"{type(e).__name__}: {e}", "at": now()})
        raise
    finally:
        writer.close()
    return row_of(read_trajectory(path), prices)


def row_of(traj: Any, prices: dict) -> dict[str, Any]:
    """One episode's row: outcome, whether it switched, costs before/after the switch (pure)."""
    h = traj.header
    model, after, steps, suffix_steps = h["prefix"], False, 0, 0
    cost = {"prefix": 0.0, "suffix": 0.0, "handoff_calls": 0.0}
    for e in traj.events:
        if e["type"] == "handoff":
            after = True
            cost["handoff_calls"] += sum(call_cost(c.get("usage"), c["model"], prices) for c in e.get("calls", []))
        elif e["type"] == "message" and e.get("usage"):
            u = e["usage"]
            cost["suffix" if after else "prefix"] += call_cost(u, u.get("model", model), prices)
        elif e["type"] == "step":
            steps = max(steps, e["step"])
            suffix_steps += 1 if after else 0
    endings = traj.endings
    return {"episode_id": h["episode_id"], "instance": f"{h['instance_id']}@{h['condition']}",
            "strategy": h["strategy"], "k": h.get("k"), "k_step": h.get("k_step"), "prefix": h["prefix"],
            "suffix": h.get("suffix"), "switched": after, "resolved": bool((traj.grade or {}).get("resolved")),
            "steps": steps, "suffix_steps": suffix_steps, "ending": endings[-1]["ending"] if endings else None,
            "cost_usd": round(sum(cost.values()), 6), "prefix_cost_usd": round(cost["prefix"], 6),
            "suffix_cost_usd": round(cost["suffix"] + cost["handoff_calls"], 6),
            "handoff_calls_usd": round(cost["handoff_calls"], 6)}


def controls(rows: list[dict], plan: Plan) -> list[dict]:
    """The control strategies per (direction, k, instance), composed from measured episodes (pure).
    They switch exactly when the same direction's raw handoff switched (same prefix, same K)."""
    alone = {(r["prefix"], r["instance"]): r for r in rows if r["strategy"].startswith("alone:")}
    out = []
    for r in rows:
        direction, _, iface = r["strategy"].partition(":")
        if direction not in ("escalation", "downshift") or iface != plan.interfaces[0]:
            continue
        fresh = alone[(r["suffix"], r["instance"])]
        full = alone[(r["prefix"], r["instance"])]
        base = {"instance": r["instance"], "k": r["k"], "k_step": r["k_step"], "prefix": r["prefix"],
                "suffix": r["suffix"], "switched": r["switched"], "handoff_calls_usd": 0.0}
        out.append({**base, "episode_id": f"{r['episode_id']}+abort", "strategy": f"{direction}:abort+fresh",
                    "resolved": fresh["resolved"], "cost_usd": round(r["prefix_cost_usd"] + fresh["cost_usd"], 6),
                    "prefix_cost_usd": r["prefix_cost_usd"], "suffix_cost_usd": fresh["cost_usd"],
                    "steps": r["k_step"] or 0, "suffix_steps": fresh["steps"]})
        out.append({**base, "episode_id": f"{r['episode_id']}+full", "strategy": f"{direction}:lc_full+hc_full",
                    "resolved": fresh["resolved"], "cost_usd": round(full["cost_usd"] + fresh["cost_usd"], 6),
                    "prefix_cost_usd": full["cost_usd"], "suffix_cost_usd": fresh["cost_usd"],
                    "steps": full["steps"], "suffix_steps": fresh["steps"]})
    return out


def prior_steps(run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Single-model runs per agent label from a prior run's trajectories: instance
    (``id@condition``), termination step and outcome (what percentiles and buckets need)."""
    from impasse.store.rundir import RunDir
    from impasse.store.trajectory import read_trajectory

    rd = RunDir(run_dir)
    paths = rd.trajectories()
    if not paths:
        raise ValueError(f"--prior {run_dir}: no trajectories there; give a run directory of single-model episodes")
    out: dict[str, list[int]] = {}
    for p in paths:
        t = read_trajectory(p)
        if t.complete and not t.of_type("handoff"):
            out.setdefault(t.header.get("prefix") or t.header["agent"], []).append({
                "instance": f"{t.header['instance_id']}@{t.header['condition']}",
                "steps": max([s.index for s in t.steps], default=0),
                "resolved": bool((t.grade or {}).get("resolved"))})
    return out
