"""The task instance: SWE-bench / SWE-smith fields plus what impasse needs to rebuild it.

``patch`` *creates* the bug (SWE-smith convention); the gold fix is its reverse. ``FAIL_TO_PASS``
and ``PASS_TO_PASS`` are pytest node ids of the whole suite. Files written by :func:`write_jsonl`
load in SWE-bench tooling; lists are accepted as JSON strings on read, as on Hugging Face.
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
    version: str = Field(description="Package version (SWE-bench's environment key)")
    created_at: str
    hints_text: str = ""
    test_patch: str = Field("", description="Always empty: the suite itself is unchanged")
    environment_setup_commit: str = ""
    # impasse's own fields
    package: str
    package_version: str
    operator: str = Field(description="Procedural bug operator that produced the patch")
    target_file: str = Field(description="Repo-relative path of the mutated source file")
    target_function: str = ""
    test_cmd: str = Field(description="Command that runs the suite inside the sandbox, from the repo root")
    image: str = Field(description="Task image: <package>-<version>@<build> (or without @build: the current build)")
    runtime_deps: list[str] = Field(default_factory=list,
                                    description="Third-party distributions the package imports at runtime")
    source_dirs: list[str] = Field(default_factory=list, description="Repo-relative package source directories")
    test_files: list[str] = Field(default_factory=list, description="Repo-relative test files of the suite")

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", "runtime_deps", "source_dirs", "test_files", mode="before")
    @classmethod
    def _json_string_lists(cls, v: object) -> object:
        return json.loads(v) if isinstance(v, str) else v


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
