"""Running a handoff experiment over the blockers suite: a driver of Envs (the thin I/O shell).

Per task x condition, each model alone first (full budget: the single-model runs the metrics
compare against). Then, per direction x switch point K x task x condition, **one prefix**: the
prefix model's own single-model run replayed up to K in a fresh Env (its recorded actions
re-executed, no model call; at ``escalation`` up to its own escalation). From that one prefix,
every interface is a **fork** (``Env.fork``): its first K steps are the prefix's, the same
working tree and fault state, and only what the suffix model is told differs.

Where the recorded run stops before K, what stopped it decides (:func:`switch_reach`). The
prefix model's own ending (it completed, escalated, or failed) means it terminated before K: it
does not switch there, and its rows say so. A run cut short by something else (a harness error,
an interrupted recording, a ``--prior`` run's lower step limit) is replayed to its end and the
prefix model goes on **live** from there to K (its calls made once, in the prefix, and recorded
there; should it end on its own before K, the instance does not switch either).

Controls are composed from the same measured runs, the same in both directions:
``abort+fresh`` = the prefix's cost up to K plus the strong (HC) model alone from scratch, with
HC alone's outcome; ``lc_full+hc_full`` = both models alone, costs added, HC alone's outcome.

Everything is resumable with the same command and ``--out``: alone runs and branches are Envs
whose trajectories continue where they stopped, a prefix is rebuilt from its own recorded
trajectory (``OUT/prefixes/``), and ``OUT/manifest.json`` pins the options, so a rerun with other
options is refused instead of mixing episodes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import impasse
from impasse.agent import loop
from impasse.agent.loop import LoopConfig, ModelResponse
from impasse.env.core import TERMINAL, Env
from impasse.handoff.interfaces import INTERFACES, PrefixState
from impasse.handoff.metrics import bucket_percentile_steps, percentile_steps
from impasse.prices import PriceTable
from impasse.store.rundir import RunDir, write_json_atomic
from impasse.store.sink import LocalStore
from impasse.store.trajectory import Trajectory, read_trajectory
from impasse.suites.base import slug

CONTROLS = ("abort+fresh", "lc_full+hc_full")
MANIFEST_FORMAT = "impasse.handoff/1"
ANEW = ("reps", "prices")
"""Options a rerun may change: they shape the report, not the episodes."""


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

    @property
    def kind(self) -> str:
        from impasse.agent.agents import AgentSpec

        return AgentSpec.parse(self.spec).model_kind


class Tracked:
    """A model whose every usage record names it (costs are priced per model)."""

    def __init__(self, model: Any, label: str) -> None:
        self.inner, self.name, self.kind = model, label, model.kind

    def query(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        resp = self.inner.query(messages, tools)
        resp.usage = {**(resp.usage or {}), "model": self.name}
        return resp


class PrefixReplay:
    """The prefix model, replayed: the assistant messages of its recorded single-model run, in
    order, with their recorded usage (marked ``replayed``: the strategy's cost includes the
    prefix, though nothing is spent again). Past the last recorded reply, the ``live`` model
    answers (a recorded run cut short before K), else the replay is an error."""

    kind = "replay"

    def __init__(self, source: Trajectory, label: str, live: Any = None) -> None:
        self.name, self.live = label, live
        self.recorded = [(e["message"], e.get("usage")) for e in source.events
                         if e["type"] == "message" and e["message"].get("role") == "assistant"]

    def query(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelResponse:
        from impasse.agent.endings import AgentError

        k = sum(1 for m in messages if m.get("role") == "assistant")
        if k >= len(self.recorded):
            if self.live is not None:
                return self.live.query(messages, tools)
            raise AgentError(f"the prefix's recorded run has only {k} model replies")
        message, usage = self.recorded[k]
        return ModelResponse(dict(message), {**(usage or {}), "model": self.name, "replayed": True})


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
    """Single-model runs per model label from a prior run, ``{"instance", "steps", "resolved", "path"}``
    each: their termination steps give the percentiles and their trajectories are the prefixes."""
    bucket: str | None = None
    """Take percentiles within difficulty buckets (:data:`impasse.handoff.metrics.BUCKETS`)."""
    prior_dir: str | None = None

    def sides(self, direction: str) -> tuple[Side, Side]:
        return (self.lc, self.hc) if direction == "escalation" else (self.hc, self.lc)

    def options(self) -> dict[str, Any]:
        """What decides the episodes (the manifest's record; a rerun must match it)."""
        return {"prefix": {"spec": self.lc.spec, "model_config": self.lc.model_config},
                "suffix": {"spec": self.hc.spec, "model_config": self.hc.model_config},
                "interfaces": self.interfaces, "switches": self.switches, "directions": self.directions,
                "tasks": [t.instance_id for t in self.tasks], "conditions": self.conditions,
                "step_limit": self.step_limit, "command_timeout": self.command_timeout, "restore": self.restore,
                "backend": self.backend, "bucket": self.bucket, "prior": self.prior_dir}


# ------------------------------------------------------------------------------------ the run


def run_plan(plan: Plan, out: Path, prices: PriceTable, on_row: Callable[[dict], None] = lambda r: None) -> list[dict]:
    """Every episode of the plan (resuming what is recorded), then the controls; the rows. The
    process holds ``OUT`` for as long (a second one on the same ``--out`` is refused)."""
    rd = RunDir(out)
    with rd.own():
        return _run_plan(plan, rd, prices, on_row)


def _run_plan(plan: Plan, rd: RunDir, prices: PriceTable, on_row: Callable[[dict], None]) -> list[dict]:
    out = rd.path
    pin(plan, rd)
    rows: list[dict] = []

    def record(row: dict) -> None:
        rows.append(row)
        on_row(row)

    alone: dict[tuple[str, str], Trajectory] = {}
    for inst in plan.tasks:
        for cond in plan.conditions:
            for side in (plan.lc, plan.hc):
                traj = _alone(rd, plan, inst, cond, side)
                alone[(side.label, f"{inst.instance_id}@{cond}")] = traj
                record(row_of(traj, prices))
    sources: dict[tuple[str, str, str], Trajectory] = {}  # (direction, K, instance) -> the run its prefix replays
    for direction in plan.directions:
        pre, suf = plan.sides(direction)
        runs = finished(plan.prior.get(pre.label, [])) or [r for r in rows if r["strategy"] == "alone:" + pre.label]
        for sw in plan.switches:
            k_steps = switch_steps(sw, runs, plan.bucket)
            for inst in plan.tasks:
                for cond in plan.conditions:
                    key = f"{inst.instance_id}@{cond}"
                    source = sources[(direction, sw, key)] = prefix_source(plan, pre.label, key, alone[(pre.label, key)])
                    switched, live = _switch(rd, plan, prices, inst, cond, direction, sw,
                                             _k_of(k_steps, key, pre.label), source)
                    if live is not None:  # the prefix's cost to K includes its live calls: the controls' too
                        sources[(direction, sw, key)] = live
                    for row in switched:
                        record(row)
    for r in controls(rows, plan, prices, alone, sources):
        record(r)
    (out / "handoff.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    # last: the run is finished (the cache's register reads this; prune then keeps nothing for it)
    rd.write_summary([{"episode_id": r["episode_id"], "strategy": r["strategy"], "final_ending": r["ending"],
                       "resolved": r["resolved"]} for r in rows if r.get("ending")])
    return rows


def pin(plan: Plan, rd: RunDir) -> None:
    """Write the manifest (a new run) or refuse options that differ from the recorded ones."""
    from impasse.tasks.schema import write_jsonl

    options = plan.options()
    if rd.manifest.exists():
        recorded = rd.read_manifest()
        if recorded.get("format") != MANIFEST_FORMAT:
            raise ValueError(f"{rd.path} holds something other than a handoff run ({rd.manifest}); use another --out")
        changed = [k for k in options if recorded["options"].get(k) != options[k]]
        if changed:
            was = "; ".join(f"{k}: {recorded['options'].get(k)!r} -> {options[k]!r}" for k in changed)
            raise ValueError(f"{rd.path} was run with other options ({was}). A handoff run resumes only with its own "
                             f"options (only {', '.join('--' + a for a in ANEW)} may change); use another --out.")
        return
    rd.path.mkdir(parents=True, exist_ok=True)
    write_jsonl(plan.tasks, rd.instances)
    write_json_atomic(rd.manifest, {"format": MANIFEST_FORMAT, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ"),
                                    "impasse_version": impasse.__version__, "impasse_commit": impasse.git_commit(),
                                    "options": options}, indent=1)


def _env(rd: RunDir, plan: Plan, inst: Any, cond: str, eid: str, store: Any, header: dict[str, Any], side: Side,
         restore: bool, open_endings: tuple[str, ...] = ()) -> Env:
    from impasse.suites.blockers import SUITE

    env = SUITE.make_env(task=inst.instance_id, condition=cond, interface="tool", episode_id=eid, out=rd.path,
                         store=store, step_limit=plan.step_limit, command_timeout=plan.command_timeout,
                         restore=restore, backend=plan.backend, agent=side.label, agent_kind=side.kind, header=header)
    env.open_endings = set(open_endings)
    return env


def _header(strategy: str, k: str | None, k_step: int | None, pre: Side, suf: Side | None, iface: str | None,
            plan: Plan) -> dict[str, Any]:
    return {"strategy": strategy, "k": k, "k_step": k_step, "prefix": pre.label,
            "suffix": suf.label if suf else None, "interface": iface or "alone", "handoff_interface": iface,
            "k_bucket": plan.bucket if k and k.startswith("p") and plan.bucket else None}


def _alone(rd: RunDir, plan: Plan, inst: Any, cond: str, side: Side) -> Trajectory:
    eid = slug(f"alone:{side.label}__full__{cond}__{inst.instance_id}".replace("/", "-"))
    header = _header("alone:" + side.label, None, None, side, None, None, plan)
    env = _env(rd, plan, inst, cond, eid, LocalStore(rd), header, side, plan.restore)
    with env:
        env.reset()
        if not env.done:
            loop.run(env, side.make(inst))
    return read_trajectory(rd.trajectory(eid))


def _switch(rd: RunDir, plan: Plan, prices: PriceTable, inst: Any, cond: str, direction: str, sw: str,
            k_step: int | None, source: Trajectory) -> tuple[list[dict], Trajectory | None]:
    """One prefix to K, then one fork per interface (a branch already recorded goes on from its
    own trajectory). The rows of every interface, switched or not, and the prefix's own
    trajectory when part of it ran live (its cost to K is not the recorded run's)."""
    pre, suf = plan.sides(direction)
    kb = f"{sw}-{plan.bucket}" if sw.startswith("p") and plan.bucket else sw  # a bucketed pK is another switch
    ids = {i: slug(f"{direction}:{i}__{kb}__{cond}__{inst.instance_id}".replace("/", "-")) for i in plan.interfaces}
    done = {i: read_trajectory(rd.trajectory(e)) for i, e in ids.items() if _complete(rd, e)}
    reach = switch_reach(source, sw, k_step, plan.step_limit)
    key = f"{inst.instance_id}@{cond}"
    if reach.step is None:  # nothing to hand over at this K: the rows say why
        return [not_switched(f"{direction}:{i}", sw, k_step, pre, suf, key, ids[i], reach.reason)
                for i in plan.interfaces], None
    pid = slug(f"prefix:{direction}__{kb}__{cond}__{inst.instance_id}".replace("/", "-"))
    prefixes = RunDir(rd.path / "prefixes")
    todo = [i for i in plan.interfaces if i not in done]
    prefix: Env | None = None  # built only for a branch that has no trajectory of its own yet
    try:
        for i in todo:
            if prefix is None and not rd.trajectory(ids[i]).exists():
                built = _prefix(rd, plan, inst, cond, pid, direction, sw, reach, pre, source)
                if isinstance(built, str):  # the prefix model, live, ended on its own before K
                    return [not_switched(f"{direction}:{j}", sw, k_step, pre, suf, key, ids[j], built)
                            for j in plan.interfaces], None
                prefix = built
            header = _header(f"{direction}:{i}", sw, reach.step if sw != "escalation" else None, pre, suf, i, plan)
            done[i] = _branch(rd, plan, inst, cond, prefix, ids[i], header, i, pre, suf)
    finally:
        if prefix is not None:
            prefix.close()
    live = read_trajectory(prefixes.trajectory(pid)) if reach.replayed < reach.step else None
    return [row_of(done[i], prices) for i in plan.interfaces], live


def _complete(rd: RunDir, eid: str) -> bool:
    path = rd.trajectory(eid)
    return path.exists() and read_trajectory(path).complete


def _prefix(rd: RunDir, plan: Plan, inst: Any, cond: str, eid: str, direction: str, sw: str, reach: Reach,
            pre: Side, source: Trajectory) -> Env | str:
    """The prefix at K: the prefix model's recorded run replayed in a fresh Env (no model call),
    up to K or through its own escalation, then, where that run stops before K, the prefix model
    live up to K; recorded under ``prefixes/`` (never graded: any ending there is this driver's
    to read). A rebuilt prefix re-executes its recorded steps, live ones included, and asks no
    model again. Returns why not, instead, when the live prefix model ended on its own first."""
    escalation = sw == "escalation"
    header = {**_header(f"prefix:{direction}", sw, reach.step, pre, None, None, plan), "replayed_steps": reach.replayed}
    env = _env(rd, plan, inst, cond, eid, LocalStore(RunDir(rd.path / "prefixes")), header, pre, restore=False,
               open_endings=TERMINAL)
    try:
        env.reset()
        live = pre.make(inst) if reach.replayed < reach.step else None
        if not env.endings:  # rebuilt past an ending: nothing more to ask
            loop.run(env, PrefixReplay(source, pre.label, live), LoopConfig(stop_at=None if escalation else reach.step))
    except BaseException:
        env.close()  # an endpoint failure: what ran is recorded, and the next run goes on from it
        raise
    ended = env.endings[-1] if env.endings else None
    if escalation and ended and ended["ending"] == "escalated" and env.steps == reach.step:
        return env
    if not escalation and ended is None and env.status == "live" and env.steps == reach.step:
        return env
    env.close()
    if live is not None and ended is not None and not escalation and ended["steps"] > reach.replayed:
        return (f"the prefix model, going on live from step {reach.replayed} where its recorded run stopped, "
                f"ended on its own ({ended['ending']}) at step {ended['steps']}, before K")
    raise RuntimeError(f"{eid}: replaying the prefix's recorded run did not reach step {reach.step} "
                       f"(at {env.steps}, {env.status}); its recorded actions no longer run the same way here")


def _branch(rd: RunDir, plan: Plan, inst: Any, cond: str, prefix: Env | None, eid: str, header: dict[str, Any],
            iface: str, pre: Side, suf: Side) -> Trajectory:
    """One interface's episode: forked from the prefix (or its own trajectory, if it was cut
    short), handed to the suffix model, run to its end."""
    if rd.trajectory(eid).exists():  # cut short earlier: its own trajectory says how far it got
        branch = _env(rd, plan, inst, cond, eid, LocalStore(rd), header, pre, restore=False,
                      open_endings=("escalated",))
        branch.reset()
    else:
        assert prefix is not None
        branch = prefix.fork(episode_id=eid, store=LocalStore(rd), **header)
    with branch:
        if branch.status == "live" and not branch.trajectory().of_type("handoff"):
            hand_over(branch, iface, pre.make(inst), suf.make(inst), plan.restore)
        branch.open_endings = set()  # after the switch the suffix's endings end the episode
        if branch.status == "live":
            loop.run(branch, suf.make(inst))
    return read_trajectory(rd.trajectory(eid))


def hand_over(env: Env, iface_name: str, prefix_model: Any, suffix_model: Any, restore: bool) -> None:
    """The switch in one branch: the phase ends (``switch``, or the prefix's escalation), the
    environment is restored first where asked and the escalation was accepted, the interface's
    artefact is written (one model call, if it needs one), and the suffix's history starts anew."""
    endings = env.trajectory().endings
    if not endings or endings[-1]["steps"] != env.steps:
        env.end("switch")
        endings = env.trajectory().endings
    ending = endings[-1]
    escalated = ending["ending"] == "escalated"
    restored = bool(escalated and restore and ending.get("accepted"))
    if restored and not env.restored:  # the operator's fix comes first: the suffix starts on a working machine
        env.restore(by="handoff")
    iface = INTERFACES.get(iface_name)
    state = PrefixState(messages=list(env.messages), step=env.steps, steps_left=env.step_limit - env.steps,
                        reason=ending["ending"], ticket=ending.get("ticket") if escalated else None, restored=restored)
    written, calls = None, []
    if (req := iface.request(state)) is not None:
        author = prefix_model if req.by == "prefix" else suffix_model
        resp = author.query(req.messages, req.tools)
        written = iface.read(resp.message)
        calls.append({"by": req.by, "model": author.name, "purpose": iface_name, "message": resp.message,
                      "usage": resp.usage})
    env.note({"type": "handoff", "interface": iface_name, "from_model": prefix_model.name,
              "to_model": suffix_model.name, "at_step": env.steps, "reason": ending["ending"], "restored": restored,
              "transferred": _transferred(state, written), "working_tree_diff": env.sandbox.diff(),
              "written": written, "calls": calls, "messages_reset": True})
    for m in iface.first_messages(state, written):
        env.record(m)


def _transferred(state: PrefixState, written: Any) -> dict[str, Any]:
    """What crossed the switch, in numbers (the working tree always does)."""
    return {"working_tree": True, "prefix_messages": len(state.messages),
            "ticket": state.ticket is not None or isinstance(written, dict),
            "summary_chars": len(written) if isinstance(written, str) else 0}


# ------------------------------------------------------------------------------------ pure parts


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


@dataclass(frozen=True)
class Reach:
    """Where a prefix switches: at ``step`` (None: it does not switch, ``reason`` says why), the
    first ``replayed`` steps replayed from the recorded run and the rest up to ``step`` live."""

    step: int | None
    replayed: int = 0
    reason: str = ""


OWN_ENDINGS = ("completed", "escalated", "error")
"""Endings the prefix model chose (or could not go on): it terminated, so at a K past them there
is no run left to hand over."""


def switch_reach(source: Trajectory, sw: str, k_step: int | None, step_limit: int) -> Reach:
    """Where the prefix switches, from its recorded run (pure). At 'escalation': its escalation
    step, or no switch. At K: K, replayed in full if the run is still going after K tool calls. A
    run that ends on its own at or before K (:data:`OWN_ENDINGS`) does not switch, nor does a K
    that leaves the suffix no step of this run's budget. A run cut short otherwise (no ending
    recorded: a harness error, an interrupted recording; or its step limit reached at or before
    K, which is below this run's limit: a ``--prior`` run's smaller budget) is replayed to its
    last step and goes on live to K."""
    first = source.endings[0] if source.endings else None
    if sw == "escalation":
        if first and first["ending"] == "escalated":
            return Reach(first["steps"], first["steps"])
        if first is None:  # an escalation that may have come later is not run live: K is its own escalation
            return Reach(None, reason="the prefix's recorded run was cut short before any ending, so it has no "
                                      "escalation to switch at")
        return Reach(None, reason="the prefix's own run never escalated")
    if k_step is None:
        return Reach(None, reason="no switch step")
    if k_step >= step_limit:
        return Reach(None, reason=f"K = {k_step} leaves the suffix no step of the {step_limit}-step budget")
    recorded = max([s.index for s in source.steps], default=0)
    if first is None:
        return Reach(k_step, min(recorded, k_step))
    if first["steps"] > k_step:
        return Reach(k_step, k_step)
    if first["ending"] == "step_limit":  # at or before K < this run's limit: a smaller budget cut it
        return Reach(k_step, first["steps"])
    return Reach(None, reason=f"the prefix's own run ended on its own ({first['ending']}) at step {first['steps']}, "
                              "at or before K: the prefix model had stopped, so there is nothing to hand over")


def finished(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs that ended (their steps are termination steps; a run cut short is only a prefix)."""
    return [r for r in runs if r.get("complete", True)]


def prefix_source(plan: Plan, label: str, key: str, alone: Trajectory) -> Trajectory:
    """The run a prefix replays: the prior run's own trajectory when ``--prior`` has it (its
    termination steps gave the percentile; a finished one before one cut short), else this run's
    single-model episode."""
    mine = [r for r in plan.prior.get(label, []) if r["instance"] == key and r.get("path")]
    for r in sorted(mine, key=lambda r: not r.get("complete", True)):
        return read_trajectory(Path(r["path"]))
    return alone


def unbucketed(plan: Plan) -> list[str]:
    """Instances a bucketed percentile cannot place: the prior run has runs of the prefix model
    but none on them (pure; checked before any episode runs)."""
    if plan.bucket is None or not any(sw.startswith("p") for sw in plan.switches):
        return []
    out = []
    for direction in plan.directions:
        label = plan.sides(direction)[0].label
        known = {r["instance"] for r in finished(plan.prior.get(label, []))}
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


def costs(traj: Trajectory, prices: PriceTable, until_step: int | None = None) -> dict[str, Any]:
    """USD of an episode's model calls (pure): before the switch (the prefix, replayed or not),
    the handoff's artefact call, and after the switch (the suffix's own calls only). Models the
    table does not price are listed in ``unpriced`` and their calls counted as unknown, not $0."""
    out: dict[str, Any] = {"prefix": 0.0, "suffix": 0.0, "handoff_calls": 0.0, "unpriced": set(),
                           "unknown": set()}
    after, steps = False, 0

    def add(part: str, usage: dict[str, Any] | None, model: str) -> None:
        cost = prices.cost(usage, model) if usage else 0.0
        if cost is None:  # the part's cost is unknown (never $0): `unknown` names the parts
            out["unpriced"].add(model)
            out["unknown"].add(part)
        else:
            out[part] += cost

    for e in traj.events:
        if e["type"] == "handoff":
            after = True
            for c in e.get("calls", []):
                add("handoff_calls", c.get("usage"), c["model"])
        elif e["type"] == "step":
            steps = max(steps, e["step"])
        elif e["type"] == "message" and e.get("usage") and e["message"].get("role") == "assistant":
            if until_step is not None and steps >= until_step:
                break
            add("suffix" if after else "prefix", e["usage"], e["usage"].get("model", traj.header["prefix"]))
    return out


def row_of(traj: Trajectory, prices: PriceTable) -> dict[str, Any]:
    """One episode's row: outcome, whether it switched, costs before/after the switch (pure)."""
    h = traj.header
    c = costs(traj, prices)
    handoff = traj.of_type("handoff")
    suffix_steps = sum(1 for s in traj.steps if handoff and s.index > handoff[0]["at_step"])
    endings = traj.endings
    known = not c["unpriced"]

    def part(name: str) -> float | None:
        return None if name in c["unknown"] else round(c[name], 6)

    return {"episode_id": h["episode_id"], "instance": f"{h['instance_id']}@{h['condition']}",
            "strategy": h["strategy"], "k": h.get("k"), "k_step": handoff[0]["at_step"] if handoff else h.get("k_step"),
            "prefix": h["prefix"], "suffix": h.get("suffix"), "switched": bool(handoff),
            "resolved": bool((traj.grade or {}).get("resolved")), "steps": max([s.index for s in traj.steps], default=0),
            "suffix_steps": suffix_steps, "ending": endings[-1]["ending"] if endings else None,
            "cost_usd": round(c["prefix"] + c["suffix"] + c["handoff_calls"], 6) if known else None,
            "prefix_cost_usd": part("prefix"), "suffix_cost_usd": part("suffix"),
            "handoff_calls_usd": part("handoff_calls"), "unpriced": sorted(c["unpriced"]),
            "prefix_live_calls": live_prefix_calls(traj)}


def live_prefix_calls(traj: Trajectory) -> int:
    """Model calls the prefix made live before the switch (pure): those past the end of the
    recorded run it replayed (replayed replies are marked ``replayed``); 0 for an unswitched run."""
    if not traj.of_type("handoff"):
        return 0
    n = 0
    for e in traj.events:
        if e["type"] == "handoff":
            return n
        if e["type"] == "message" and e["message"].get("role") == "assistant" and not (e.get("usage") or {}).get(
                "replayed"):
            n += 1
    return n


def not_switched(strategy: str, k: str, k_step: int | None, pre: Side, suf: Side, instance: str, eid: str,
                 reason: str) -> dict:
    return {"episode_id": eid, "instance": instance, "strategy": strategy, "k": k, "k_step": k_step,
            "prefix": pre.label, "suffix": suf.label, "switched": False, "resolved": False, "steps": 0,
            "suffix_steps": 0, "ending": None, "cost_usd": None, "prefix_cost_usd": 0.0, "suffix_cost_usd": 0.0,
            "handoff_calls_usd": 0.0, "unpriced": [], "prefix_live_calls": 0, "reason": reason}


def controls(rows: list[dict], plan: Plan, prices: PriceTable, alone: dict[tuple[str, str], Trajectory],
             sources: dict[tuple[str, str, str], Trajectory] | None = None) -> list[dict]:
    """The controls per (direction, K, instance), composed from the runs (pure): they switch
    exactly where the direction's prefix reached K. ``abort+fresh``: the prefix's cost to K plus
    HC alone; ``lc_full+hc_full``: LC alone plus HC alone. Both take HC alone's outcome. The
    prefix's cost to K is that of the run the branches replayed (``sources``, keyed by direction,
    K and instance: a ``--prior`` run's own trajectory), else of the prefix model's run here."""
    single = {(r["prefix"], r["instance"]): r for r in rows if r["strategy"].startswith("alone:")}
    seen, out = set(), []
    for r in rows:
        direction, _, iface = r["strategy"].partition(":")
        if direction not in ("escalation", "downshift") or iface in CONTROLS or (direction, r["k"], r["instance"]) in seen:
            continue
        seen.add((direction, r["k"], r["instance"]))
        pre, _suf = plan.sides(direction)
        lc, hc = single[(plan.lc.label, r["instance"])], single[(plan.hc.label, r["instance"])]
        source = (sources or {}).get((direction, r["k"], r["instance"])) or alone[(pre.label, r["instance"])]
        c = costs(source, prices, r["k_step"]) if r["switched"] else None
        prefix_cost = None if c is None or c["unpriced"] else round(c["prefix"], 6)
        base = {"instance": r["instance"], "k": r["k"], "k_step": r["k_step"], "prefix": r["prefix"],
                "suffix": r["suffix"], "switched": r["switched"], "handoff_calls_usd": 0.0, "resolved": hc["resolved"],
                "unpriced": sorted(set(hc["unpriced"]) | set(lc["unpriced"]) | set(c["unpriced"] if c else ()))}
        stem = r["episode_id"].rsplit("__", 3)[-3:]
        out.append({**base, "episode_id": "__".join([f"{direction}-abort+fresh", *stem]),
                    "strategy": f"{direction}:abort+fresh", "cost_usd": _add(prefix_cost, hc["cost_usd"]),
                    "prefix_cost_usd": prefix_cost if r["switched"] else 0.0, "suffix_cost_usd": hc["cost_usd"],
                    "steps": (r["k_step"] or 0) + hc["steps"], "suffix_steps": hc["steps"]})
        out.append({**base, "episode_id": "__".join([f"{direction}-lc_full+hc_full", *stem]),
                    "strategy": f"{direction}:lc_full+hc_full", "cost_usd": _add(lc["cost_usd"], hc["cost_usd"]),
                    "prefix_cost_usd": lc["cost_usd"], "suffix_cost_usd": hc["cost_usd"],
                    "steps": lc["steps"] + hc["steps"], "suffix_steps": hc["steps"]})
    return out


def _add(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a + b, 6)


def prior_steps(run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Single-model runs per agent label from a prior run's trajectories: instance
    (``id@condition``), termination step, outcome and the trajectory itself (what percentiles,
    buckets and the replayed prefixes need). A run cut short (``complete`` False: a harness error,
    an interrupted run) gives no termination step, only a prefix to replay."""
    rd = RunDir(run_dir)
    paths = rd.trajectories()
    if not paths:
        raise ValueError(f"--prior {run_dir}: no trajectories there; give a run directory of single-model episodes")
    out: dict[str, list[dict[str, Any]]] = {}
    for p in paths:
        t = read_trajectory(p)
        if not t.of_type("handoff") and not t.header.get("forked_from"):
            out.setdefault(t.header.get("prefix") or t.header["agent"], []).append({
                "instance": f"{t.header['instance_id']}@{t.header['condition']}",
                "steps": max([s.index for s in t.steps], default=0),
                "resolved": bool((t.grade or {}).get("resolved")), "path": str(p), "complete": t.complete})
    return out
