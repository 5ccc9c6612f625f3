"""Load and save ask tasks: our per-task layout, and HiL-Bench's released Harbor layout.

Ours (what :func:`save_task` writes, and the built-in tasks):

    <task>/metadata.json                        task_id, domain, database_name, database_path, ...
    <task>/problem_statement.txt                what the agent is asked
    <task>/ask-human-data/blocker_registry.json {"blockers": [...]}
    SQL: <task>/ground_truth.sql, golden_output.csv, data/business_info.json,
         data/schema_descriptions.json (imported tasks: the release's table and column descriptions)
    ours, validation only: <task>/validation/naive_queries.json {blocker_id: sql}

The release's (``<task>/<mode>/{task.toml,instruction.md}`` + ``<task>/shared/``) is read by
:mod:`impasse.ask.harbor`; the data then comes from ``shared/``. One loader serves both: a blocker
with ``kind`` + ``location`` is ours; one without is HiL-Bench's and is mapped through
``data/hilbench_subtypes.yaml``. The SQL database is not part of either layout: the importer
(:mod:`impasse.ask.importer`) finds it, checks it and pins its path.
"""

from __future__ import annotations

import csv
import io
import json
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from impasse.ask.harbor import (
    DESCRIPTIONS,
    HarborTask,
    TaskFormatError,
    check_full_info,
    is_harbor_task,
    read_descriptions,
    read_harbor,
)
from impasse.ask.schema import AskTask, Blocker, BusinessInfoEntry, SqlFields, SweFields

REGISTRY = Path("ask-human-data") / "blocker_registry.json"
NAIVE = Path("validation") / "naive_queries.json"
SCHEMA = Path("data") / "schema_descriptions.json"
"""Ours: the table and column descriptions an imported task brought along (the release's CSVs, read)."""


@cache
def hilbench_mapping() -> dict[str, Any]:
    text = resources.files("impasse.ask").joinpath("data/hilbench_subtypes.yaml").read_text()
    return yaml.safe_load(text)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError as e:
        raise TaskFormatError(f"{path}: missing (every task directory needs it)") from e
    except json.JSONDecodeError as e:
        raise TaskFormatError(f"{path}: not valid JSON ({e})") from e


def _fmt(path: Path, err: ValidationError, prefix: str = "") -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(p) for p in (prefix, *e["loc"]) if p != "")
        parts.append(f"field {loc or '(root)'}: {e['msg']}")
    return f"{path}: " + "; ".join(parts)


def map_hilbench_blocker(raw: dict[str, Any], domain: str) -> dict[str, Any]:
    """HiL-Bench record -> our record (kind + location added, original type/subtype kept)."""
    if "kind" in raw and "location" in raw:
        return raw
    m = hilbench_mapping()
    out = dict(raw)
    typ = str(raw.get("type", "")).strip().lower()
    sub = str(raw.get("subtype", "")).strip().lower()
    if domain == "sql":
        if sub not in m["sql_subtypes"]:
            raise ValueError(f"unknown HiL-Bench SQL subtype {raw.get('subtype')!r}; add it to "
                             "ask/data/hilbench_subtypes.yaml with a kind and a reason")
        out.setdefault("kind", m["sql_subtypes"][sub]["kind"])
        out.setdefault("location", m["sql_types"].get(typ, "question"))
    else:
        if typ not in m["swe_types"]:
            raise ValueError(f"unknown HiL-Bench SWE type {raw.get('type')!r}; expected one of "
                             f"{sorted(m['swe_types'])}")
        out.setdefault("kind", m["swe_types"][typ])
        out.setdefault("location", "spec")
    return out


def load_registry(path: Path, domain: str) -> list[Blocker]:
    data = _read_json(path)
    items = data.get("blockers") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise TaskFormatError(f"{path}: field blockers: expected a list of blocker records")
    out = []
    for i, raw in enumerate(items):
        if not isinstance(raw, dict):
            raise TaskFormatError(f"{path}: field blockers.{i}: expected an object")
        try:
            out.append(Blocker.model_validate(map_hilbench_blocker(raw, domain)))
        except ValidationError as e:
            raise TaskFormatError(_fmt(path, e, f"blockers.{i}")) from e
        except ValueError as e:
            raise TaskFormatError(f"{path}: field blockers.{i}.subtype: {e}") from e
    return out


