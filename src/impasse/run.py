"""Runs: tasks x conditions x interfaces x agents, one trajectory per episode, resumable.

A run directory holds ``manifest.json`` (config, versions, seeds, the planned episodes),
``episodes/<episode_id>.jsonl`` (trajectories) and, at the end, ``summary.json`` and
SWE-bench ``predictions/*.jsonl``. ``--resume DIR`` finishes what is missing: complete episodes
are skipped, interrupted ones are rebuilt by re-executing their recorded actions in a fresh
sandbox and then continued, so no recorded step is lost and no episode runs twice.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

import impasse
from impasse.conditions.cards import card, select

RESTORE_NOTICE = ("[impasse harness] The environment was restored by an operator after your escalation: the "
                  "blocker is cleared and your saved changes are intact. Continue the task; {left} tool calls remain.")


class RunConfig(BaseModel):
    """Everything that decides what a run does. Stored in the manifest; resume reuses it."""

    suite: str = Field("default", description="Suite whose built tasks are used when --tasks is not given")
    tasks: list[str] = Field(default_factory=list, description="Instance ids (or unique prefixes)")
    per_package: int = Field(1, description="Instances per package when tasks come from the suite")
    limit: int | None = Field(None, description="At most this many task instances")
    conditions: str = Field("all", description="'all', names and/or classes, comma-separated")
    interfaces: list[str] = Field(default_factory=lambda: ["baseline", "tool", "monitor"])
    agents: list[str] = Field(default_factory=list, description="Reference profiles (when no model is set)")
    model: dict[str, Any] | None = Field(None, description="ModelConfig fields for an OpenAI-compatible endpoint")
    replay: str | None = Field(None, description="Trajectory file whose actions are re-executed")
    step_limit: int = 80
    command_timeout: float = 60.0
    restore: bool = Field(False, description="Restore the environment after an accepted escalation and go on")
    ticket_schema: Literal["impasse", "paper"] = Field(
        "impasse", description="Ticket fields escalate_to_human asks for: 'impasse' (with progress) or 'paper'")
    jobs: int = 2
    seed: int = 0


@dataclass(frozen=True)
class EpisodeSpec:
    episode_id: str
    instance_id: str
    condition: str
    interface: str
    agent: str


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")


def agent_labels(cfg: RunConfig) -> list[str]:
    if cfg.model:
        return [f"model/{cfg.model['model']}"]
    if cfg.replay:
        return [f"replay/{Path(cfg.replay).stem}"]
    return [f"reference/{a}" for a in cfg.agents]


def choose_instances(cfg: RunConfig) -> list[Any]:
    from impasse.tasks.build import all_instances
    from impasse.tasks.suite import load_suite

    insts = all_instances()
    if cfg.tasks:
        chosen = []
        for t in cfg.tasks:
            hits = [i for i in insts if i.instance_id == t] or [i for i in insts if i.instance_id.startswith(t)]
            if len(hits) != 1:
                raise ValueError(f"task {t!r}: {'no' if not hits else len(hits)} matching instances; "
                                 "see `impasse tasks list`")
            chosen.append(hits[0])
        return chosen[: cfg.limit] if cfg.limit else chosen
    suite = {(p.name.lower(), p.version) for p in load_suite(cfg.suite).packages}
    by_pkg: dict[str, list[Any]] = {}
    for i in insts:
        if (i.package.lower(), i.package_version) in suite:
            by_pkg.setdefault(i.package, []).append(i)
    if not by_pkg:
        raise ValueError(f"no built tasks for suite {cfg.suite!r}: run `impasse tasks build --suite {cfg.suite}` first")
    # Packages with a runtime dependency first, so that a small --limit still covers missing_dependency.
    order = sorted(by_pkg, key=lambda p: (not by_pkg[p][0].runtime_deps, p))
    chosen = [i for p in order for i in sorted(by_pkg[p], key=lambda i: i.instance_id)[: cfg.per_package]]
    rounds = [chosen[k::cfg.per_package] for k in range(cfg.per_package)]
    chosen = [i for r in rounds for i in r]
    return chosen[: cfg.limit] if cfg.limit else chosen


def plan(cfg: RunConfig) -> list[EpisodeSpec]:
    from impasse.conditions.episode import applies

    conditions = select(cfg.conditions)
    specs = []
    for inst in choose_instances(cfg):
        for cond in conditions:
            if not applies(card(cond), inst):
                continue
            for interface in cfg.interfaces:
                for agent in agent_labels(cfg):
                    eid = _slug(f"{agent.split('/', 1)[1]}__{interface}__{cond}__{inst.instance_id}")
                    specs.append(EpisodeSpec(eid, inst.instance_id, cond, interface, agent))
    return specs


def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(Path(__file__).parent), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5)
        return out.stdout.strip()
    except OSError:
        return ""


def write_manifest(run_dir: Path, cfg: RunConfig, specs: list[EpisodeSpec]) -> None:
    """The manifest, and the run's own copy of its task instances: a run is pinned to the exact
    instances and image builds it planned, whatever is rebuilt in the cache meanwhile."""
    from impasse.monitor.monitor import default_rules
    from impasse.tasks.build import all_instances
    from impasse.tasks.schema import write_jsonl

    run_dir.mkdir(parents=True, exist_ok=True)
    wanted = {s.instance_id for s in specs}
    write_jsonl([i for i in all_instances() if i.instance_id in wanted], run_dir / "instances.jsonl")
    manifest = {"format": "impasse.run/1", "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "impasse_version": impasse.__version__, "impasse_commit": _git_commit(),
                "python": sys.version.split()[0], "platform": platform.platform(),
                "monitor_rules_version": default_rules().version, "config": cfg.model_dump(),
                "episodes": [asdict(s) for s in specs]}
    tmp = run_dir / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=1))
    tmp.replace(run_dir / "manifest.json")


def read_manifest(run_dir: Path) -> tuple[RunConfig, list[EpisodeSpec]]:
    path = run_dir / "manifest.json"
    if not path.exists():
        raise FileNotFoundError(f"{run_dir} is not a run directory (no manifest.json)")
    data = json.loads(path.read_text())
    return RunConfig.model_validate(data["config"]), [EpisodeSpec(**e) for e in data["episodes"]]


# --------------------------------------------------------------------------------- one episode

_BACKEND = None


def _backend():
    global _BACKEND
    if _BACKEND is None:
        from impasse.sandbox.local import LocalBackend

        _BACKEND = LocalBackend()
    return _BACKEND


def make_model(cfg: RunConfig, spec: EpisodeSpec, inst: Any):
    if cfg.model:
        from impasse.agent.models import ModelConfig, OpenAIModel

        return OpenAIModel(ModelConfig(**cfg.model))
    if cfg.replay:
        from impasse.agent.reference import ReplayModel
        from impasse.store.trajectory import read_trajectory

        return ReplayModel(read_trajectory(Path(cfg.replay)).messages, Path(cfg.replay).stem)
    from impasse.agent.reference import ReferenceAgent
    from impasse.tasks.image import load_image

    image = load_image(inst.image)
    repo = image.layer / "workspace" / "repo"
    tests = {f: (repo / f).read_text(errors="replace") for f in {t.split("::")[0] for t in inst.FAIL_TO_PASS[:1]}
             if (repo / f).exists()}
    return ReferenceAgent(spec.agent.split("/", 1)[1], inst, tests)


def run_episode(spec: EpisodeSpec, cfg: RunConfig, run_dir: Path) -> dict[str, Any]:
    """Run (or finish) one episode; returns its short summary. Runs in a worker process."""
    from impasse.store.trajectory import TrajectoryWriter, read_trajectory, rewrite_without_torn_tail

    path = run_dir / "episodes" / f"{spec.episode_id}.jsonl"
    prior = None
    if path.exists():
        rewrite_without_torn_tail(path)
        prior = read_trajectory(path)
        if prior.complete:
            return summarize(prior)
        if prior.failed:  # a harness error: what it recorded is not trusted; start over, keep it aside
            archive_attempt(run_dir, path)
            prior = None
    inst = run_instance(run_dir, spec.instance_id)
    c = card(spec.condition)
    model = make_model(cfg, spec, inst)
    header = {"episode_id": spec.episode_id, "instance_id": inst.instance_id, "condition": spec.condition,
              "condition_class": c.cls, "interface": spec.interface, "agent": spec.agent, "agent_kind": model.kind,
              "step_limit": cfg.step_limit, "restore": cfg.restore, "ticket_schema": cfg.ticket_schema,
              "package": inst.package,
              "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    writer = TrajectoryWriter(path, header)
    try:
        result = _play(spec, cfg, inst, c, model, prior, writer, run_dir)
        writer.append({"type": "grade", **result})
        writer.append({"type": "final"})
    except Exception as e:
        # Recorded, never graded: `--resume` moves this trajectory aside and runs the episode again.
        writer.append({"type": "harness_error", "error": f"{type(e).__name__}: {e}",
                       "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        raise
    finally:
        writer.close()
    return summarize(read_trajectory(path))


def run_instance(run_dir: Path, instance_id: str) -> Any:
    """The instance as the run planned it (``RUN/instances.jsonl``); the cache's current one
    for a directory without that file (a bare episode, e.g. in tests)."""
    from impasse.tasks.build import all_instances
    from impasse.tasks.schema import read_instances

    pinned = run_dir / "instances.jsonl"
    insts = read_instances(pinned) if pinned.exists() else all_instances()
    found = next((i for i in insts if i.instance_id == instance_id), None)
    if found is None:
        raise ValueError(f"task {instance_id} is not among the run's instances ({pinned})")
    return found


def archive_attempt(run_dir: Path, path: Path) -> Path:
    """Move a failed attempt's trajectory to ``RUN/attempts/<episode>.<n>.jsonl`` (kept for
    inspection, out of the way of reports and resume)."""
    attempts = run_dir / "attempts"
    attempts.mkdir(exist_ok=True)
    n = 1 + len(list(attempts.glob(f"{path.stem}.*.jsonl")))
    dest = attempts / f"{path.stem}.{n}.jsonl"
    os.replace(path, dest)
    return dest


def _play(spec: EpisodeSpec, cfg: RunConfig, inst: Any, c: Any, model: Any, prior: Any, writer: Any,
          run_dir: Path) -> dict[str, Any]:
    """The episode itself: sandbox, (rebuilt) loop, endings, restoration; returns the grade."""
    from impasse.agent.loop import (
        ESCALATION_HINT,
        SYSTEM_PROMPT,
        AgentError,
        Completed,
        Escalated,
        Loop,
        LoopConfig,
        StepLimitReached,
        task_prompt,
    )
    from impasse.conditions.episode import open_episode
    from impasse.grade import grade
    from impasse.monitor.monitor import Monitor

    backend = _backend()
    sb = open_episode(backend, inst, spec.condition)
    try:
        monitor = (Monitor(diff_provider=sb.diff, escalation_available=True) if spec.interface == "monitor" else None)

        def after_step(call, output, exit_code):
            if monitor is None:
                return None
            nudge = monitor.observe(call, output, exit_code)
            return nudge.to_json() if nudge else None

        loop = Loop(model, sb, writer, spec.interface, LoopConfig(cfg.step_limit, cfg.command_timeout,
                                                                        ticket_schema=cfg.ticket_schema), after_step)
        events = prior.events if prior else []
        ended = [e for e in events if e["type"] == "ending"]
        restored = any(e["type"] == "restore" for e in events)
        if prior:
            _rebuild(prior.events, sb, loop, monitor, cfg)
            writer.append({"type": "resumed", "at_step": loop.steps,
                           "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        else:
            system = SYSTEM_PROMPT + ("\n" + ESCALATION_HINT if spec.interface != "baseline" else "")
            loop.add_message({"role": "system", "content": system})
            loop.add_message({"role": "user", "content": task_prompt(inst.problem_statement)})

        finished = bool(ended) and (restored or not cfg.restore or ended[-1]["ending"] != "escalated"
                                    or not ended[-1].get("accepted"))
        if ended and not finished and not restored:  # crashed between the escalation and the restoration
            _restore(sb, loop, writer, cfg)
            restored = True
        while not finished:
            try:
                pending = _pending_calls(loop.messages)
                for call in pending:
                    loop.execute(call)
                loop.run()
            except Completed as e:
                ending = {"ending": "completed", "verified": e.verified, "summary": e.summary}
            except Escalated as e:
                ending = {"ending": "escalated", "ticket": e.ticket.model_dump(),
                          "accepted": escalation_accepted(c, writer.path, loop.steps, e.ticket),
                          "workspace_diff": sb.diff()}
            except StepLimitReached:
                ending = {"ending": "step_limit"}
            except AgentError as e:
                ending = {"ending": "error", "error": str(e)}
            event = {"type": "ending", "phase": 2 if restored else 1, "steps": loop.steps, **ending}
            writer.append(event)
            ended.append(event)
            if (cfg.restore and ending["ending"] == "escalated" and ending.get("accepted") and not restored
                    and loop.steps < cfg.step_limit):
                _restore(sb, loop, writer, cfg)
                restored = True
                continue
            break
        patch = sb.diff()
    finally:
        sb.close()
    return grade(backend, inst, patch, cache_dir=run_dir / "grades")


def escalation_accepted(c: Any, trajectory: Path, steps: int, ticket: Any) -> bool:
    """The report's accepted-escalation predicate, applied live: t* from the steps recorded so
    far, the ticket's blocker dimension from the rubric judge. What restores is what is counted."""
    from impasse.annotate.annotator import annotate_steps
    from impasse.annotate.handoff import accepted_escalation
    from impasse.store.trajectory import read_trajectory
    from impasse.tickets.judge import judge_ticket

    done = [s for s in read_trajectory(trajectory).steps if s.index <= steps]
    core = annotate_steps(done, c, "escalated", steps)
    return accepted_escalation(c.semantics, "escalated", steps, core["t_star"], judge_ticket(ticket)["blocker"])


