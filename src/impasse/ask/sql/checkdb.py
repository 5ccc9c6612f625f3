"""Is this database the one a SQL ask task was written against? Checked, not trusted.

HiL-Bench's databases are the authors' modified copies of BIRD's (columns plain BIRD lacks), so a
database is accepted for a task only when it holds every table and column the ground-truth query
and the blockers' resolutions use, and the ground truth reproduces the golden output. The query is
parsed with sqlglot (aliases, CTEs and sub-queries resolved to the tables they stand for); the
resolutions are free text, so ``table.column`` names in them are taken where ``table`` is a
table the query or the database knows.
"""

from __future__ import annotations

import re
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

QUERY_SECONDS = 60.0
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
DOTTED = re.compile(rf"[`\"\[]?({IDENT})[`\"\]]?\.[`\"\[]?({IDENT})[`\"\]]?")


@dataclass
class Uses:
    """Tables and (table, column) pairs a query reads; ``loose`` columns have no resolvable table."""

    tables: set[str] = field(default_factory=set)
    columns: set[tuple[str, str]] = field(default_factory=set)
    loose: set[str] = field(default_factory=set)


def schema_of(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """lower-case table -> lower-case column names."""
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")]
    return {t.lower(): {r[1].lower() for r in conn.execute(f'PRAGMA table_info("{t.replace(chr(34), "")}")')}
            for t in tables}


def query_uses(sql: str) -> Uses:
    """What a query reads, by sqlglot's SQLite reading; CTE and derived-table names are not tables."""
    import sqlglot
    from sqlglot import exp

    uses = Uses()
    for tree in sqlglot.parse(sql, read="sqlite"):
        if tree is None:
            continue
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        derived = {s.alias.lower() for s in tree.find_all(exp.Subquery) if s.alias}
        aliases: dict[str, str] = {}
        for t in tree.find_all(exp.Table):
            name = t.name.lower()
            if name in ctes or not name:
                continue
            uses.tables.add(name)
            aliases[(t.alias or t.name).lower()] = name
        outputs = {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}
        for c in tree.find_all(exp.Column):
            col, qual = c.name.lower(), c.table.lower()
            if not col or col == "*":
                continue
            if qual:
                if qual in aliases:
                    uses.columns.add((aliases[qual], col))
                elif qual not in ctes | derived:
                    uses.columns.add((qual, col))  # a qualifier naming no table in the query
            elif col not in outputs:
                uses.loose.add(col)
    return uses


def resolution_uses(text: str, known_tables: set[str]) -> set[tuple[str, str]]:
    """``table.column`` names in a resolution, where ``table`` is a known table."""
    return {(t.lower(), c.lower()) for t, c in DOTTED.findall(text) if t.lower() in known_tables}


def missing_from(schema: dict[str, set[str]], uses: Uses, query_tables: set[str]) -> list[str]:
    """Names of what ``uses`` needs that ``schema`` lacks (tables first, then columns)."""
    out = [f"table {t}" for t in sorted(uses.tables) if t not in schema]
    for t, c in sorted(uses.columns):
        if t in schema and c not in schema[t]:
            out.append(f"column {t}.{c}")
        elif t not in schema and f"table {t}" not in out:
            out.append(f"table {t} (for column {t}.{c})")
    in_scope = [schema[t] for t in query_tables if t in schema]
    out += [f"column {c} (in none of {', '.join(sorted(query_tables))})" for c in sorted(uses.loose)
            if in_scope and not any(c in cols for cols in in_scope)]
    return out


def run_query(conn: sqlite3.Connection, sql: str, seconds: float = QUERY_SECONDS) -> list[tuple[Any, ...]]:
    deadline = time.monotonic() + seconds
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.set_progress_handler(None, 0)


def check_database(task: Any, path: Path) -> list[str]:
    """Problems that make ``path`` the wrong database for SQL ``task`` (empty: it fits).

    Checks, in order: it opens as SQLite; it holds every table and column the ground truth and the
    blockers' resolutions use; the ground truth runs and reproduces the golden output."""
    from impasse.ask.sql.scorer import results_match

    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        schema = schema_of(conn)
    except sqlite3.Error as e:
        return [f"{path} is not a readable SQLite database ({e})"]
    try:
        if not schema:
            return [f"{path} holds no tables"]
        gt = task.sql.ground_truth_sql
        uses = query_uses(gt)
        for b in task.blockers:
            uses.columns |= resolution_uses(b.resolution, set(schema) | uses.tables)
        missing = missing_from(schema, uses, uses.tables)
        if missing:
            return [f"{path} lacks {', '.join(missing)} (used by the ground truth or a blocker's resolution): it is "
                    f"not the database this task was written against"]
        try:
            rows = run_query(conn, gt)
        except sqlite3.Error as e:
            return [f"the ground truth fails on {path}: {e}"]
        if task.sql.golden_columns and not results_match(task.sql.golden_rows, rows, column_order=True):
            return [f"the ground truth on {path} gives {len(rows)} row(s) that differ from golden_output.csv "
                    f"({len(task.sql.golden_rows)} row(s)): the data is not the task's"]
        return []
    finally:
        conn.close()
