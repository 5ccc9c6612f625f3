"""Blockers, registries and ask tasks (pure pydantic; no I/O).

A blocker is one gap a task hides: something *missing*, *ambiguous* or *contradictory*. HiL-Bench
stores ``type``/``subtype`` whose meaning differs per domain; we keep those as they were and add the
two fields every consumer needs: ``kind`` (one of three) and ``location`` (where the gap surfaces).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

BlockerKind = Literal["missing", "ambiguous", "contradictory"]
KINDS: tuple[str, ...] = ("missing", "ambiguous", "contradictory")

# where a gap surfaces: the question/spec itself, a file, the schema, a table, a column, a
# business-info entry. ``kind:detail`` with the detail optional, e.g. ``column:flights.dep_delay``.
LOCATION_RX = re.compile(r"^(question|spec|file|schema|table|column|business_info)(:\S.*)?$")


class Blocker(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    id: str = Field(min_length=1, description="Unique within the task; what the ask_human judge returns")
    kind: BlockerKind
    subtype: str = Field("", description="Finer label (HiL-Bench's subtype, or ours)")
    location: str = Field(description="Where the gap surfaces: question | spec:LINE | file:PATH | schema | "
                                      "table:NAME | column:TABLE.COL | business_info:ID")
    description: str = Field(min_length=1, description="What is missing/ambiguous/contradictory")
    resolution: str = Field(min_length=1, description="The exact answer ask_human returns")
    example_questions: list[str] = Field(
        default_factory=list,
        validation_alias=AliasChoices("example_questions", "acceptable_questions", "trigger_questions"),
        description="Questions that should match this blocker (HiL-Bench aliases accepted)",
    )
    type: str | None = Field(None, description="HiL-Bench's original type, kept for imported tasks")

    @field_validator("location")
    @classmethod
    def _location(cls, v: str) -> str:
        if not LOCATION_RX.match(v):
            raise ValueError(f"location {v!r} must look like question, spec:LINE, file:PATH, schema, "
                             "table:NAME, column:TABLE.COL or business_info:ID")
        return v


class BlockerRegistry(BaseModel):
    model_config = ConfigDict(extra="allow")

    blockers: list[Blocker]

    @field_validator("blockers")
    @classmethod
    def _unique(cls, v: list[Blocker]) -> list[Blocker]:
        if not v:
            raise ValueError("a registry needs at least one blocker")
        seen: set[str] = set()
        for b in v:
            if b.id in seen:
                raise ValueError(f"blocker id {b.id!r} appears twice; ids must be unique")
            seen.add(b.id)
        return v


class BusinessInfoEntry(BaseModel):
    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    term: str = Field("", description="The phrase the entry defines, if any")


class SqlFields(BaseModel):
    database: str = Field(min_length=1, description="Database name (ours: a build_database name)")
    database_path: str | None = Field(None, description="SQLite file, when known (imports pass it)")
    ground_truth_sql: str = Field(min_length=1)
    golden_columns: list[str] = Field(default_factory=list)
    golden_rows: list[list[Any]] = Field(default_factory=list, description="As read from golden_output.csv")
    business_info: list[BusinessInfoEntry] = Field(default_factory=list)
    naive_queries: dict[str, str] = Field(
        default_factory=dict, description="Validation only: blocker id -> the query an analyst writes "
                                          "without that blocker's resolution (all others applied)")
    descriptions: dict[str, Any] | None = Field(
        None, description="Imported tasks: {'tables': {table: {'description', 'columns': {column: "
                          "{'description', 'type'}}}}} from the release's description CSVs (built-in "
                          "tasks take theirs from the database spec)")


class SweFields(BaseModel):
    """Kept generic on purpose: the SWE loader (another module) fills what it knows."""

    model_config = ConfigDict(extra="allow")

    instance_id: str | None = None
    image: str | None = None
    package: str | None = None
    repo: str | None = None
    base_commit: str | None = None
    test_cmd: str | None = None
    fail_to_pass: list[str] = Field(default_factory=list)
    pass_to_pass: list[str] = Field(default_factory=list)


class AskTask(BaseModel):
    task_id: str = Field(min_length=1)
    domain: Literal["sql", "swe"]
    problem_statement: str = Field(min_length=1)
    blockers: list[Blocker]
    metadata: dict[str, Any] = Field(default_factory=dict)
    sql: SqlFields | None = None
    swe: SweFields | None = None
    runnable: bool = True
    not_runnable_reason: str | None = None
    source: Literal["impasse", "hilbench"] = "impasse"

    @model_validator(mode="after")
    def _consistent(self) -> AskTask:
        if self.domain == "sql" and self.sql is None:
            raise ValueError("domain 'sql' needs the sql fields (database, ground_truth_sql)")
        if self.domain == "swe" and self.swe is None:
            raise ValueError("domain 'swe' needs the swe fields")
        if not self.runnable and not self.not_runnable_reason:
            raise ValueError("runnable=False needs not_runnable_reason")
        BlockerRegistry(blockers=self.blockers)  # unique, non-empty
        if self.sql:
            unknown = set(self.sql.naive_queries) - {b.id for b in self.blockers}
            if unknown:
                raise ValueError(f"naive_queries name unknown blockers: {sorted(unknown)}")
        return self

    def blocker(self, blocker_id: str) -> Blocker:
        for b in self.blockers:
            if b.id == blocker_id:
                return b
        raise KeyError(f"{self.task_id}: no blocker {blocker_id!r}")

    def kind_counts(self) -> dict[str, int]:
        return {k: sum(b.kind == k for b in self.blockers) for k in KINDS}
