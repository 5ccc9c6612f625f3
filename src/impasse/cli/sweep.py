"""``impasse run --sweep FILE``, ``--dry-run`` and ``impasse status``: a sweep's runs (one per
suite, one shared ledger), the plan with its estimate before anything starts, and the spend
against each ceiling with an ETA while (or after) it runs. Thin shells over
:mod:`impasse.run.sweep` and :mod:`impasse.run.estimate`."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from impasse.cli.common import console, fail, out

SWEEP_FILE = "sweep.json"


# ------------------------------------------------------------------ the plan (--dry-run)


def prior_figures(run: Path | None) -> dict[str, dict[str, float]] | None:
    """``--estimate-from RUN``: per-episode figures measured in a prior run (or sweep) directory."""
    from impasse.run.budget import Ledger
    from impasse.run.estimate import measured

    if run is None:
        return None
    ledgers = [run / "usage.jsonl"] if (run / "usage.jsonl").exists() else sorted(run.glob("*/usage.jsonl"))
    rows = [r for p in ledgers for r in Ledger(p).rows()]
    if not rows:
        raise ValueError(f"--estimate-from {run}: no model calls recorded there (usage.jsonl); give a run "
                         "that called models, or leave it out to use the stated assumptions")
    return measured(rows)


def print_plan(planned: list[tuple[str, Any, list[Any]]], prior: dict[str, dict[str, float]] | None) -> None:
    """The plan's counts and its estimate (tokens, cost, wall time) with where each comes from."""
    from impasse.run.budget import Ceiling
    from impasse.run.estimate import completion_caps, duration, estimate_plan, plan_counts

    counts = plan_counts([(suite, specs) for suite, _cfg, specs in planned])
    table = Table(title="plan: episodes per model x suite x condition x interface")
    for col in ("model", "suite", "condition", "interface", "episodes"):
        table.add_column(col, no_wrap=True)
    for (model, suite, cond, iface), n in sorted(counts.items()):
        table.add_row(model, suite, cond, iface, str(n))
    out.print(table)
    cfg = planned[0][1]
    est = estimate_plan(counts, cfg.spend.table, prior, cfg.jobs, cfg.spend.rpm, cfg.step_limit,
                        completion_caps(cfg.models, cfg.model))
    t = Table(title="estimate")
    for col in ("model", "episodes", "calls", "prompt tokens", "completion tokens", "cost", "episode time", "from"):
        t.add_column(col, no_wrap=True)
    for model, m in est["models"].items():
        cost = f"${m['cost_usd']:.4f}" if m["cost_usd"] is not None else "unpriced"
        t.add_row(model, str(m["episodes"]), str(m["calls"]), str(m["prompt_tokens"]), str(m["completion_tokens"]),
                  cost, duration(m["episode_seconds"]), m["source"])
    out.print(t)
    total = f"${est['cost_usd']:.4f}" if est["cost_usd"] is not None else "unknown (a model has no price)"
    out.print(f"total: {est['episodes']} episodes, {est['calls']} model calls, {est['tokens']} tokens, cost {total}, "
              f"wall time ~{duration(est['wall_seconds'])} on {cfg.jobs} worker(s)")
    for who, cap, cost in [("the run's", cfg.spend.max_cost, est["cost_usd"])] + [
            (f"{m}'s", (cfg.spend.ceiling_of(m) or Ceiling()).max_cost, e["cost_usd"]) for m, e in est["models"].items()]:
        if cap is not None and cost is not None and cost > cap:
            out.print(f"[yellow]the estimate (${cost:.4f}) is above {who} --max-cost ${cap:g}: it would pause there[/]")
    if est["assumptions"]:
        capped = any("max_tokens" in m["source"] for m in est["models"].values())
        out.print("assumed per episode (no --estimate-from run): "
                  + ", ".join(f"{k.replace('_', ' ')} {v:g}" for k, v in est["assumptions"].items())
                  + ("; a model's max_tokens caps its completion tokens per call (see 'from')" if capped else ""))
    out.print("dry run: nothing was called and nothing was written")


# ------------------------------------------------------------------ sweeps


def plan_sweep(path: Path, out_dir: Path) -> tuple[Any, list[tuple[str, Any, Any]]]:
    """The sweep file checked whole and every run planned, before any network call."""
    from impasse import run as runner
    from impasse.run.sweep import load_sweep, run_configs

    sweep = load_sweep(path)
    planned = []
    for name, cfg in run_configs(sweep, out_dir):
        try:
            runner.check(cfg)
            planned.append((name, cfg, runner.suite_of(cfg).plan(cfg)))
        except ValueError as e:
            raise ValueError(f"--sweep {path}: suite {name!r}: {e}") from None
    return sweep, planned