def _rebuild(events: list[dict[str, Any]], sb, loop, monitor, cfg: RunConfig) -> None:
    """Bring a fresh sandbox, the loop and the monitor to where an interrupted episode was, by
    re-executing its recorded actions (their recorded outputs stay as they were)."""
    from impasse.agent.tools import run_bash, run_edit

    for e in events:
        if e["type"] == "step":
            a = e.get("arguments") or {}
            if e["tool"] == "bash" and "command" in a:
                run_bash(sb, a["command"], cfg.command_timeout, 10)
            elif e["tool"] == "edit_file" and {"path", "old_str", "new_str"} <= set(a):
                run_edit(sb, a["path"], a["old_str"], a["new_str"])
            if monitor is not None:
                monitor.observe({"name": e["tool"], "arguments": a}, e.get("output", ""), e.get("exit_code"))
        elif e["type"] == "restore":
            sb.restore()
        if "message" in e:
            loop.messages.append(e["message"])
    loop.steps = max([e["step"] for e in events if e["type"] == "step"], default=0)


def _restore(sb, loop, writer, cfg: RunConfig) -> None:
    sb.restore()
    writer.append({"type": "restore", "step": loop.steps})
    loop.add_message({"role": "user", "content": RESTORE_NOTICE.format(left=cfg.step_limit - loop.steps)})


