"""Docker backend vs local backend: the main job's plan on both, compared episode by episode.

Both backends realise every blocker condition with real faults; the annotations of an episode
(first contact, t*, ending, unsafe, resolved) must therefore not depend on which backend ran it.
This runs the default ``impasse run`` plan (reference agents) on ``--backend docker`` and on the
local backend, writes each run's ``report.json`` and prints, per field, how many of the episodes
both runs hold agree, then every disagreement with its episode id.

    python benchmarks/docker_agreement.py                          # the whole main-job plan, both backends
    python benchmarks/docker_agreement.py --local-run runs/latest  # reuse a local run of the plan
    python benchmarks/docker_agreement.py --local-run A --local-run B --docker-run C --docker-run D  # parts
    python benchmarks/docker_agreement.py --limit 1 --agents escalator,oracle   # a subset of the plan

Needs root for the local backend, a Docker-API engine (``scripts/engine.sh``) and the default
suite built (``impasse tasks build --suite default``). Exit 0 when every compared episode agrees,
1 on any disagreement, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).parent))

from compare_reports import differences  # noqa: E402

FIELDS = ("first_contact", "t_star", "ending", "unsafe", "resolved")
"""The annotations the issue names (contact, t*, ending, unsafe) and the grade."""


def main_job_plan(limit: int | None) -> list[Any]:
    """The episodes ``impasse run`` with no arguments plans (its task slice of the built suite)."""
    from impasse.cli.run import DEFAULT_AGENTS, MAIN_JOB, _config
    from impasse.run import plan

    cfg = _config("blockers", "default", None, "all", "baseline,tool,monitor", DEFAULT_AGENTS, None, None, 2,
                  None, None, 80, False, "local", "local", None)
    specs = plan(cfg)
    if limit is not None:
        keep = list(dict.fromkeys(s.instance_id for s in specs))[:limit]
        specs = [s for s in specs if s.instance_id in keep]
    if not specs:
        sys.exit(f"the main job's plan is empty: build the default suite first ({MAIN_JOB}: "
                 "`impasse tasks build --suite default`)")
    return specs


def select(specs: list[Any], conditions: str | None, interfaces: str | None, agents: str | None) -> list[Any]:
    """The plan's episodes matching every given filter (comma-separated names)."""
    def pick(value: str, allowed: str | None) -> bool:
        return allowed is None or value in {a.strip() for a in allowed.split(",")}

    return [s for s in specs if pick(s.condition, conditions) and pick(s.interface, interfaces)
            and pick(s.agent.split("/", 1)[-1], agents)]


def run_args(specs: list[Any]) -> list[str]:
    """``impasse run`` arguments planning exactly ``specs`` (a product: checked by the caller)."""
    def join(xs: Any) -> str:
        return ",".join(dict.fromkeys(xs))

    return ["--tasks", join(s.instance_id for s in specs), "--conditions", join(s.condition for s in specs),
            "--interfaces", join(s.interface for s in specs), "--agent", join(s.agent.split("/", 1)[-1] for s in specs)]


