"""Monitor cost per step (p50/p99) against the agent loop's own per-step overhead.

The monitor is fed the steps of real trajectories: the test corpus (real reference-agent runs and
hand-edited variants, cycled to a large sample) and, given a run directory (default runs/latest),
the first 300 episodes of that run. The loop's overhead is the `harness_ms` that the loop records in
every step of a real run (time in the loop minus the command's own run time).
Target (issue #6): monitor p99 <= 0.2 ms on ordinary steps. ``--cpu`` times each step in this
thread's CPU time instead of wall time: on a loaded machine (other jobs on the same cores) wall
time measures the scheduler, CPU time still measures the monitor; compare old and new code so. A step that issues a nudge also
builds the nudge's text and pre-filled ticket; at most once per rule and episode, it is shown
apart, and the p99 over every step (nudges included) is printed beside it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import percentiles, show  # noqa: E402

from impasse.monitor.monitor import Monitor  # noqa: E402
from impasse.store.trajectory import read_trajectory  # noqa: E402

ROOT = Path(__file__).parent.parent
CLOCK = time.thread_time if "--cpu" in sys.argv else time.perf_counter


def observe_all(trajectories: list, rounds: int) -> tuple[list[float], list[float]]:
    """Per-step observe() times (ms) over fresh monitors, split into ordinary and nudging steps."""
    samples, nudging = [], []
    for _ in range(rounds):
        for t in trajectories:
            mon = Monitor()
            for s in t.steps:
                call = {"name": s.tool, "arguments": s.arguments}
                t0 = CLOCK()
                nudge = mon.observe(call, s.output, s.exit_code)
                (nudging if nudge else samples).append((CLOCK() - t0) * 1000)
    return samples, nudging


def verdict(label: str, samples: list[float], nudging: list[float]) -> str:
    ordinary, every = percentiles(samples), percentiles(samples + nudging)
    head = f"{label}: monitor p99 {ordinary['p99']:.3f} ms on ordinary steps (target <= 0.2 ms)"
    if not nudging:
        return f"{head}; no step issued a nudge"
    return (f"{head}; a nudge (at most once per rule and episode; {100 * len(nudging) / every['n']:.1f}% of these "
            f"steps) costs {percentiles(nudging)['median']:.3f} ms, so over every step p99 is {every['p99']:.3f} ms")


def main() -> None:
    corpus = [read_trajectory(p) for p in sorted((ROOT / "tests" / "corpus").glob("*.jsonl"))]
    samples, nudging = observe_all(corpus, rounds=40)
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    run_dir = Path(args[0]) if args else ROOT / "runs" / "latest"
    recorded = [read_trajectory(p) for p in sorted((run_dir / "episodes").glob("*.jsonl"))[:300]]
    loop = [e["harness_ms"] for t in recorded for e in t.events if e["type"] == "step" and "harness_ms" in e]
    rows = [("test corpus: observe() per step", percentiles(samples)),
            ("test corpus: observe() issuing a nudge + ticket", percentiles(nudging))]
    lines = [verdict("test corpus", samples, nudging)]
    if recorded:  # the steps of a real run: its agents' own commands and outputs
        run_samples, run_nudging = observe_all(recorded, rounds=3)
        rows.append((f"{run_dir.name}: observe() per step", percentiles(run_samples)))
        if run_nudging:
            rows.append((f"{run_dir.name}: observe() issuing a nudge", percentiles(run_nudging)))
        lines.append(verdict(f"{run_dir.name} ({len(recorded)} episodes)", run_samples, run_nudging))
    if loop:
        rows.append((f"{run_dir.name}: the loop's own overhead per step", percentiles(loop)))
        lines.append(f"the monitor's median is {100 * percentiles(run_samples)['median'] / percentiles(loop)['median']:.0f}% "
                     "of the loop's median overhead")
    else:
        lines.append("run `make run` first (or pass a run directory) to measure on a real run and compare with the loop")
    show("per-step cost", rows)
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