def run_sweep(path: Path, out_dir: Path | None, dry_run: bool, estimate_from: Path | None) -> None:
    from impasse import run as runner
    from impasse.cli.run import preflight_endpoints

    out_dir = out_dir or Path("runs") / f"sweep-{time.strftime('%Y%m%d-%H%M%S')}"
    if (out_dir / SWEEP_FILE).exists() or (out_dir / "manifest.json").exists():
        raise ValueError(f"{out_dir} already holds a sweep or run; use --resume {out_dir} or another --out")
    sweep, planned = plan_sweep(path, out_dir)
    if dry_run:
        print_plan([(n, c, p[0]) for n, c, p in planned], prior_figures(estimate_from))
        return
    preflight_endpoints(planned[0][1])  # every model, once: they are the same in every run
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / SWEEP_FILE).write_text(json.dumps({"file": str(path), "sweep": sweep.model_dump(mode="json"),
                                                  "runs": [n for n, _c, _p in planned]}, indent=2))
    from impasse.store.rundir import RunDir

    def start(name: str, cfg: Any, plan: Any) -> tuple[Any, list[Any]]:
        rd = RunDir(out_dir / name)
        with rd.own():
            return rd, runner.create_run(rd, cfg, plan)

    _execute_all(out_dir, [(n, c, p) for n, c, p in planned], start)


def resume_sweep(out_dir: Path, spend: dict[str, Any], jobs: int | None) -> None:
    """``--resume SWEEP``: each of its runs resumed (or started, if the sweep paused before it),
    with the limits given now."""
    from impasse import run as runner
    from impasse.cli import ops_run as ops
    from impasse.cli.run import preflight_endpoints
    from impasse.run.sweep import Sweep, run_configs
    from impasse.store.rundir import RunDir

    doc = json.loads((out_dir / SWEEP_FILE).read_text())
    items = []
    for name, fresh_cfg in run_configs(Sweep.model_validate(doc["sweep"]), out_dir):
        rd = RunDir(out_dir / name)
        if rd.exists():
            cfg, specs = runner.read_run(rd)
            cfg = ops.override_on_resume(rd, cfg, spend)
        else:
            cfg, specs = fresh_cfg, None
            ops.apply_spend(cfg, spend)
            runner.check(cfg)
        if jobs is not None:
            cfg.jobs = jobs
        items.append((name, cfg, specs))
    preflight_endpoints(items[0][1])

    def start(name: str, cfg: Any, specs: Any) -> tuple[Any, list[Any]]:
        rd = RunDir(out_dir / name)
        return rd, (specs if specs is not None else runner.create_run(rd, cfg))

    _execute_all(out_dir, items, start)


def _execute_all(out_dir: Path, items: list[tuple[str, Any, Any]], start: Any) -> None:
    """Each run in turn; the sweep's ceiling stops the sweep, a model's own only that model."""
    from impasse.cli.run import PAUSED_EXIT, execute_run
    from impasse.run.budget import Ledger

    ledger = Ledger(out_dir / "usage.jsonl")
    ledger.new_session()
    paused, failed = False, False
    for name, cfg, plan in items:
        rd, specs = start(name, cfg, plan)
        console.print(f"[bold]sweep {out_dir}: suite {name}[/]")
        with rd.own():
            try:
                execute_run(rd, cfg, specs, fresh=False)
            except typer.Exit as e:
                paused |= e.exit_code == PAUSED_EXIT
                failed |= e.exit_code not in (0, PAUSED_EXIT)
                if "*" in ledger.state().get("paused", {}):
                    console.print("[bold yellow]the sweep's ceiling is reached: its other suites wait for "
                                  f"`impasse run --resume {out_dir}`[/]")
                    break
    console.print(f"sweep {out_dir}: runs {', '.join(n for n, _c, _p in items)}; next: `impasse status {out_dir}`, "
                  f"`impasse report {' '.join(str(out_dir / n) for n, _c, _p in items)}`")
    if paused:
        raise typer.Exit(PAUSED_EXIT)
    if failed:
        raise typer.Exit(1)


# ------------------------------------------------------------------ status


