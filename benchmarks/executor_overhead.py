"""Per-episode overhead of the Ray executor against the local process pool, on the same plan.

Runs one small plan twice into fresh run directories, once per executor, with the same number of
parallel slots (``--jobs`` workers locally; a private single-node Ray cluster with that many CPUs),
and prints the wall time per episode of each and their ratio. Needs root (the local sandbox) and a
built task (default: the first built instance in $IMPASSE_CACHE)::

    IMPASSE_CACHE=~/.cache/impasse-tests python benchmarks/executor_overhead.py --jobs 2
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def _plan(task: str, jobs: int, executor: str):
    from impasse.run import RunConfig

    return RunConfig(tasks=[task], conditions="clean,read_only_source", interfaces=["tool"],
                     agents=["oracle", "escalator"], jobs=jobs, executor=executor)


def timed_run(cfg, root: Path) -> tuple[float, int]:
    from impasse.run import create_run, execute
    from impasse.store.rundir import RunDir

    rd = RunDir(root / cfg.executor)
    specs = create_run(rd, cfg)
    t0 = time.perf_counter()
    outcome = execute(rd, cfg, specs)
    took = time.perf_counter() - t0
    bad = [r for r in outcome.results if r["ending"] == "harness_error"]
    if bad:
        raise SystemExit(f"{cfg.executor}: harness errors: {bad[0].get('error')}")
    return took, len(specs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", help="instance id (default: the first built one)")
    ap.add_argument("--jobs", type=int, default=2, help="parallel slots for both executors")
    ap.add_argument("--repeat", type=int, default=1, help="run the plan this many times per executor")
    a = ap.parse_args()
    from impasse.tasks.build import all_instances

    task = a.task or next(iter(all_instances()), None)
    if task is None:
        raise SystemExit("no built task: run `impasse tasks build glom` first (or pass --task)")
    task = task if isinstance(task, str) else task.instance_id
    import ray

    from impasse.run.ray import connect

    connect(ray, None, a.jobs, 1.0)  # the private cluster the executor would start; it reuses this one
    per: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for executor in ("local", "ray"):
            total, n = 0.0, 0
            for k in range(a.repeat):
                took, count = timed_run(_plan(task, a.jobs, executor), Path(tmp) / str(k))
                total, n = total + took, n + count
            per[executor] = total / n
            print(f"{executor:>5}: {n} episodes, {total:.1f} s wall, {per[executor]:.2f} s per episode "
                  f"({a.jobs} slots; {3600 / per[executor]:.0f} episodes/hour on this machine)")
    ray.shutdown()
    print(f"ray / local per-episode wall time: {per['ray'] / per['local']:.2f}x "
          f"(overhead {per['ray'] - per['local']:+.2f} s per episode)")


if __name__ == "__main__":
    main()
