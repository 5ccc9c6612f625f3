"""The agent's tools for SQL ask tasks, as HiL-Bench's SQL harness offers them, as pure handlers.

Every tool is one :class:`Tool`: a pydantic argument model, a handler ``(ctx, args) -> ToolResult``
and an OpenAI function schema generated from the model. :data:`TOOLS` is the registry; a new tool
is a new entry, not a new branch in a dispatcher. The database is opened read-only (``mode=ro``
URI plus ``PRAGMA query_only``), so a write is refused by SQLite itself and reported clearly.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from impasse.ask.schema import AskTask, BusinessInfoEntry
from impasse.ask.sql.database import DatabaseError, describe

ROW_CAP = 50
QUERY_SECONDS = 20.0


def open_readonly(path: Path | str) -> sqlite3.Connection:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such database file; build it with build_database(name)")
    conn = sqlite3.connect(f"file:{p}?mode=ro", uri=True, check_same_thread=False)
    conn.execute("PRAGMA query_only = ON")
    return conn


@dataclass
class SqlContext:
    """What the tools see: a read-only connection, the schema descriptions, the business info."""

    conn: sqlite3.Connection
    descriptions: dict[str, Any]
    business_info: list[BusinessInfoEntry]
    row_cap: int = ROW_CAP
    query_seconds: float = QUERY_SECONDS
    submitted: list[str] = field(default_factory=list)

    @classmethod
    def for_task(cls, task: AskTask, database: Path | str, **kw: Any) -> SqlContext:
        assert task.sql is not None, f"{task.task_id} is not a SQL task"
        if task.sql.descriptions is not None:  # imported: the release's description CSVs
            desc = {"name": task.sql.database, "description": "", **task.sql.descriptions}
        else:
            try:
                desc = describe(task.sql.database)
            except DatabaseError:  # an imported database without descriptions: tables only
                desc = {"name": task.sql.database, "description": "", "tables": {}}
        return cls(open_readonly(database), desc, list(task.sql.business_info), **kw)


class ToolResult(BaseModel):
    ok: bool
    output: str
    final_sql: str | None = Field(None, description="Set by submit_final_query: the episode ends")


class NoArgs(BaseModel):
    pass


class TableArg(BaseModel):
    table: str = Field(description="Table name, as list_tables shows it")


class ColumnArg(BaseModel):
    table: str = Field(description="Table name")
    column: str = Field(description="Column name")


class SearchArg(BaseModel):
    query: str = Field(min_length=1, description="Words to look for in the business-info document")


class SqlArg(BaseModel):
    sql: str = Field(min_length=1, description="One SQLite SELECT statement")


def _tables(ctx: SqlContext) -> list[str]:
    rows = ctx.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                            "'sqlite_%' ORDER BY name").fetchall()
    return [r[0] for r in rows]


def _columns(ctx: SqlContext, table: str) -> list[tuple[str, str]]:
    return [(r[1], r[2]) for r in ctx.conn.execute(f'PRAGMA table_info("{table.replace(chr(34), "")}")')]


def _unknown_table(ctx: SqlContext, table: str) -> ToolResult | None:
    if table in _tables(ctx):
        return None
    return ToolResult(ok=False, output=f"no table {table!r}; tables: {', '.join(_tables(ctx))}")


def list_tables(ctx: SqlContext, _: NoArgs) -> ToolResult:
    tdesc = ctx.descriptions.get("tables", {})
    lines = [f"{t}: {tdesc.get(t, {}).get('description', '')}".rstrip(": ") for t in _tables(ctx)]
    return ToolResult(ok=True, output="\n".join(lines))


def describe_table(ctx: SqlContext, a: TableArg) -> ToolResult:
    if err := _unknown_table(ctx, a.table):
        return err
    td = ctx.descriptions.get("tables", {}).get(a.table, {})
    cdesc = td.get("columns", {})
    n = ctx.conn.execute(f'SELECT COUNT(*) FROM "{a.table}"').fetchone()[0]
    lines = [f"{a.table} ({n} rows): {td.get('description', '')}"]
    lines += [f"  {c} {typ}: {cdesc.get(c, {}).get('description', '')}" for c, typ in _columns(ctx, a.table)]
    return ToolResult(ok=True, output="\n".join(lines))


def describe_column(ctx: SqlContext, a: ColumnArg) -> ToolResult:
    if err := _unknown_table(ctx, a.table):
        return err
    cols = dict(_columns(ctx, a.table))
    if a.column not in cols:
        return ToolResult(ok=False, output=f"no column {a.column!r} in {a.table}; columns: {', '.join(cols)}")
    desc = ctx.descriptions.get("tables", {}).get(a.table, {}).get("columns", {}).get(a.column, {})
    q = f'"{a.column}"'
    n, nulls, distinct = ctx.conn.execute(
        f'SELECT COUNT(*), SUM({q} IS NULL), COUNT(DISTINCT {q}) FROM "{a.table}"').fetchone()
    sample = [r[0] for r in ctx.conn.execute(
        f'SELECT DISTINCT {q} FROM "{a.table}" WHERE {q} IS NOT NULL LIMIT 8')]
    return ToolResult(ok=True, output=(
        f"{a.table}.{a.column} {cols[a.column]}: {desc.get('description', '')}\n"
        f"rows {n}, NULL {nulls or 0}, distinct {distinct}; examples: {sample}"))


def search_business_info(ctx: SqlContext, a: SearchArg) -> ToolResult:
    """Entries sharing words with the query, best first (plain word overlap: predictable, no model)."""
    words = {w.strip(".,;:'\"?!()").lower() for w in a.query.split()} - {""}
    scored = []
    for e in ctx.business_info:
        text = f"{e.term} {e.text}".lower()
        score = sum(w in text for w in words)
        if score:
            scored.append((-score, e.id, e))
    if not scored:
        return ToolResult(ok=True, output=f"no business-info entry mentions {a.query!r}")
    return ToolResult(ok=True, output="\n".join(f"[{e.id}] {e.term + ': ' if e.term else ''}{e.text}"
                                                for _, _, e in sorted(scored)[:5]))


def _execute(ctx: SqlContext, sql: str) -> tuple[list[str], list[tuple], bool]:
    deadline = time.monotonic() + ctx.query_seconds
    ctx.conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    try:
        cur = ctx.conn.execute(sql)
        cols = [d[0] for d in cur.description or []]
        rows = cur.fetchmany(ctx.row_cap + 1)
    finally:
        ctx.conn.set_progress_handler(None, 0)
    return cols, rows[: ctx.row_cap], len(rows) > ctx.row_cap


def _sql_error(e: sqlite3.Error, ctx: SqlContext) -> str:
    msg = str(e)
    if "readonly" in msg or "read-only" in msg or "query_only" in msg:
        return "refused: the database is read-only; only SELECT (and WITH ... SELECT) queries run"
    if "interrupted" in msg:
        return f"query stopped after {ctx.query_seconds:.0f}s; add filters or avoid cross joins"
    return f"SQL error: {msg}"


def _format(cols: list[str], rows: list[tuple], capped: bool, cap: int) -> str:
    lines = [" | ".join(cols)] + [" | ".join("NULL" if v is None else str(v) for v in r) for r in rows]
    lines.append(f"({len(rows)} rows{f', output capped at {cap}' if capped else ''})")
    return "\n".join(lines)


def execute_query(ctx: SqlContext, a: SqlArg) -> ToolResult:
    try:
        cols, rows, capped = _execute(ctx, a.sql)
    except (sqlite3.Error, sqlite3.Warning) as e:
        return ToolResult(ok=False, output=_sql_error(e, ctx) if isinstance(e, sqlite3.Error) else str(e))
    return ToolResult(ok=True, output=_format(cols, rows, capped, ctx.row_cap))


def submit_final_query(ctx: SqlContext, a: SqlArg) -> ToolResult:
    """Ends the episode with this query; it must run (a broken query is refused so it can be fixed)."""
    res = execute_query(ctx, a)
    if not res.ok:
        return ToolResult(ok=False, output=f"not submitted: {res.output}")
    ctx.submitted.append(a.sql)
    return ToolResult(ok=True, output="submitted:\n" + res.output, final_sql=a.sql)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    args: type[BaseModel]
    handler: Callable[[SqlContext, Any], ToolResult]

    def openai_schema(self) -> dict[str, Any]:
        params = self.args.model_json_schema()
        params.pop("title", None)
        params.setdefault("properties", {})
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": params}}


TOOLS: dict[str, Tool] = {t.name: t for t in (
    Tool("list_tables", "List the database's tables with a one-line description each.", NoArgs, list_tables),
    Tool("describe_table", "Show a table's columns, types and descriptions.", TableArg, describe_table),
    Tool("describe_column", "Show one column's description, NULL count, distinct count and example values.",
         ColumnArg, describe_column),
    Tool("search_business_info", "Search the business-info document (definitions, rules) by keywords.",
         SearchArg, search_business_info),
    Tool("execute_query", f"Run a read-only SQLite query; at most {ROW_CAP} rows are shown.", SqlArg,
         execute_query),
    Tool("submit_final_query", "Submit the final SQL query that answers the question; ends the task.",
         SqlArg, submit_final_query),
)}


def openai_tools(names: list[str] | None = None) -> list[dict[str, Any]]:
    return [TOOLS[n].openai_schema() for n in (names or list(TOOLS))]


def call_tool(ctx: SqlContext, name: str, arguments: dict[str, Any]) -> ToolResult:
    """Validate ``arguments`` against the tool's model and run it; bad input is a clear result."""
    tool = TOOLS.get(name)
    if tool is None:
        return ToolResult(ok=False, output=f"unknown tool {name!r}; tools: {', '.join(TOOLS)}")
    try:
        args = tool.args.model_validate(arguments)
    except ValidationError as e:
        errs = "; ".join(f"{'.'.join(map(str, x['loc'])) or 'arguments'}: {x['msg']}" for x in e.errors())
        return ToolResult(ok=False, output=f"{name}: bad arguments ({errs})")
    return tool.handler(ctx, args)
