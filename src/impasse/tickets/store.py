"""Durable store for what agents hand to people: escalation tickets and questions.

One SQLite file, WAL journal, ``synchronous=FULL``: a record is on disk once :meth:`add_*`
returns, so a server that acknowledges a call only after that return loses nothing it
acknowledged, even when it is killed with SIGKILL a moment later. One row per tool call, with
the judge's ratings next to the ticket, so ``impasse tickets list`` needs no re-judging.

Readers and writers in separate processes are fine (WAL); each call opens its own short
transaction. Standard library only: the store belongs to the core install.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL CHECK (kind IN ('escalation', 'question')),
  session TEXT NOT NULL,
  created REAL NOT NULL,
  payload TEXT NOT NULL,
  ratings TEXT,
  sufficient INTEGER,
  issues TEXT,
  status TEXT NOT NULL,
  answer TEXT,
  answered_by TEXT,
  answered_at REAL
);
CREATE INDEX IF NOT EXISTS records_kind ON records (kind, id);
"""
CONTEXT_COLUMN = "ALTER TABLE records ADD COLUMN context TEXT"
"""Added to stores made before reviewers existed: what a reviewer sees besides the ticket (the
task, the agent's steps and diff), written by a run's ``human`` reviewer."""
DECISIONS = ("accepted", "rejected")
WAITING = ("queued", "open", "filed")
"""Statuses of a record that waits for a person: an escalation ``queued`` for a decision, a
question ``open``; ``filed`` is what stores written before the review page called an MCP
escalation (it waits like ``queued``)."""


class StoreError(ValueError):
    pass


@dataclass(frozen=True)
class Record:
    id: int
    kind: str
    session: str
    created: float
    payload: dict[str, Any]
    """The ticket (escalation) or ``{"question": ...}`` (question), as the agent sent it."""
    ratings: dict[str, str] | None
    sufficient: bool | None
    issues: list[str]
    """Truthfulness contradictions found when the ticket was filed."""
    status: str
    """A question: ``open`` (waiting for a person) or ``answered``. An escalation: ``queued``
    (waiting for a decision), then ``accepted`` or ``rejected``."""
    answer: str | None
    answered_by: str | None
    """``registry`` (matched a registered blocker), ``human`` or ``limit``."""
    answered_at: float | None
    context: dict[str, Any] | None = None
    """For a run's escalations: ``task``, ``steps``, ``workspace_diff``, ``condition``, ``item``."""

    @property
    def waiting(self) -> bool:
        """A person still has to answer or decide it."""
        return self.status in WAITING

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _record(row: sqlite3.Row) -> Record:
    return Record(id=row["id"], kind=row["kind"], session=row["session"], created=row["created"],
                  payload=json.loads(row["payload"]), ratings=json.loads(row["ratings"]) if row["ratings"] else None,
                  sufficient=None if row["sufficient"] is None else bool(row["sufficient"]),
                  issues=json.loads(row["issues"]) if row["issues"] else [], status=row["status"],
                  answer=row["answer"], answered_by=row["answered_by"], answered_at=row["answered_at"],
                  context=json.loads(row["context"]) if row["context"] else None)


