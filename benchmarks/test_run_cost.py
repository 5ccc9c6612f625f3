"""What one run of a task's failing tests costs in the sandbox: the unit of a reference episode's work.

A reference agent reproduces and re-checks with ``<test_cmd> <up to 3 FAIL_TO_PASS ids>``, and the
grinding profiles repeat it dozens of times, so this cost, times the runs an episode makes, is
most of an episode's time. For each task (instance id or unique prefix), in one clean episode,
the runs alternate across tasks (``--rounds`` rounds, so a busy machine slows them alike) and each
is measured as the CPU time of its process tree (``getrusage`` of the children, inside the
sandbox) and its wall time; ``import <package>`` alone is measured the same way. CPU time moves
much less than wall time on a shared machine. Needs root and the tasks built in ``$IMPASSE_CACHE``.

    python benchmarks/test_run_cost.py TASK [TASK ...] [--rounds 5]
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from impasse.sandbox.registry import get_backend  # noqa: E402
from impasse.tasks.build import all_instances  # noqa: E402
from impasse.tasks.episode import open_episode  # noqa: E402
from impasse.tasks.lookup import find_instance  # noqa: E402

WRAP = ("import resource, subprocess, sys; subprocess.run(sys.argv[1], shell=True, capture_output=True); "
        "r = resource.getrusage(resource.RUSAGE_CHILDREN); print(r.ru_utime + r.ru_stime)")


def measured(sb, command: str) -> tuple[float, float]:
    """(CPU seconds of the command's process tree, wall seconds) inside the sandbox."""
    res = sb.exec(f"/workspace/.venv/bin/python -c {shlex.quote(WRAP)} {shlex.quote(command)}", timeout=300)
    return float(res.stdout.strip().splitlines()[-1]), res.duration_s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tasks", nargs="+")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    insts = all_instances()
    tasks = [find_instance(t, insts) for t in a.tasks]
    backend = get_backend("local")
    runs: dict[str, dict[str, list[tuple[float, float]]]] = {t.instance_id: {"tests": [], "import": []} for t in tasks}
    with ExitStack() as stack:
        boxes = [stack.enter_context(open_episode(backend, t, "clean")) for t in tasks]
        for inst, sb in zip(tasks, boxes, strict=True):  # a first run compiles the repo's bytecode: not counted
            sb.exec(f"{inst.test_cmd} {' '.join(shlex.quote(x) for x in inst.FAIL_TO_PASS[:3])}", timeout=300)
        for _ in range(a.rounds):
            for inst, sb in zip(tasks, boxes, strict=True):
                ids = " ".join(shlex.quote(x) for x in inst.FAIL_TO_PASS[:3])
                module = inst.target_file.removeprefix("src/").split("/")[0].removesuffix(".py")
                runs[inst.instance_id]["tests"].append(measured(sb, f"{inst.test_cmd} --tb=short {ids}"))
                runs[inst.instance_id]["import"].append(measured(sb, f"python -c 'import {module}'"))
    print(f"{'task':<48}{'tests CPU s':>12}{'wall s':>9}{'import CPU s':>14}   (medians of {a.rounds})")
    for tid, r in runs.items():
        cpu = statistics.median(c for c, _ in r["tests"])
        wall = statistics.median(w for _, w in r["tests"])
        print(f"{tid:<48}{cpu:>12.3f}{wall:>9.2f}{statistics.median(c for c, _ in r['import']):>14.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
