"""The loop's own cost per step: model reply -> record -> step -> hooks -> record, with a model
and a sandbox that cost nothing, so only the harness is timed (every event still fsync'd).

Runs on this checkout's code and, to compare, on another checkout's (the merge base before the
environment spine): ``/path/to/old/.venv/bin/python benchmarks/loop_overhead.py`` uses that
venv's impasse. It detects which API it has (the Env, or the old Loop) and drives the same 80
bash calls per episode either way. Figures are printed, never asserted.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

EPISODES, STEPS = 30, 80


class FreeSandbox:
    """Answers every command at once with a fixed output (no process is started)."""

    workdir = "/workspace/repo"

    def exec(self, cmd, timeout=60.0, stdin=None, user="agent", **kw):
        from impasse.sandbox.base import ExecResult

        return ExecResult(0, "ok\n", "", duration_s=0.0)

    def diff(self):
        return ""

    def restore(self):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()


class FreeModel:
    kind, name = "reference", "bench/free"

    def query(self, messages, tools):
        try:
            from impasse.agent.loop import ModelResponse
        except ImportError:  # pragma: no cover - very old layouts
            raise
        k = sum(1 for m in messages if m.get("role") == "assistant")
        call = {"id": f"c{k}", "type": "function", "function": {"name": "bash", "arguments": json.dumps(
            {"command": f"echo {k}"})}}
        return ModelResponse({"role": "assistant", "content": "", "tool_calls": [call]}, {"scripted": True})


def with_env(root: Path) -> float:
    from impasse.agent import loop
    from impasse.env import Env, EnvParts, MonitorHook
    from impasse.env.tools import tools_named
    from impasse.store.rundir import RunDir
    from impasse.store.sink import LocalStore

    parts = EnvParts(header={"condition": "clean", "interface": "monitor"}, open_sandbox=FreeSandbox,
                     tools=tools_named(["bash", "task_complete"], "/workspace/repo"),
                     first_messages=lambda sb: [{"role": "system", "content": "s"}, {"role": "user", "content": "t"}],
                     grade=lambda sb, patch: {"resolved": False}, after_step=[MonitorHook])
    env = Env(parts, episode_id="e", store=LocalStore(RunDir(root)), step_limit=STEPS)
    env.reset()
    t = time.perf_counter()
    loop.run(env, FreeModel())
    return (time.perf_counter() - t) * 1000 / STEPS


def with_old_loop(root: Path) -> float:
    """The loop as it was before the Env (its API: run in a checkout of that code)."""
    from impasse.agent.loop import Loop, LoopConfig, StepLimitReached  # noqa: I001 - the old layout's names
    from impasse.agent.tools import tools_named
    from impasse.monitor.monitor import Monitor
    from impasse.store.trajectory import TrajectoryWriter

    writer = TrajectoryWriter(root / "e.jsonl", {"condition": "clean", "episode_id": "e"})
    monitor = Monitor(diff_provider=lambda: "")

    def after(call, output, code):
        nudge = monitor.observe(call, output, code)
        return nudge.to_json() if nudge else None

    lp = Loop(FreeModel(), FreeSandbox(), writer, tools_named(["bash", "task_complete"], "/workspace/repo"),
              LoopConfig(step_limit=STEPS), after)
    for m in ({"role": "system", "content": "s"}, {"role": "user", "content": "t"}):
        lp.add_message(m)
    t = time.perf_counter()
    with contextlib.suppress(StepLimitReached):  # how the old loop ended at its budget
        lp.run()
    writer.close()
    return (time.perf_counter() - t) * 1000 / STEPS


def main() -> None:
    try:
        import impasse.env  # noqa: F401

        run, which = with_env, "Env + loop (impasse.env)"
    except ImportError:
        run, which = with_old_loop, "old Loop (impasse.agent.loop.Loop)"
    import impasse

    per_step = []
    shm = "/dev/shm" if Path("/dev/shm").is_dir() else None  # fsync on tmpfs: the disk's noise left out
    for i in range(EPISODES):
        with tempfile.TemporaryDirectory(dir=shm) as tmp:
            per_step.append(run(Path(tmp) / str(i)))
    s = sorted(per_step)
    print(f"{which}, impasse at {Path(impasse.__file__).parent}: {EPISODES} episodes x {STEPS} steps")
    print(f"  loop cost per step: median {statistics.median(s):.3f} ms, p95 {s[int(0.95 * len(s)) - 1]:.3f} ms "
          "(model and sandbox free; monitor on; every event fsync'd, on tmpfs)")


if __name__ == "__main__":
    sys.exit(main())
