"""``impasse monitor replay``: what the monitor would say at each step of a recorded run.

Feeds the trajectory's steps to a fresh :class:`~impasse.monitor.monitor.Monitor` exactly as the
benchmark loop does (terminal tools end an episode before the monitor sees them), and puts the
nudge recorded at each step beside it, so a rule change can be checked against old runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from impasse.monitor.monitor import Monitor
from impasse.store.trajectory import read_trajectory

TERMINAL = ("task_complete", "escalate_to_human")


def replay(path: Path) -> list[dict[str, Any]]:
    traj = read_trajectory(path)
    recorded = {n["step"]: n.get("rule") for n in traj.of_type("nudge")}
    mon = Monitor()
    rows = []
    for step in traj.steps:
        nudge = None
        if step.tool not in TERMINAL:
            nudge = mon.observe({"name": step.tool, "arguments": step.arguments}, step.output, step.exit_code)
        rows.append({"step": step.index, "tool": step.tool, "call": " ".join(step.command.split()),
                     "rule": nudge.rule if nudge else None, "advice": nudge.advice if nudge else None,
                     "text": nudge.text if nudge else None, "recorded": recorded.get(step.index)})
    return rows
