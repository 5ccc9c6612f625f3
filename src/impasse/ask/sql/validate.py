"""Check that every SQL ask task is sound: the key is right and each blocker really matters.

For each task: the ground truth runs and equals ``golden_output.csv``; each blocker's naive query
(the query an analyst writes with every OTHER resolution but not this one) runs and gives a
DIFFERENT result. A blocker whose naive query still passes would be free to guess, so it is an
error. Run ``python -m impasse.ask.sql.validate`` for the summary.
"""

from __future__ import annotations

import sqlite3
import sys
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from impasse.ask.schema import KINDS, AskTask
from impasse.ask.sql.database import build_database
from impasse.ask.sql.scorer import results_match
from impasse.ask.taskdir import load_task


def builtin_task_dirs() -> list[Path]:
    root = Path(str(resources.files("impasse.ask").joinpath("data/sql")))
    return sorted(p for p in root.iterdir() if (p / "metadata.json").exists())


def load_builtin_tasks() -> list[AskTask]:
    return [load_task(d) for d in builtin_task_dirs()]


@dataclass
class TaskReport:
    task_id: str
    problems: list[str] = field(default_factory=list)


def _run(conn: sqlite3.Connection, sql: str) -> list[tuple]:
    return conn.execute(sql).fetchall()


def check_task(task: AskTask, conn: sqlite3.Connection) -> TaskReport:
    assert task.sql is not None
    rep = TaskReport(task.task_id)
    try:
        rows = _run(conn, task.sql.ground_truth_sql)
    except sqlite3.Error as e:
        rep.problems.append(f"ground_truth.sql fails: {e}")
        return rep
    if not results_match(task.sql.golden_rows, rows, column_order=True):
        rep.problems.append("ground_truth.sql result differs from golden_output.csv")
    missing = [b.id for b in task.blockers if b.id not in task.sql.naive_queries]
    if missing:
        rep.problems.append(f"no naive query for blockers {missing}")
    for bid, sql in task.sql.naive_queries.items():
        try:
            got = _run(conn, sql)
        except sqlite3.Error as e:
            rep.problems.append(f"naive query of {bid} fails: {e}")
            continue
        if results_match(task.sql.golden_rows, got):
            rep.problems.append(f"naive query of {bid} gives the golden result: the blocker does not matter")
    return rep


def validate(tasks: list[AskTask]) -> list[TaskReport]:
    conns: dict[str, sqlite3.Connection] = {}
    out = []
    for t in tasks:
        assert t.sql is not None
        if t.sql.database not in conns:
            path = build_database(t.sql.database)
            conns[t.sql.database] = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        out.append(check_task(t, conns[t.sql.database]))
    for c in conns.values():
        c.close()
    return out


def summary(tasks: list[AskTask]) -> str:
    kinds = Counter(b.kind for t in tasks for b in t.blockers)
    per = Counter(len(t.blockers) for t in tasks)
    where = Counter(b.location.split(":")[0] for t in tasks for b in t.blockers)
    dbs = Counter(t.sql.database for t in tasks if t.sql)
    total = sum(kinds.values())
    lines = [f"tasks: {len(tasks)} ({', '.join(f'{k}: {v}' for k, v in sorted(dbs.items()))})",
             f"blockers: {total} (mean {total / max(len(tasks), 1):.2f} per task; "
             + ", ".join(f"{n} blockers: {c} tasks" for n, c in sorted(per.items())) + ")",
             "kinds: " + ", ".join(f"{k} {kinds[k]} ({100 * kinds[k] / max(total, 1):.0f}%)" for k in KINDS),
             "locations: " + ", ".join(f"{k} {v}" for k, v in where.most_common())]
    return "\n".join(lines)


def main() -> int:
    tasks = load_builtin_tasks()
    reports = validate(tasks)
    bad = [r for r in reports if r.problems]
    for r in bad:
        for p in r.problems:
            print(f"FAIL {r.task_id}: {p}")
    print(summary(tasks))
    print(f"validated: {len(reports) - len(bad)}/{len(reports)} tasks sound")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