def _pending_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls of the last assistant message that have no result yet (a crash mid-call)."""
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    for m in reversed(messages):
        if m.get("role") == "assistant":
            return [c for c in m.get("tool_calls") or [] if c.get("id") not in answered]
    return []


def summarize(traj) -> dict[str, Any]:
    h = traj.header
    endings = traj.endings
    g = traj.grade or {}
    return {"episode_id": h["episode_id"], "agent": h["agent"], "interface": h["interface"],
            "condition": h["condition"], "condition_class": h["condition_class"],
            "instance_id": h["instance_id"], "ending": endings[0]["ending"] if endings else None,
            "final_ending": endings[-1]["ending"] if endings else None,
            "steps": max([s.index for s in traj.steps], default=0), "resolved": bool(g.get("resolved")),
            "nudges": len(traj.of_type("nudge")), "restored": bool(traj.of_type("restore"))}


# --------------------------------------------------------------------------------- a whole run


def _worker_init() -> None:
    """Workers die with the run: a SIGKILLed ``impasse run`` must not leave episodes running."""
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() == 1:  # the parent died before we got here
        os._exit(1)


def _episode_job(spec_dict: dict[str, Any], cfg_json: str, run_dir: str) -> dict[str, Any]:
    spec = EpisodeSpec(**spec_dict)
    try:
        return run_episode(spec, RunConfig.model_validate_json(cfg_json), Path(run_dir))
    except Exception as e:  # noqa: BLE001 - one broken episode must not sink the run; it is reported
        return {"episode_id": spec.episode_id, "agent": spec.agent, "interface": spec.interface,
                "condition": spec.condition, "instance_id": spec.instance_id, "ending": "harness_error",
                "final_ending": "harness_error", "error": f"{type(e).__name__}: {e}", "steps": 0,
                "resolved": False, "nudges": 0}


def execute(run_dir: Path, cfg: RunConfig, specs: list[EpisodeSpec],
            on_done: Callable[[dict[str, Any]], None] = lambda _r: None) -> list[dict[str, Any]]:
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from impasse.sandbox.local import sweep_stale

    sweep_stale()  # episodes of a killed earlier run: unmount and remove before anything else
    results = []
    if cfg.jobs <= 1:
        for s in specs:
            r = _episode_job(asdict(s), cfg.model_dump_json(), str(run_dir))
            results.append(r)
            on_done(r)
    else:
        with ProcessPoolExecutor(max_workers=cfg.jobs, initializer=_worker_init) as pool:
            futs = [pool.submit(_episode_job, asdict(s), cfg.model_dump_json(), str(run_dir)) for s in specs]
            for f in as_completed(futs):
                r = f.result()
                results.append(r)
                on_done(r)
    order = {s.episode_id: k for k, s in enumerate(specs)}
    results.sort(key=lambda r: order.get(r["episode_id"], 0))
    (run_dir / "summary.json").write_text(json.dumps(results, indent=1))
    export_predictions(run_dir)
    return results


def export_predictions(run_dir: Path) -> None:
    """SWE-bench predictions, one file per (agent, interface, condition)."""
    from impasse.store.trajectory import read_trajectory

    groups: dict[str, list[dict[str, Any]]] = {}
    for p in sorted((run_dir / "episodes").glob("*.jsonl")):
        t = read_trajectory(p)
        if not t.complete:
            continue
        h = t.header
        key = _slug(f"{h['agent'].split('/', 1)[-1]}.{h['interface']}.{h['condition']}")
        groups.setdefault(key, []).append({"instance_id": h["instance_id"], "model_name_or_path": h["agent"],
                                           "model_patch": (t.grade or {}).get("model_patch", "")})
    out = run_dir / "predictions"
    out.mkdir(exist_ok=True)
    for key, rows in groups.items():
        (out / f"{key}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
