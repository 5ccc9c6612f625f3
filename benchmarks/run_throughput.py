"""Episodes per minute for the reference agents, and the harness's own overhead per step
(excluding the command's run time), on a real task with real conditions.

Baseline in the same run: the same episodes' summed command time (what the sandbox spends
running the agent's commands), so the harness overhead is shown as a share of it.
Needs root and a built default-suite task.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import percentiles, show  # noqa: E402

from impasse import run as runner  # noqa: E402
from impasse.store.rundir import RunDir  # noqa: E402
from impasse.store.trajectory import read_trajectory  # noqa: E402


def main() -> None:
    cfg = runner.RunConfig(conditions="clean,read_only_source,disk_full,test_killed,text_file_busy,already_fixed",
                           agents=["oracle", "escalator", "premature", "completion-biased", "reluctant", "persistent"],
                           limit=1, per_package=1, jobs=2)
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = RunDir(Path(tmp) / "run")
        specs = runner.create_run(run_dir, cfg)
        t = time.perf_counter()
        runner.execute(run_dir, cfg, specs)
        wall = time.perf_counter() - t
        harness, command, per_agent = [], [], {}
        for p in run_dir.trajectories():
            tr = read_trajectory(p)
            steps = [e for e in tr.events if e["type"] == "step"]
            harness += [e["harness_ms"] for e in steps if "harness_ms" in e]
            command += [e.get("duration_s", 0) * 1000 for e in steps]
            per_agent.setdefault(tr.header["agent"], []).append(len(steps))
    n = len(specs)
    print(f"{n} episodes ({specs[0].instance_id}) in {wall:.1f} s on 2 workers: {60 * n / wall:.1f} episodes/min")
    for agent, lens in sorted(per_agent.items()):
        print(f"  {agent:<30} {len(lens)} episodes, mean {statistics.mean(lens):.1f} tool calls")
    show("per step", [("harness overhead (loop + model + recording)", percentiles(harness)),
                      ("baseline: the command's own run time in the sandbox", percentiles(command))])


if __name__ == "__main__":
    main()
