"""The ask suite's two domains as episode parts: how a task's sandbox opens, which tools the agent
gets, what it is told, how its final answer is graded.

SQL: the "sandbox" is a read-only SQLite connection (no shell); the agent explores with the SQL
tools and ends with ``submit_final_query``; grading is execution match against the golden rows.
SWE: a local-backend sandbox on the task image's clean layer; the agent edits the package with
bash/edit_file and ends with task_complete; grading runs the held-out tests (never shown to the
agent) on its diff in a fresh sandbox.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from impasse.env.tools import Completed, Tool, ToolContext, ToolOutcome, tools_named

SQL_SYSTEM = ("You are a data analyst answering a question with SQL over a read-only SQLite database. "
              "Explore the schema and the business-info document with the tools, then call "
              "submit_final_query with one SELECT statement that answers the question.")
SWE_SYSTEM = ("You are a software engineer working in a sandboxed Linux machine on a Python repository at "
              "{workdir} (its virtualenv is active). You act only through the tools you are given. Implement "
              "the requested change in the package source, then call task_complete.")
ASK_HINT = (" The task may leave things missing, ambiguous or contradictory; you may call ask_human with a "
            "specific question about such a gap (at most 3 questions are answered).")
FULL_INFO_HEADER = "\n\nClarifications from the task author:\n"


class AskRow(BaseModel):
    """One task as a run pins it (``RUN/instances.jsonl``)."""

    task_id: str
    domain: str
    path: str


def full_info_statement(statement: str, blockers: list[Any]) -> str:
    """HiL-Bench's full-information template: the statement plus every blocker's description and
    resolution."""
    lines = [f"- {b.description} Resolution: {b.resolution}" for b in blockers]
    return statement.rstrip() + FULL_INFO_HEADER + "\n".join(lines)


# ------------------------------------------------------------------------------------------ SQL

@dataclass
class SqlSandbox:
    """A read-only connection with the interface the episode expects of a sandbox."""

    ctx: Any
    workdir: str = "sqlite"
    submitted: list[str] = field(default_factory=list)

    def diff(self) -> str:
        return ""

    def close(self) -> None:
        self.ctx.conn.close()

    def __enter__(self) -> SqlSandbox:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _sql_tool(name: str) -> Tool:
    from impasse.ask.sql import tools as sqltools

    t = sqltools.TOOLS[name]

    def run(ctx: ToolContext, a: Any) -> ToolOutcome:
        sb: SqlSandbox = ctx.sandbox
        res = t.handler(sb.ctx, a)
        if res.final_sql is not None:
            sb.submitted.append(res.final_sql)
            raise Completed(True, res.final_sql)
        return ToolOutcome(res.output, 0 if res.ok else 1)

    def replay(ctx: ToolContext, a: Any, event: dict[str, Any]) -> None:
        if name == "submit_final_query" and event.get("exit_code") is None:  # the submission went through
            ctx.sandbox.submitted.append(a.sql)

    return Tool(name, t.description, t.args, run, schema_fn=t.openai_schema, replay=replay)


SQL_TOOLS = ("list_tables", "describe_table", "describe_column", "search_business_info", "execute_query",
             "submit_final_query")


class SqlDomain:
    name = "sql"

    def __init__(self, row: AskRow) -> None:
        from impasse.ask.taskdir import load_task

        self.task_id = row.task_id
        self.task = load_task(Path(row.path))
        self.blockers = self.task.blockers
        self.statement = self.task.problem_statement

    def database(self) -> Path:
        from impasse.ask.sql.database import build_database

        return Path(self.task.sql.database_path) if self.task.sql.database_path else build_database(self.task.sql.database)

    def open(self) -> SqlSandbox:
        from impasse.ask.sql.tools import SqlContext

        return SqlSandbox(SqlContext.for_task(self.task, self.database()))

    def tools(self) -> list[Tool]:
        return [_sql_tool(n) for n in SQL_TOOLS]

    def system(self, _sb: Any) -> str:
        return SQL_SYSTEM

    def grade(self, _patch: str, sb: SqlSandbox) -> dict[str, Any]:
        from impasse.ask.sql.scorer import results_match

        sql = sb.submitted[-1] if sb.submitted else ""
        if not sql:
            return {"resolved": False, "submitted_sql": "", "reason": "no query submitted"}
        conn = sqlite3.connect(f"file:{self.database()}?mode=ro", uri=True)
        try:
            rows = conn.execute(sql).fetchall()
        except sqlite3.Error as e:
            return {"resolved": False, "submitted_sql": sql, "reason": f"SQL error: {e}"}
        finally:
            conn.close()
        return {"resolved": results_match(self.task.sql.golden_rows, rows), "submitted_sql": sql,
                "rows": len(rows)}

    def agent_key(self) -> dict[str, Any]:
        """What a reference agent is given: the full-information and the per-blocker naive answers."""
        return {"solution": self.task.sql.ground_truth_sql, "without": dict(self.task.sql.naive_queries)}


# ------------------------------------------------------------------------------------------ SWE

REPO = "/workspace/repo"


class SweDomain:
    name = "swe"

    def __init__(self, row: AskRow, backend: Any) -> None:
        from impasse.ask.swe.tasks import load_task

        self.task_id = row.task_id
        self.task = load_task(Path(row.path))
        self.blockers = self.task.blockers
        self.statement = self.task.problem_statement
        self.backend = backend

    def image(self) -> tuple[str, str, str]:
        """The task image this task's sandbox needs (ref, package, version)."""
        m = self.task.metadata
        return m.image, m.package, m.package_version

    def layers(self) -> list[Path]:
        from impasse.ask.swe.layer import clean_layer
        from impasse.tasks.image import load_image

        image = load_image(self.task.metadata.image)
        if image is None:
            m = self.task.metadata
            raise ValueError(f"{self.task.instance_id}: no task image {m.image}; build it with "
                             f"`impasse tasks build {m.package}=={m.package_version}`")
        return [clean_layer(image), image.layer]

    def open(self) -> Any:
        return self.backend.create(self.layers())

    def tools(self) -> list[Tool]:
        return tools_named(["bash", "edit_file", "task_complete"], REPO)

    def system(self, sb: Any) -> str:
        return SWE_SYSTEM.format(workdir=getattr(sb, "workdir", REPO))

    def grade(self, patch: str, _sb: Any) -> dict[str, Any]:
        from impasse.ask.swe.validate import run_patch

        run = run_patch(self.backend, self.layers(), self.task, "agent", patch)
        ids = self.task.metadata.FAIL_TO_PASS
        passed = run.passed(ids)
        return {"resolved": run.applied and len(passed) == len(ids), "model_patch": patch,
                "tests_passed": passed, "tests": ids, **({"reason": run.error} if run.error else {})}

    def agent_key(self) -> dict[str, Any]:
        return {"solution": self.task.solution_patch, "without": dict(self.task.without)}