def read_golden(path: Path) -> tuple[list[str], list[list[str | None]]]:
    """golden_output.csv -> (header, rows); an empty cell is SQL NULL."""
    if not path.exists():
        raise TaskFormatError(f"{path}: missing (SQL tasks need the golden output)")
    rows = list(csv.reader(io.StringIO(path.read_text())))
    if not rows:
        raise TaskFormatError(f"{path}: empty; the first line must be the column header")
    return rows[0], [[c if c != "" else None for c in r] for r in rows[1:]]


def write_golden(path: Path, columns: list[str], rows: list[list[Any]]) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow(["" if c is None else c for c in r])
    path.write_text(buf.getvalue())


def read_business_info(path: Path) -> list[BusinessInfoEntry]:
    """Ours: a list of {id, term, text}; HiL-Bench's: {"business_info": [str, ...]} -> ids bi_1..."""
    if not path.exists():
        return []
    data = _read_json(path)
    items = data.get("business_info", []) if isinstance(data, dict) else data
    out = []
    for i, item in enumerate(items, 1):
        rec = {"id": f"bi_{i}", "text": item} if isinstance(item, str) else item
        try:
            out.append(BusinessInfoEntry.model_validate(rec))
        except ValidationError as e:
            raise TaskFormatError(_fmt(path, e, f"business_info.{i - 1}")) from e
    return out


def _statement(d: Path, meta: dict[str, Any]) -> str:
    p = d / "problem_statement.txt"
    if p.exists():
        return p.read_text().strip()
    for key in ("problem_statement", "question"):
        if isinstance(meta.get(key), str):
            return meta[key]
    raise TaskFormatError(f"{p}: missing, and metadata.json has no 'problem_statement' or 'question'")


def _domain(d: Path, meta: dict[str, Any]) -> str:
    if meta.get("domain") in ("sql", "swe"):
        return meta["domain"]
    if (d / "ground_truth.sql").exists() or "database_name" in meta:
        return "sql"
    if "instance_id" in meta or (d / "image_refs.json").exists():
        return "swe"
    raise TaskFormatError(f"{d / 'metadata.json'}: field domain: cannot tell sql from swe; set "
                          "\"domain\": \"sql\" or \"swe\"")


def _sql_fields(d: Path, meta: dict[str, Any], harbor: HarborTask | None) -> SqlFields:
    gt = harbor.first_existing("ground_truth.sql", "solution/ground_truth.sql", "tests/ground_truth.sql") \
        if harbor else d / "ground_truth.sql"
    if gt is None or not gt.exists():
        raise TaskFormatError(f"{gt or d / 'ground_truth.sql'}: missing (SQL tasks need the ground-truth query)")
    golden = (harbor.first_existing("golden_output.csv", "tests/golden_output.csv") if harbor else None) \
        or d / "golden_output.csv"
    cols, rows = read_golden(golden)
    naive = _read_json(d / NAIVE) if (d / NAIVE).exists() else {}
    name = meta.get("database_name") or meta.get("database")
    if not name:
        raise TaskFormatError(f"{d / 'metadata.json'}: field database_name: missing")
    descriptions = read_descriptions(d / DESCRIPTIONS) if harbor else \
        (_read_json(d / SCHEMA) if (d / SCHEMA).exists() else None)
    pinned = meta.get("database_path")  # an imported task remembers the database it was checked against
    return SqlFields(database=name, database_path=str(pinned) if pinned else None,
                     ground_truth_sql=gt.read_text().strip(), golden_columns=cols, golden_rows=rows,
                     business_info=read_business_info(d / "data" / "business_info.json"),
                     naive_queries=naive, descriptions=descriptions)


def _swe_fields(meta: dict[str, Any]) -> SweFields:
    sbm = meta.get("swe_bench_metadata") or {}
    return SweFields(instance_id=meta.get("instance_id"), image=meta.get("image_name") or meta.get("image"),
                     repo=meta.get("repo_name_source") or meta.get("repo"),
                     base_commit=meta.get("base_commit"), test_cmd=meta.get("test_cmd"),
                     fail_to_pass=_as_list(sbm.get("FAIL_TO_PASS", meta.get("FAIL_TO_PASS", []))),
                     pass_to_pass=_as_list(sbm.get("PASS_TO_PASS", meta.get("PASS_TO_PASS", []))),
                     package=meta.get("package"))


def _as_list(v: Any) -> list[str]:
    return json.loads(v) if isinstance(v, str) else list(v or [])