def run_backend(backend: str, specs: list[Any], out: Path, jobs: int) -> tuple[Path, float]:
    """One run of ``specs`` on ``backend`` (resumed if ``out`` already holds it); its report.json."""
    cli = [sys.executable, "-m", "impasse.cli"]
    cmd = (cli + ["run", "--resume", str(out)] if (out / "manifest.json").exists()
           else cli + ["run", *run_args(specs), "--backend", backend, "--jobs", str(jobs), "--out", str(out)])
    t0 = time.monotonic()
    print(f"[{backend}] {' '.join(cmd[2:])}", flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.monotonic() - t0
    if proc.returncode not in (0, 1):  # 1: some episode ended in a harness error; the comparison shows it
        sys.exit(f"[{backend}] impasse run failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return report_of(out), took


def report_of(run_dir: Path) -> Path:
    """The run's report.json, written now, holding only the episodes finished before it was
    written (an unfinished run is still going or was stopped: its unfinished episodes count as
    missing, not as disagreeing)."""
    done = {p.stem for p in (run_dir / "episodes").glob("*.jsonl") if finished(p)}
    path = run_dir / "report.json"
    proc = subprocess.run([sys.executable, "-m", "impasse.cli", "report", str(run_dir), "--json", str(path)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"impasse report {run_dir} failed:\n{proc.stderr[-2000:]}")
    report = json.loads(path.read_text())
    path.write_text(json.dumps({**report, "episodes": [e for e in report["episodes"] if e["episode_id"] in done]}))
    return path


def finished(path: Path) -> bool:
    """The trajectory ends with its final event."""
    lines = path.read_text().strip().splitlines()
    try:
        return bool(lines) and json.loads(lines[-1]).get("type") == "final"
    except json.JSONDecodeError:  # a torn last line: the episode is still being written
        return False


def agreement(local: dict, docker: dict, wanted: set[str]) -> tuple[int, dict[str, int], list[str]]:
    """(episodes compared, agreeing episodes per field, every disagreement) over ``wanted`` ids
    that both reports hold."""
    def only(rep: dict) -> dict:
        return {**rep, "episodes": [e for e in rep["episodes"] if e["episode_id"] in wanted]}

    a, b = only(local), only(docker)
    both = {e["episode_id"] for e in a["episodes"]} & {e["episode_id"] for e in b["episodes"]}
    diffs = differences(a, b, FIELDS, common_only=True)
    per_field = {f: len(both) - sum(1 for d in diffs if d.split(": ")[1] == f) for f in FIELDS}
    return len(both), per_field, diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / f"agreement-{time.strftime('%Y%m%d-%H%M%S')}",
                    help="where the two runs go (OUT/local, OUT/docker); an existing one is resumed")
    ap.add_argument("--local-run", type=Path, action="append",
                    help="an existing local run of (part of) the plan, not rerun; repeatable")
    ap.add_argument("--docker-run", type=Path, action="append",
                    help="an existing Docker run of (part of) the plan, not rerun; repeatable")
    ap.add_argument("--limit", type=int, help="only the plan's first N tasks")
    ap.add_argument("--conditions", help="only these conditions (comma-separated)")
    ap.add_argument("--interfaces", help="only these interfaces (comma-separated)")
    ap.add_argument("--agents", help="only these reference agents (comma-separated)")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    for p in [*(args.local_run or []), *(args.docker_run or [])]:
        if not (p / "manifest.json").exists():
            print(f"{p} is not a run directory (no manifest.json)", file=sys.stderr)
            return 2
    specs = select(main_job_plan(args.limit), args.conditions, args.interfaces, args.agents)
    if not specs:
        print("the filters leave no episode of the main job's plan; check the names", file=sys.stderr)
        return 2
    wanted = {s.episode_id for s in specs}
    print(f"{len(specs)} episodes of the main job's plan: {len({s.instance_id for s in specs})} tasks, "
          f"{len({s.condition for s in specs})} conditions, {len({s.interface for s in specs})} interfaces, "
          f"{len({s.agent for s in specs})} agents")
    reports, took = {}, {}
    for backend, given in (("local", args.local_run), ("docker", args.docker_run)):
        if given:
            reports[backend] = {"episodes": [e for run in given for e in json.loads(report_of(run).read_text())["episodes"]]}
            continue
        path, took[backend] = run_backend(backend, specs, args.out / backend, args.jobs)
        reports[backend] = json.loads(path.read_text())
    for backend, secs in took.items():
        print(f"[{backend}] {secs / 60:.1f} min wall, {secs / len(specs):.1f} s per episode")
    n, per_field, diffs = agreement(reports["local"], reports["docker"], wanted)
    print(f"{n} episodes compared (of {len(wanted)} planned)")
    for f, ok in per_field.items():
        print(f"  {f:<14} {ok}/{n} agree")
    if n < len(wanted):
        print(f"  {len(wanted) - n} planned episodes unfinished or missing in a run (--out resumes an unfinished one)")
    for d in diffs:
        print("  disagreement " + d)
    return 1 if diffs or n < len(wanted) else 0


if __name__ == "__main__":
    sys.exit(main())
