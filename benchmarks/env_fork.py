"""How long ``Env.fork()`` takes for a typical episode, on the local backend and on the Docker
backend, against baselines in the same run: opening a fresh episode (``make`` + ``reset``: on
local a new overlay over the same layers, on Docker a new container with the workspace copied in
from the image) and, on local, the naive fork (copying the episode's whole merged workspace).

A typical episode: the oracle's first steps on a default-suite task (the failing test run, the
fix applied with edit_file), under several conditions (a fault's state is copied too). Target on
local: <= 50 ms; on Docker a fork is a new container, so the baseline to beat is a fresh episode.
Needs root and a built task (``impasse tasks build``); Docker needs an engine (scripts/engine.sh).
Figures printed, never asserted.

    python benchmarks/env_fork.py [--backend local docker] [--repeat N]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import percentiles, show  # noqa: E402

import impasse.env  # noqa: E402
from impasse.agent import loop  # noqa: E402
from impasse.agent.agents import AgentSpec  # noqa: E402
from impasse.agent.loop import LoopConfig  # noqa: E402
from impasse.suites.blockers import SUITE, built_instances  # noqa: E402

CONDITIONS = ("clean", "read_only_source", "text_file_busy", "test_killed", "missing_dependency", "disk_full")
REPEAT = {"local": 15, "docker": 5}


def _ms(fn) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t) * 1000, out


def _naive_copy(env, dest: Path) -> float:
    """Copying the whole merged workspace of a local episode (what a fork without layers would do)."""
    t = time.perf_counter()
    subprocess.run(["cp", "-a", str(env.sandbox.root / "workspace"), str(dest)], check=True)
    took = (time.perf_counter() - t) * 1000
    shutil.rmtree(dest)
    return took


def measure(backend: str, inst, cond: str, repeat: int, tmp: str) -> list[tuple[str, dict]]:
    spec = {"task": inst.instance_id, "condition": cond, "out": tmp, "backend": backend}
    with impasse.env.make("blockers", episode_id=f"{backend}-{cond}", **spec) as env:
        model = AgentSpec.parse("oracle").make_model(env.task, SUITE.agent_context(env))
        loop.run(env, model, LoopConfig(stop_at=3))
        if env.status != "live":
            return []
        forks, fresh, naive = [], [], []
        for k in range(repeat):
            took, child = _ms(lambda k=k: env.fork(episode_id=f"{backend}-{cond}.f{k}"))
            forks.append(took)
            child.close()
            other = impasse.env.make("blockers", episode_id=f"{backend}-{cond}.n{k}", **spec)
            fresh.append(_ms(other.reset)[0])
            other.close()
            if backend == "local":
                naive.append(_naive_copy(env, Path(tmp) / f"copy-{cond}-{k}"))
        rows = [(f"{cond}: fork() at step {env.steps}", percentiles(forks)),
                (f"{cond}: baseline, a fresh episode", percentiles(fresh))]
        if naive:
            rows.append((f"{cond}: baseline, copying the whole workspace", percentiles(naive)))
        return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", nargs="+", choices=sorted(REPEAT), default=["local"])
    ap.add_argument("--repeat", type=int, help="forks per condition (default: 15 local, 5 Docker)")
    ap.add_argument("--conditions", nargs="+", default=list(CONDITIONS))
    args = ap.parse_args()
    insts = [i for i in built_instances() if i.runtime_deps] or built_instances()
    if not insts:
        raise SystemExit("no built task: run `impasse tasks build` first")
    inst = insts[0]
    print(f"task {inst.instance_id}")
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.backend:
            rows = []
            for cond in args.conditions:
                rows += measure(backend, inst, cond, args.repeat or REPEAT[backend], tmp)
            what = ("copies only the episode's writable layer (target <= 50 ms)" if backend == "local" else
                    "a new container holding the parent's writable state (packed, carried, unpacked)")
            show(f"Env.fork() on the {backend} backend: {what}", rows)


if __name__ == "__main__":
    main()
