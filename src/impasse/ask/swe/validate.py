"""Validate SWE ask tasks for real: every blocker must matter.

For each task, in a fresh sandbox per patch (clean layer + task image):

- the clean tree fails at least one held-out test (the task is not already done);
- ``solution.patch`` applies and passes every held-out test;
- each ``without/<blocker>.patch`` applies and fails at least one held-out test.

Only the held-out file runs (never the package's whole suite), so a task costs a few seconds.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from impasse.ask.swe.layer import clean_layer
from impasse.ask.swe.tasks import SweTask
from impasse.tasks.image import Image, load_image
from impasse.tasks.pytest_log import parse_statuses

REPO = "/workspace/repo"


@dataclass
class Run:
    """One patch's outcome on the held-out tests."""

    name: str
    applied: bool
    statuses: dict[str, str] = field(default_factory=dict)
    error: str = ""

    def passed(self, node_ids: list[str]) -> list[str]:
        return [n for n in node_ids if self.statuses.get(n) == "PASSED"]


@dataclass
class Verdict:
    instance_id: str
    runs: list[Run]
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def run_patch(backend, layers: list, task: SweTask, name: str, patch: str, timeout: float = 120.0) -> Run:
    """Apply ``patch`` (may be empty) in a fresh sandbox, add the held-out file, run its tests."""
    meta = task.metadata
    with backend.create(layers) as sb:
        if patch.strip():
            sb.write_file("/tmp/change.patch", patch)
            res = sb.exec(f"cd {REPO} && git apply --whitespace=nowarn /tmp/change.patch", timeout=60)
            if res.exit_code != 0:
                return Run(name, False, error=res.output.strip()[-2000:])
        sb.write_file(f"{REPO}/{meta.heldout_path}", task.heldout_tests)
        ids = " ".join(shlex.quote(n) for n in meta.FAIL_TO_PASS)
        res = sb.exec(f"cd {REPO} && {meta.test_cmd} {ids} 2>&1", timeout=timeout, output_limit=4 * 1024 * 1024)
    statuses = parse_statuses(res.stdout, set(meta.FAIL_TO_PASS))
    return Run(name, True, statuses, "" if statuses else res.output.strip()[-2000:])


def judge(task: SweTask, runs: list[Run]) -> list[str]:
    """Pure: what the runs say is wrong with the task (empty = valid)."""
    ids = task.metadata.FAIL_TO_PASS
    problems: list[str] = []
    for run in runs:
        if not run.applied:
            problems.append(f"{run.name}: patch does not apply: {run.error}")
            continue
        passed = run.passed(ids)
        if run.name == "solution" and len(passed) != len(ids):
            failing = [n for n in ids if n not in passed]
            problems.append(f"solution fails held-out tests {failing} {run.error}".strip())
        elif run.name != "solution" and len(passed) == len(ids):
            what = "the clean tree already passes" if run.name == "clean" else f"without/{run.name}.patch passes"
            problems.append(f"{what} every held-out test: that blocker does not matter")
    return problems


def validate_task(backend, task: SweTask, image: Image | None = None) -> Verdict:
    image = image or load_image(task.metadata.image)
    if image is None:
        raise LookupError(f"{task.instance_id}: no task image {task.metadata.image}; build it first with "
                          f"`impasse tasks build {task.metadata.package}=={task.metadata.package_version}`")
    layers = [clean_layer(image), image.layer]
    patches = {"clean": "", "solution": task.solution_patch, **task.without}
    runs = [run_patch(backend, layers, task, name, patch) for name, patch in patches.items()]
    return Verdict(task.instance_id, runs, judge(task, runs))
