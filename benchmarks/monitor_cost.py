"""Monitor cost per step (p50/p99) against the agent loop's own per-step overhead.

The monitor is fed the steps of real trajectories (the test corpus: real reference-agent runs and
hand-edited variants), cycled to a large sample. The loop's overhead is the `harness_ms` that the
loop records in every step of a real run (time in the loop minus the command's own run time).
Target (issue #6): monitor p99 <= 0.2 ms on ordinary steps. A step that issues a nudge also
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


def main() -> None:
    corpus = [read_trajectory(p) for p in sorted((ROOT / "tests" / "corpus").glob("*.jsonl"))]
    samples, nudging = [], []
    for _ in range(40):
        for t in corpus:
            mon = Monitor()
            for s in t.steps:
                call = {"name": s.tool, "arguments": s.arguments}
                t0 = time.perf_counter()
                nudge = mon.observe(call, s.output, s.exit_code)
                (nudging if nudge else samples).append((time.perf_counter() - t0) * 1000)
    run_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "runs" / "latest"
    loop = [e["harness_ms"] for p in sorted((run_dir / "episodes").glob("*.jsonl"))[:300]
            for e in read_trajectory(p).events if e["type"] == "step" and "harness_ms" in e]
    rows = [("monitor.observe() per step", percentiles(samples)),
            ("monitor.observe() issuing a nudge + ticket", percentiles(nudging)),
            ("monitor.observe(), every step", percentiles(samples + nudging))]
    if loop:
        rows.append((f"loop's own overhead per step ({run_dir.name})", percentiles(loop)))
    show("per-step cost", rows)
    ordinary, every = percentiles(samples), percentiles(samples + nudging)
    print(f"\nmonitor p99 {ordinary['p99']:.3f} ms on ordinary steps (target <= 0.2 ms); a nudge (at most once per "
          f"rule and episode; {100 * len(nudging) / every['n']:.1f}% of these steps) costs "
          f"{percentiles(nudging)['median']:.3f} ms, so over every step p99 is {every['p99']:.3f} ms"
          + (f"; the monitor's median is {100 * ordinary['median'] / percentiles(loop)['median']:.0f}% of the loop's "
             "median overhead" if loop else "; run `make run` first to compare with the loop"))


if __name__ == "__main__":
    main()
