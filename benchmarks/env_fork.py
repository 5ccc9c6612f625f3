"""How long ``Env.fork()`` takes on the local backend for a typical episode, against two
baselines in the same run: opening a fresh episode (``make`` + ``reset``: a new overlay over the
same layers) and the naive fork (copying the episode's whole merged workspace).

A typical episode: the oracle's first steps on a default-suite task (the failing test run, the
fix applied with edit_file), under several conditions (a fault's state is copied too). Target:
<= 50 ms. Needs root and a built task (``impasse tasks build``). Figures printed, never asserted.
"""

from __future__ import annotations

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
REPEAT = 15


def main() -> None:
    insts = [i for i in built_instances() if i.runtime_deps] or built_instances()
    if not insts:
        raise SystemExit("no built task: run `impasse tasks build` first")
    inst = insts[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for cond in CONDITIONS:
            env = impasse.env.make("blockers", task=inst.instance_id, condition=cond, out=tmp, episode_id=cond)
            with env:
                model = AgentSpec.parse("oracle").make_model(env.task, SUITE.agent_context(env))
                loop.run(env, model, LoopConfig(stop_at=3))
                if env.status != "live":
                    continue
                forks, fresh, naive = [], [], []
                for k in range(REPEAT):
                    t = time.perf_counter()
                    child = env.fork(episode_id=f"{cond}.f{k}")
                    forks.append((time.perf_counter() - t) * 1000)
                    child.close()
                    t = time.perf_counter()
                    other = impasse.env.make("blockers", task=inst.instance_id, condition=cond, out=tmp,
                                             episode_id=f"{cond}.n{k}")
                    other.reset()
                    fresh.append((time.perf_counter() - t) * 1000)
                    other.close()
                    t = time.perf_counter()
                    dest = Path(tmp) / f"copy-{cond}-{k}"
                    subprocess.run(["cp", "-a", str(env.sandbox.root / "workspace"), str(dest)], check=True)
                    naive.append((time.perf_counter() - t) * 1000)
                    shutil.rmtree(dest)
                rows += [(f"{cond}: fork() at step {env.steps}", percentiles(forks)),
                         (f"{cond}: baseline, a fresh episode", percentiles(fresh)),
                         (f"{cond}: baseline, copying the whole workspace", percentiles(naive))]
    print(f"task {inst.instance_id}; fork copies only the episode's writable layer (target <= 50 ms)")
    show("Env.fork() on the local backend", rows)


if __name__ == "__main__":
    main()