def load_task(task_dir: Path | str) -> AskTask:
    """Read one task directory: ours, or a HiL-Bench release task (Harbor's ``<mode>/task.toml`` +
    ``<mode>/instruction.md`` + ``shared/``). Errors name the file and the field."""
    d = Path(task_dir)
    harbor = None
    if is_harbor_task(d):
        harbor = read_harbor(d)
        d = harbor.shared
    elif (d / "shared" / "metadata.json").exists():  # data in shared/ without mode directories
        d = d / "shared"
    meta = _read_json(d / "metadata.json")
    if not isinstance(meta, dict):
        raise TaskFormatError(f"{d / 'metadata.json'}: expected a JSON object")
    domain = harbor.domain if harbor else _domain(d, meta)
    blockers = load_registry(d / REGISTRY, domain)
    if harbor:
        check_full_info(harbor, blockers)
    fields: dict[str, Any] = {"sql": _sql_fields(d, meta, harbor)} if domain == "sql" else \
        {"swe": _swe_fields(meta)}
    # ours carry "domain" + "task_id"; HiL-Bench's "task_id" is an opaque hex id, so prefer its
    # readable ids there
    ours = "domain" in meta and meta.get("source", "impasse") == "impasse"
    task_id = (meta.get("task_id") if ours else None) or meta.get("hf_task_id") \
        or meta.get("instance_id") or meta.get("dataset_name") \
        or (d.parent.name if d.name == "shared" else d.name)
    if harbor:
        meta = {**meta, "release_archive": harbor.archive}
    try:
        return AskTask(task_id=str(task_id), domain=domain,
                       problem_statement=harbor.question if harbor else _statement(d, meta),
                       blockers=blockers, metadata=meta, runnable=meta.get("runnable", True),
                       not_runnable_reason=meta.get("not_runnable_reason"),
                       source=meta.get("source", "hilbench" if harbor else "impasse"), **fields)
    except ValidationError as e:
        raise TaskFormatError(_fmt(d, e)) from e


def save_task(task: AskTask, task_dir: Path | str) -> Path:
    """Write ``task`` in the layout (our registry fields included). Returns the directory."""
    d = Path(task_dir)
    (d / REGISTRY).parent.mkdir(parents=True, exist_ok=True)
    meta = {**task.metadata, "task_id": task.task_id, "domain": task.domain, "source": task.source}
    if not task.runnable:
        meta.update(runnable=False, not_runnable_reason=task.not_runnable_reason)
    if task.sql:
        meta.update(database_name=task.sql.database, num_blockers=len(task.blockers))
        if task.sql.database_path:
            meta["database_path"] = task.sql.database_path
    (d / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n")
    (d / "problem_statement.txt").write_text(task.problem_statement.strip() + "\n")
    reg = {"blockers": [b.model_dump(exclude_none=True) for b in task.blockers]}
    (d / REGISTRY).write_text(json.dumps(reg, indent=2) + "\n")
    if task.sql:
        (d / "ground_truth.sql").write_text(task.sql.ground_truth_sql.strip() + "\n")
        write_golden(d / "golden_output.csv", task.sql.golden_columns, task.sql.golden_rows)
        (d / "data").mkdir(exist_ok=True)
        bi = {"database_name": task.sql.database,
              "business_info": [e.model_dump() for e in task.sql.business_info]}
        (d / "data" / "business_info.json").write_text(json.dumps(bi, indent=2) + "\n")
        if task.sql.descriptions:
            (d / SCHEMA).write_text(json.dumps(task.sql.descriptions, indent=1) + "\n")
        if task.sql.naive_queries:
            (d / NAIVE).parent.mkdir(exist_ok=True)
            (d / NAIVE).write_text(json.dumps(task.sql.naive_queries, indent=2) + "\n")
    return d


def _natural(p: Path) -> list[Any]:
    """sql_2 before sql_10."""
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", str(p))]


def task_dirs(root: Path) -> list[Path]:
    """The task directories under ``root`` (itself, or every folder holding a ``metadata.json``
    or a ``shared/metadata.json``), in natural order."""
    if (root / "metadata.json").exists() or (root / "shared" / "metadata.json").exists():
        return [root]
    found = {p.parent.parent if p.parent.name == "shared" else p.parent
             for p in root.rglob("metadata.json")}
    return sorted(found, key=_natural)
