"""The task instance: SWE-bench / SWE-smith fields plus what impasse needs to rebuild it.

``patch`` *creates* the bug (SWE-smith convention); the gold fix is its reverse. ``FAIL_TO_PASS``
and ``PASS_TO_PASS`` are pytest node ids of the whole suite. Files written by :func:`write_jsonl`
load in SWE-bench tooling; lists are accepted as JSON strings on read, as on Hugging Face.

Plain SWE-bench / SWE-smith rows (without impasse's own fields) validate too: those fields are
optional, :meth:`TaskInstance.missing_impasse_fields` says what a row still lacks before impasse
can run it, and :func:`to_standard` / :func:`write_standard_jsonl` export rows back without them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator


class TaskInstance(BaseModel):
    model_config = ConfigDict(extra="allow")

    instance_id: str = Field(description="<package>__<version>.<operator>__<hash8>")
    repo: str = Field(description="Origin of the code, 'pypi/<name>' for sdist-built tasks")
    base_commit: str = Field(description="Commit of the clean sdist tree; the bug patch applies to it")
    patch: str = Field(description="Unified diff that introduces the bug (gold fix = reverse)")
    problem_statement: str
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str]
    version: str = Field("", description="Package version (SWE-bench's environment key; absent in SWE-smith rows)")
    created_at: str = ""
    hints_text: str = ""
    test_patch: str = Field("", description="Always empty: the suite itself is unchanged")
    environment_setup_commit: str = ""
    # impasse's own fields (optional, so plain SWE-bench / SWE-smith rows validate)
    package: str = ""
    package_version: str = ""
    operator: str = Field("", description="Procedural bug operator that produced the patch")
    target_file: str = Field("", description="Repo-relative path of the mutated source file")
    target_function: str = ""
    test_cmd: str = Field("", description="Command that runs the suite inside the sandbox, from the repo root")
    image: str = Field("", description="Task image: <package>-<version>@<build> (or without @build: the current build)")
    runtime_deps: list[str] = Field(default_factory=list,
                                    description="Third-party distributions the package imports at runtime")
    source_dirs: list[str] = Field(default_factory=list, description="Repo-relative package source directories")
    test_files: list[str] = Field(default_factory=list, description="Repo-relative test files of the suite")
    fail_seconds: float | None = Field(None, ge=0, description="Seconds the FAIL_TO_PASS tests alone took at build "
                                                              "(what an agent's test run costs; picks the main job)")

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", "runtime_deps", "source_dirs", "test_files", mode="before")
    @classmethod
    def _json_string_lists(cls, v: object) -> object:
        return json.loads(v) if isinstance(v, str) else v


    def missing_impasse_fields(self) -> list[str]:
        """impasse's own fields a run needs that this row lacks (empty for a built task)."""
        return [f for f in IMPASSE_REQUIRED if not getattr(self, f)]


STANDARD_FIELDS = ("instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement", "hints_text",
                   "created_at", "version", "FAIL_TO_PASS", "PASS_TO_PASS", "environment_setup_commit")
IMPASSE_FIELDS = ("package", "package_version", "operator", "target_file", "target_function", "test_cmd", "image",
                  "runtime_deps", "source_dirs", "test_files")
IMPASSE_REQUIRED = ("package", "package_version", "test_cmd", "image")


def to_standard(inst: TaskInstance) -> dict:
    """The row as SWE-bench tooling and Hugging Face hold it: the standard fields (test lists as
    JSON strings), plus any other field the row arrived with (e.g. ``difficulty``), without
    impasse's own fields."""
    row = inst.model_dump()
    out = {k: row[k] for k in STANDARD_FIELDS}
    out["FAIL_TO_PASS"], out["PASS_TO_PASS"] = json.dumps(inst.FAIL_TO_PASS), json.dumps(inst.PASS_TO_PASS)
    out.update({k: v for k, v in (inst.model_extra or {}).items()})
    return out


def write_standard_jsonl(instances: Iterable[TaskInstance], path: Path) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w") as fh:
        for inst in instances:
            fh.write(json.dumps(to_standard(inst)) + "\n")
    tmp.replace(path)


class SchemaError(ValueError):
    pass


def read_instances(path: Path) -> list[TaskInstance]:
    """Read SWE-bench style JSON (a list) or JSONL. Errors name the file and line."""
    text = path.read_text()
    if not text.strip():
        return []
    rows: list[tuple[int, object]]
    if text.lstrip().startswith("["):
        rows = list(enumerate(json.loads(text), 1))
    else:
        rows = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append((lineno, json.loads(line)))
                except json.JSONDecodeError as e:
                    raise SchemaError(f"{path}:{lineno}: not valid JSON ({e.msg})") from e
    out = []
    for lineno, row in rows:
        try:
            out.append(TaskInstance.model_validate(row))
        except ValidationError as e:
            raise SchemaError(f"{path}:{lineno}: not a task instance: {e.errors()[0]['loc']} {e.errors()[0]['msg']}") from e
    return out


def write_jsonl(instances: Iterable[TaskInstance], path: Path) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w") as fh:
        for inst in instances:
            fh.write(inst.model_dump_json() + "\n")
    tmp.replace(path)