class TicketStore:
    """Escalations and questions in one SQLite file (created on first use)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with self._connect() as db:
                db.executescript(SCHEMA)
                if "context" not in {r["name"] for r in db.execute("PRAGMA table_info(records)")}:
                    db.execute(CONTEXT_COLUMN)
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path} is not a ticket store (SQLite: {e}); give another --store") from e

    def _connect(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        except sqlite3.Error as e:
            raise StoreError(f"cannot open ticket store {self.path}: {e}") from e
        db.row_factory = sqlite3.Row
        try:
            db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.DatabaseError as e:
            db.close()
            raise StoreError(f"{self.path} is not a ticket store (SQLite: {e}); give another --store") from e
        db.execute("PRAGMA synchronous=FULL")  # a commit is fsync'd: acknowledged means on disk
        return db

    def _insert(self, **cols: Any) -> int:
        names = ", ".join(cols)
        marks = ", ".join("?" for _ in cols)
        db = self._connect()
        try:
            with db:
                db.execute("BEGIN IMMEDIATE")
                cur = db.execute(f"INSERT INTO records ({names}) VALUES ({marks})", tuple(cols.values()))
                return int(cur.lastrowid)
        finally:
            db.close()

    def add_escalation(self, session: str, ticket: dict[str, Any], ratings: dict[str, str], sufficient: bool,
                       issues: list[str], context: dict[str, Any] | None = None) -> int:
        """A ticket, ``queued`` for a person's decision, whoever filed it: a run's reviewer (with
        ``context``: what the person needs to judge it) or the MCP server (the agent polls the
        decision with ``check_answer``)."""
        extra = {"context": json.dumps(context)} if context is not None else {}
        return self._insert(kind="escalation", session=session, created=time.time(), payload=json.dumps(ticket),
                            ratings=json.dumps(ratings), sufficient=int(sufficient), issues=json.dumps(issues),
                            status="queued", **extra)

    def decide(self, record_id: int, decision: str, message: str = "", by: str = "human") -> Record:
        """Accept or reject a queued escalation, committed (fsync'd) before it returns; deciding
        twice is an error naming the first decision."""
        if decision not in DECISIONS:
            raise StoreError(f"decision {decision!r}: use one of {', '.join(DECISIONS)}")

        def check(row: sqlite3.Row) -> None:
            if row["kind"] != "escalation":
                raise StoreError(f"record {record_id} is a question: answer it instead")
            if row["status"] not in WAITING:
                raise StoreError(f"escalation {record_id} is {row['status']}, not waiting for a decision")

        return self._settle(record_id, check, decision, message, by)

    def find(self, session: str, item: int) -> Record | None:
        """A run's escalation by its episode (``session``) and item number (a resumed episode
        finds the row it filed before)."""
        db = self._connect()
        try:
            row = db.execute("SELECT * FROM records WHERE kind='escalation' AND session=? AND "
                             "json_extract(context, '$.item') = ?", (session, item)).fetchone()
        finally:
            db.close()
        return _record(row) if row is not None else None

    def decided_since(self, since: float, by: str = "human") -> int:
        """Escalations decided and questions answered by ``by`` since ``since`` (the reviewer's load)."""
        db = self._connect()
        try:
            row = db.execute("SELECT COUNT(*) FROM records WHERE answered_by=? AND answered_at>=?", (by, since)).fetchone()
        finally:
            db.close()
        return int(row[0])

    def add_question(self, session: str, question: str, answer: str | None = None,
                     answered_by: str | None = None, blocker: str | None = None) -> int:
        """A question; with ``answer`` it is stored answered (``blocker``: the registry entry matched)."""
        answered = answer is not None
        payload = {"question": question, "blocker": blocker}
        return self._insert(kind="question", session=session, created=time.time(),
                            payload=json.dumps(payload), status="answered" if answered else "open",
                            answer=answer, answered_by=answered_by, answered_at=time.time() if answered else None)

    def answer(self, record_id: int, text: str, by: str = "human") -> Record:
        """Answer an open question. Answering twice, or answering an escalation, is an error."""

        def check(row: sqlite3.Row) -> None:
            if row["kind"] != "question":
                raise StoreError(f"record {record_id} is an escalation, not a question: accept or reject it (the "
                                 "review page, or `impasse tickets decide`), with your answer as its message")
            if row["status"] != "open":
                raise StoreError(f"question {record_id} was already answered ({row['answered_by']}): {row['answer']!r}")

        return self._settle(record_id, check, "answered", text, by)

    def _settle(self, record_id: int, check: Any, status: str, answer: str, by: str) -> Record:
        """One record's answer or decision, checked by ``check(row)`` and written in one immediate
        transaction, so two reviewers answering at once cannot both succeed."""
        db = self._connect()
        try:
            with db:
                db.execute("BEGIN IMMEDIATE")
                row = db.execute("SELECT * FROM records WHERE id = ?", (record_id,)).fetchone()
                if row is None:
                    raise StoreError(f"no record {record_id} in {self.path}; see `impasse tickets list`")
                check(row)
                db.execute("UPDATE records SET status=?, answer=?, answered_by=?, answered_at=? WHERE id=?",
                           (status, answer, by, time.time(), record_id))
        finally:
            db.close()
        return self.get(record_id)

    def get(self, record_id: int) -> Record:
        db = self._connect()
        try:
            row = db.execute("SELECT * FROM records WHERE id = ?", (record_id,)).fetchone()
        finally:
            db.close()
        if row is None:
            raise StoreError(f"no record {record_id} in {self.path}; see `impasse tickets list`")
        return _record(row)

    def list(self, kind: str | None = None, newest_first: bool = False) -> list[Record]:
        order = "DESC" if newest_first else "ASC"
        db = self._connect()
        try:
            if kind:
                rows = db.execute(f"SELECT * FROM records WHERE kind = ? ORDER BY id {order}", (kind,)).fetchall()
            else:
                rows = db.execute(f"SELECT * FROM records ORDER BY id {order}").fetchall()
        finally:
            db.close()
        return [_record(r) for r in rows]

    def answered_count(self, session: str, by: str) -> int:
        """Questions of ``session`` that ``by`` answered with a blocker's resolution: an
        ``irrelevant question`` reply answers nothing, so (as in the benchmark) it does not use up
        the session's cap."""
        db = self._connect()
        try:
            row = db.execute("SELECT COUNT(*) FROM records WHERE kind='question' AND session=? AND answered_by=? "
                             "AND json_extract(payload, '$.blocker') IS NOT NULL", (session, by)).fetchone()
        finally:
            db.close()
        return int(row[0])
