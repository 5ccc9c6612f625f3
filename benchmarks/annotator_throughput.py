"""Annotator throughput on a synthetic corpus the size of the paper's (19,371 trajectories of
~40 steps), and report generation (read + annotate + metrics + paired stats + HTML) over 20k
trajectory files on disk, with its peak memory.

Baseline in the same run: the bare cost of producing the same Step objects (the floor any
annotator pays) and of parsing the JSONL files without annotating them.
Targets (issue #5): annotation < 5 s on 2 cores (>= 200k steps/s); report < 10 s and < 1 GB.
``--cpu``: each worker's annotation time is its CPU time (a loaded machine's wall time measures the
other jobs); compare old and new code in the same run so (PYTHONPATH=<old>/src for the old).
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from impasse.annotate.annotator import annotate_steps
from impasse.conditions.cards import card, names
from impasse.steps import Step

N_TRAJ = int(os.environ.get("N_TRAJ", 19371))
STEPS = 40
# A mix shaped like the paper's trajectories: mostly ordinary work (reading files, running tests,
# grepping), ~15% environment errors and diagnostics, ~2% unsafe requests, ~15% edits.
PLAIN = [
    ("git status --short && git log --oneline | head -3", "a1b2c3d pkg 1.0\n[exit code: 0]"),
    ("sed -n '1,80p' pkg/core.py", "\n".join(f"    line {i} = compute(x, y)  # comment" for i in range(80)) + "\n[exit code: 0]"),
    ("grep -rn 'def parse' pkg | head -20", "\n".join(f"pkg/m{i}.py:{i * 7}: def parse_{i}(text):" for i in range(20)) + "\n[exit code: 0]"),
    ("python -m pytest -q tests/test_core.py", "F.F" + "." * 60 + "\n" + "\n".join(f"PASSED tests/test_core.py::test_{i}" for i in range(30))
     + "\nFAILED tests/test_core.py::test_x - AssertionError: assert 1 == 2\n2 failed, 61 passed in 0.41s\n[exit code: 1]"),
    ("ls -la pkg", "\n".join(f"-rw-r--r-- 1 agent agent {100 * i} Nov 30 07:45 m{i}.py" for i in range(15)) + "\n[exit code: 0]"),
    ("cat setup.cfg", "[metadata]\nname = pkg\nversion = 1.0\n[options]\npackages = find:\n[exit code: 0]"),
    ("pip list 2>/dev/null | head -20", "\n".join(f"package{i} {i}.0" for i in range(20)) + "\n[exit code: 0]"),
    ("python -c 'import pkg; print(pkg.__file__)'", "/workspace/repo/pkg/__init__.py\n[exit code: 0]"),
]
FAULTY = [
    ("echo '#' >> pkg/core.py", "bash: line 1: pkg/core.py: Permission denied\n[exit code: 1]"),
    ("ls -l pkg/core.py", "-r--r--r-- 1 root root 3120 Nov 30 07:45 pkg/core.py\n[exit code: 0]"),
    ("chmod u+w pkg/core.py", "chmod: changing permissions of 'pkg/core.py': Operation not permitted\n[exit code: 1]"),
    ("pip install six", "WARNING: Retrying after connection broken by NewConnectionError: Network is unreachable\n"
     "ERROR: Could not find a version that satisfies the requirement six\n[exit code: 1]"),
    ("df -h /workspace", "Filesystem Size Used Avail Use% Mounted on\noverlay 512M 512M 0 100% /\n[exit code: 0]"),
    ("python -m pytest -q", "[exit code: 137]"),
    ("touch x", "touch: cannot touch 'x': Read-only file system\n[exit code: 1]"),
]
UNSAFE = [("cat /etc/shadow", "cat: /etc/shadow: Permission denied\n[exit code: 1]"),
          ("echo pw | sudo -S id", "sudo: The \"no new privileges\" flag is set\n[exit code: 1]"),
          ("python -m pytest -q --deselect tests/test_core.py::test_x", "61 passed, 1 deselected in 0.4s\n[exit code: 0]")]


def synth(seed: int) -> tuple[str, list[Step]]:
    rng = random.Random(seed)
    cond = names()[seed % len(names())]
    steps = []
    for i in range(1, STEPS + 1):
        r = rng.random()
        if r < 0.15:
            ok = rng.random() < 0.6
            steps.append(Step(i, "edit_file", {"path": f"/workspace/repo/pkg/m{i % 5}.py", "old_str": "a = 1",
                                               "new_str": "a = 2"},
                              "Edited pkg/m.py: replaced 1 occurrence." if ok else
                              "Error: bash: line 1: /workspace/repo/pkg/core.py: Permission denied", 0 if ok else 1))
            continue
        cmd, out = rng.choice(UNSAFE if r < 0.17 else FAULTY if r < 0.32 else PLAIN)
        steps.append(Step(i, "bash", {"command": cmd}, out, 0))
    return cond, steps


CLOCK = time.process_time if "--cpu" in sys.argv else time.perf_counter


def work(seeds: range) -> tuple[int, float, float]:
    t0 = time.perf_counter()
    corpus = [synth(s) for s in seeds]
    t_build = time.perf_counter() - t0
    cards = {n: card(n) for n in names()}
    t1 = CLOCK()
    for cond, steps in corpus:
        annotate_steps(steps, cards[cond], "step_limit", len(steps))
    return sum(len(s) for _, s in corpus), CLOCK() - t1, t_build


def annotate_bench() -> None:
    half = N_TRAJ // 2
    t = time.perf_counter()
    with ProcessPoolExecutor(2) as pool:
        results = list(pool.map(work, [range(0, half), range(half, N_TRAJ)]))
    wall = time.perf_counter() - t
    steps = sum(r[0] for r in results)
    annotate_s = max(r[1] for r in results)
    print(f"annotation: {N_TRAJ} trajectories, {steps} steps on 2 cores: {annotate_s:.2f} s "
          f"({steps / annotate_s / 1000:.0f}k steps/s; target < 5 s, >= 200k steps/s)")
    print(f"  baseline (building the Step objects only): {max(r[2] for r in results):.2f} s; wall incl. both {wall:.2f} s")


def report_bench(n: int = 20000) -> None:
    from impasse.report.report import annotate_run, build, render_html

    root = Path(tempfile.mkdtemp(prefix="impasse-bench-"))
    eps = root / "episodes"
    eps.mkdir()
    try:
        for k in range(n):
            cond, steps = synth(k)
            lines = [{"type": "header", "format": "impasse.trajectory/1", "episode_id": f"e{k}",
                      "instance_id": f"t{k // 39}", "condition": cond, "interface": ("baseline", "tool", "monitor")[k % 3],
                      "agent": "model/bench"}]
            lines += [{"type": "step", "step": s.index, "tool": s.tool, "arguments": s.arguments, "output": s.output,
                       "exit_code": s.exit_code} for s in steps]
            lines += [{"type": "ending", "ending": "step_limit", "steps": STEPS}, {"type": "final"}]
            (eps / f"e{k}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        size = sum(p.stat().st_size for p in eps.iterdir()) / 1e6
        t = time.perf_counter()
        for p in eps.iterdir():
            for line in p.read_text().splitlines():
                json.loads(line)
        parse_s = time.perf_counter() - t
        t = time.perf_counter()
        rows, _ = annotate_run(root, write=False)
        report = build(rows)
        html = render_html(report)
        report_s = time.perf_counter() - t
        peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                   resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
        print(f"report: {n} trajectories ({size:.0f} MB of JSONL): {report_s:.2f} s, peak RSS {peak:.0f} MB "
              f"(target < 10 s, < 1 GB); HTML {len(html) / 1e6:.1f} MB")
        print(f"  baseline (json-parsing the files only): {parse_s:.2f} s -> report costs {report_s / parse_s:.1f}x parsing")
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    annotate_bench()
    if "--no-report" not in sys.argv:
        report_bench()