def run_status(rd: Any) -> dict[str, Any]:
    """A run's progress from its files alone: episodes finished, spend per ceiling, and where it
    stands: ``running`` (a process holds its lock: with an ETA), ``paused`` (a ceiling holds, or
    episodes paused and nobody runs it: no ETA, it waits for ``--resume``), ``stopped`` (nobody
    runs it and it is not done) or ``finished``. Who holds the lock is read from the kernel's
    table, never probed; where that table is not complete (in a container) an unpaused run counts
    as running."""
    from impasse import run as runner
    from impasse.locks import listed
    from impasse.run.budget import Ledger
    from impasse.run.config import ledger_of
    from impasse.run.estimate import eta_seconds

    cfg, specs = runner.read_run(rd)
    ledger = Ledger(ledger_of(cfg, rd))
    state = _peek(ledger)
    started = state.get("session_started")
    done = paused = session_done = 0
    for p in rd.trajectories():
        last = _last_type(p)
        done += last == "final"
        paused += last == "paused"
        session_done += bool(last == "final" and started and p.stat().st_mtime >= started)
    owners = listed([rd.lock])
    running = None if owners is None else bool(owners)  # None: not knowable without a probe
    where = ("finished" if done >= len(specs) else "paused" if state.get("paused") or (paused and running is False)
             else "stopped" if running is False else "running")
    elapsed = time.time() - started if started else None
    eta = eta_seconds(session_done, session_done + len(specs) - done, elapsed) if elapsed and where == "running" \
        else None
    models = [a.split(":", 1)[-1] for a in cfg.agents if a.startswith("openai:")] or (
        [cfg.model["model"]] if cfg.model else [])
    return {"run": str(rd.path), "planned": len(specs), "complete": done, "paused": paused, "state": where,
            "spent": state.get("spent", {}), "pauses": state.get("paused", {}), "eta_seconds": eta,
            "cfg": cfg, "models": models}


def standing(s: dict[str, Any], resume: str) -> str:
    """The status line's tail: the ETA of a running run, else why there is none."""
    from impasse.run.estimate import duration

    return {"running": f"ETA {duration(s['eta_seconds'])}", "finished": "finished",
            "paused": f"paused: no ETA until `impasse run --resume {resume}`",
            "stopped": f"not running: `impasse run --resume {resume}` goes on"}[s["state"]]


def _last_type(path: Path) -> str | None:
    """The type of a trajectory's last whole event, from its tail alone (a status of a run of
    thousands of episodes must not parse them all); a torn last line is skipped, as readers do."""
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        fh.seek(max(0, fh.tell() - 65536))
        lines = fh.read().splitlines()
    for line in reversed(lines):
        try:
            return json.loads(line).get("type")
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
            continue
    return None


def _peek(ledger: Any) -> dict[str, Any]:
    """The ledger's state without taking its lock (a reader must never slow the run's workers).
    Its running totals hold only if no row was booked since they were written; else they are
    summed from the rows, and what does not depend on the rows (the session's start, the pauses)
    is kept (dropping the start made the ETA vanish whenever a call was being booked)."""
    state: dict[str, Any] = {}
    try:
        state = json.loads(ledger.state_path.read_text())
        size = ledger.path.stat().st_size if ledger.path.exists() else 0  # no call booked yet: no ledger file
        if state.get("ledger_bytes") == size:
            return state
    except (OSError, json.JSONDecodeError):
        pass
    from impasse.run.budget import totals

    return {**{k: state[k] for k in ("session_started", "paused") if k in state}, "spent": totals(ledger.rows())}


def _handoff_status(run: Path) -> bool:
    """An ``impasse handoff`` directory (its manifest is not a run's): its episodes, finished or not."""
    try:
        doc = json.loads((run / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(doc, dict) or doc.get("format") != "impasse.handoff/1":
        return False
    paths = sorted((run / "episodes").glob("*.jsonl"))
    done = sum(1 for p in paths if _last_type(p) == "final")
    state = "finished (see report.md)" if (run / "summary.json").exists() else \
        "not finished: the same `impasse handoff` command goes on"
    out.print(f"{run}: handoff run, {done}/{len(paths)} episodes complete; {state}")
    return True


def status_cmd(run: Annotated[Path, typer.Argument(help="A run or sweep directory (running or not)")],
               as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text")] = False) -> None:
    """A run's (or sweep's) episodes done, spend against each ceiling and ETA, from another terminal."""
    from impasse.run.estimate import spend_lines
    from impasse.store.rundir import RunDir, RunDirError

    dirs = [run / n for n in json.loads((run / SWEEP_FILE).read_text())["runs"]] if (run / SWEEP_FILE).exists() \
        else [run]
    if len(dirs) == 1 and _handoff_status(run):
        return
    try:
        stats = [run_status(RunDir(d)) for d in dirs if RunDir(d).exists()]
    except (RunDirError, ValueError, OSError) as e:
        raise fail(f"{run}: {e}") from e
    if not stats:
        raise fail(f"{run}: no run directory there (manifest.json)")
    if as_json:
        out.print_json(json.dumps([{k: v for k, v in s.items() if k != "cfg"} for s in stats], default=str))
        return
    for s in stats:
        out.print(f"{s['run']}: {s['complete']}/{s['planned']} episodes complete"
                  + (f", {s['paused']} paused" if s["paused"] else "") + f", {standing(s, str(run))}")
        for line in spend_lines(s["cfg"].spend, s["spent"], s["models"], "sweep" if s["cfg"].ledger else "run"):
            out.print(f"  spend {line}")
        for scope, why in s["pauses"].items():
            out.print(f"  [yellow]paused[/] {'the run' if scope == '*' else scope}: {why}")
