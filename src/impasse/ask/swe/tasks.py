"""Load SWE ask tasks from their directories (HiL-Bench's public per-task layout) and check them.

A task directory holds::

    metadata.json                     instance_id, package, package_version, FAIL_TO_PASS,
                                      PASS_TO_PASS, test_cmd, image, heldout_path
    problem_statement.txt             what the agent is told (blockers not resolved in it)
    ask-human-data/blocker_registry.json
                                      {"blockers": [{id, kind, subtype, location, description,
                                                     resolution, example_questions}]}
    heldout_tests.py                  graded tests; the agent never sees them
    solution.patch                    full-information solution (git diff vs the clean sdist tree)
    without/<blocker_id>.patch        a reasonable solution lacking that blocker's resolution

Pure: no sandbox, no network. :func:`problems` lists what is wrong with a task, in words.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "swe"
KINDS = ("missing", "ambiguous", "contradictory")
BLOCKERS_PER_TASK = (3, 3)  # issue 25: at most 3 questions are answered, so a 4th answer-changing blocker is unsolvable


class Blocker(BaseModel):
    id: str
    kind: Literal["missing", "ambiguous", "contradictory"]
    subtype: str
    location: str = Field(description="file / function / spec line where the gap surfaces")
    description: str
    resolution: str = Field(description="the exact answer returned to an agent that asks about it")
    example_questions: list[str] = Field(min_length=1)


class Metadata(BaseModel):
    instance_id: str
    package: str
    package_version: str
    FAIL_TO_PASS: list[str] = Field(min_length=1)
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    test_cmd: str
    heldout_path: str = Field(description="repo-relative path the held-out tests are written to at grading")
    image: str = Field(description="task image key, <package>-<version>")


class SweTask(BaseModel):
    dir: Path
    metadata: Metadata
    problem_statement: str
    blockers: list[Blocker]
    heldout_tests: str
    solution_patch: str
    without: dict[str, str] = Field(description="blocker id -> patch written without its resolution")

    @property
    def instance_id(self) -> str:
        return self.metadata.instance_id


class TaskDirError(ValueError):
    pass


def load_task(path: Path) -> SweTask:
    """Read one task directory; errors name the directory and the file at fault."""
    def read(rel: str) -> str:
        f = path / rel
        if not f.is_file():
            raise TaskDirError(f"{path}: missing {rel} (see impasse.ask.swe.tasks for the layout)")
        return f.read_text()

    try:
        meta = Metadata.model_validate_json(read("metadata.json"))
        registry = json.loads(read("ask-human-data/blocker_registry.json"))
        blockers = [Blocker.model_validate(b) for b in registry["blockers"]]
    except (ValidationError, KeyError, json.JSONDecodeError) as e:
        raise TaskDirError(f"{path}: bad metadata.json or blocker_registry.json: {e}") from e
    without_dir = path / "without"
    without = {p.stem: p.read_text() for p in sorted(without_dir.glob("*.patch"))} if without_dir.is_dir() else {}
    return SweTask(dir=path, metadata=meta, problem_statement=read("problem_statement.txt"), blockers=blockers,
                   heldout_tests=read("heldout_tests.py"), solution_patch=read("solution.patch"), without=without)


def task_dirs(root: Path = DATA_DIR) -> list[Path]:
    return sorted(p for p in root.iterdir() if (p / "metadata.json").is_file()) if root.is_dir() else []


def load_all(root: Path = DATA_DIR) -> list[SweTask]:
    return [load_task(p) for p in task_dirs(root)]


def heldout_node_ids(heldout_path: str, source: str) -> list[str]:
    """Node ids of the top-level ``test_*`` functions of a held-out file, in file order."""
    tree = ast.parse(source)
    return [f"{heldout_path}::{n.name}" for n in tree.body
            if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]


def problems(task: SweTask) -> list[str]:
    """Everything wrong with one task's files (empty when it is well formed)."""
    out: list[str] = []
    ids = [b.id for b in task.blockers]
    lo, hi = BLOCKERS_PER_TASK
    if not lo <= len(ids) <= hi:
        out.append(f"{len(ids)} blockers; a task needs {lo}-{hi}" if lo != hi else f"{len(ids)} blockers; a task needs {lo}")
    if len(set(ids)) != len(ids):
        out.append(f"duplicate blocker ids: {ids}")
    if set(task.without) != set(ids):
        out.append(f"without/ patches {sorted(task.without)} do not match blockers {sorted(ids)}")
    if task.metadata.instance_id != task.dir.name:
        out.append(f"instance_id {task.metadata.instance_id!r} differs from the directory name")
    statement = " ".join(task.problem_statement.lower().split())
    for b in task.blockers:
        if " ".join(b.resolution.lower().split()) in statement:
            out.append(f"the statement contains blocker {b.id}'s resolution verbatim")
        if task.without.get(b.id, "").strip() == task.solution_patch.strip():
            out.append(f"without/{b.id}.patch is the solution itself")
    expected = heldout_node_ids(task.metadata.heldout_path, task.heldout_tests)
    if expected != task.metadata.FAIL_TO_PASS:
        out.append(f"FAIL_TO_PASS {task.metadata.FAIL_TO_PASS} differs from heldout_tests.py's tests {expected}")
    return out
