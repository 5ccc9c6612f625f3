"""Load and save ask tasks in HiL-Bench's public per-task layout.

    <task>/metadata.json                        task_id, domain, database_name, ...
    <task>/problem_statement.txt                what the agent is asked
    <task>/ask-human-data/blocker_registry.json {"blockers": [...]}
    SQL: <task>/ground_truth.sql, golden_output.csv, data/business_info.json
    ours, validation only: <task>/validation/naive_queries.json {blocker_id: sql}

One loader serves our tasks and HiL-Bench's: a blocker with ``kind`` + ``location`` is ours; one
without is HiL-Bench's and is mapped through ``data/hilbench_subtypes.yaml``. The SQL database is not
part of the layout: :func:`import_hilbench` takes it as an argument.
"""

from __future__ import annotations

import csv
import io
import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from impasse.ask.schema import AskTask, Blocker, BusinessInfoEntry, SqlFields, SweFields

REGISTRY = Path("ask-human-data") / "blocker_registry.json"
NAIVE = Path("validation") / "naive_queries.json"
SWE_NOT_RUNNABLE = ("needs the authors' container image {image}: impasse's Docker backend (--backend docker) "
                    "runs images it builds from its own task layers and pulls nothing from a registry (none is "
                    "reachable here), so this task cannot run here")


def swe_not_runnable(image: str | None) -> str:
    """Why an imported HiL-Bench SWE task does not run here (the image is named so a user can check)."""
    return SWE_NOT_RUNNABLE.format(image=repr(image) if image else "(metadata names none)")


class TaskFormatError(ValueError):
    """A task directory does not follow the layout; the message names the file and field."""


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


def _sql_fields(d: Path, meta: dict[str, Any], database: Path | None) -> SqlFields:
    gt = d / "ground_truth.sql"
    if not gt.exists():
        raise TaskFormatError(f"{gt}: missing (SQL tasks need the ground-truth query)")
    cols, rows = read_golden(d / "golden_output.csv")
    naive = _read_json(d / NAIVE) if (d / NAIVE).exists() else {}
    name = meta.get("database_name") or meta.get("database")
    if not name:
        raise TaskFormatError(f"{d / 'metadata.json'}: field database_name: missing")
    pinned = database or meta.get("database_path")  # an imported task remembers the database it was given
    return SqlFields(database=name, database_path=str(pinned) if pinned else None,
                     ground_truth_sql=gt.read_text().strip(), golden_columns=cols, golden_rows=rows,
                     business_info=read_business_info(d / "data" / "business_info.json"),
                     naive_queries=naive)


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


def load_task(task_dir: Path | str, *, database: Path | None = None) -> AskTask:
    """Read one task directory (ours or HiL-Bench's). Errors name the file and the field."""
    d = Path(task_dir)
    if (d / "shared" / "metadata.json").exists():  # a Harbor task folder: the data is in shared/
        d = d / "shared"
    meta = _read_json(d / "metadata.json")
    if not isinstance(meta, dict):
        raise TaskFormatError(f"{d / 'metadata.json'}: expected a JSON object")
    domain = _domain(d, meta)
    blockers = load_registry(d / REGISTRY, domain)
    fields: dict[str, Any] = {"sql": _sql_fields(d, meta, database)} if domain == "sql" else \
        {"swe": _swe_fields(meta)}
    # ours carry "domain" + "task_id"; HiL-Bench's "task_id" is an opaque hex id, so prefer its
    # readable ids there
    ours = "domain" in meta and meta.get("source", "impasse") == "impasse"
    task_id = (meta.get("task_id") if ours else None) or meta.get("hf_task_id") \
        or meta.get("instance_id") or meta.get("dataset_name") \
        or (d.parent.name if d.name == "shared" else d.name)
    try:
        return AskTask(task_id=str(task_id), domain=domain, problem_statement=_statement(d, meta),
                       blockers=blockers, metadata=meta, runnable=meta.get("runnable", True),
                       not_runnable_reason=meta.get("not_runnable_reason"),
                       source=meta.get("source", "impasse"), **fields)
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
        if task.sql.naive_queries:
            (d / NAIVE).parent.mkdir(exist_ok=True)
            (d / NAIVE).write_text(json.dumps(task.sql.naive_queries, indent=2) + "\n")
    return d


def task_dirs(root: Path) -> list[Path]:
    if (root / "metadata.json").exists() or (root / "shared" / "metadata.json").exists():
        return [root]
    found = {p.parent.parent if p.parent.name == "shared" else p.parent
             for p in root.rglob("metadata.json")}
    return sorted(found)


def import_hilbench(root: Path | str, *, database: Path | str | None = None) -> list[AskTask]:
    """Import HiL-Bench tasks under ``root`` (one task dir, a Harbor ``harbor_sql``/``harbor_swe``
    folder, or a checkout). SQL tasks run only against a database you pass (``database=`` a SQLite
    file, or a folder holding ``<database_name>.sqlite``); SWE tasks are validated and marked
    ``runnable=False``: they need the authors' images."""
    root = Path(root)
    if not root.exists():
        raise TaskFormatError(f"{root}: no such directory")
    dirs = task_dirs(root)
    if not dirs:
        raise TaskFormatError(f"{root}: no task directory (metadata.json) found under it")
    tasks = []
    for d in dirs:
        t = load_task(d)
        t = t.model_copy(update={"source": "hilbench"})
        if t.domain == "swe":
            t = t.model_copy(update={"runnable": False,
                                     "not_runnable_reason": swe_not_runnable(t.swe.image if t.swe else None)})
        else:
            t = _attach_database(t, Path(database) if database else None)
        tasks.append(AskTask.model_validate(t.model_dump()))
    return tasks


def write_imported(tasks: list[AskTask], out: Path | str) -> tuple[list[Path], list[AskTask]]:
    """Write the runnable imported tasks under ``out/<task_id>/`` (our layout, the database pinned in
    metadata.json) for ``impasse run --suite ask --task-dir OUT``; -> (written dirs, tasks left out
    because they cannot run here, each with its reason)."""
    out = Path(out)
    written, left = [], []
    for t in tasks:
        if not t.runnable:
            left.append(t)
            continue
        written.append(save_task(t, out / t.task_id))
    return written, left


def _attach_database(t: AskTask, database: Path | None) -> AskTask:
    assert t.sql is not None
    name = t.sql.database
    path = database / f"{name}.sqlite" if database and database.is_dir() else database
    if path is None or not path.is_file():
        why = (f"needs the BIRD database {name!r}: pass database=PATH (a SQLite file or a folder "
               f"holding {name}.sqlite)" if path is None else f"database {path} does not exist")
        return t.model_copy(update={"runnable": False, "not_runnable_reason": why})
    sql = t.sql.model_copy(update={"database_path": str(path.resolve())})
    return t.model_copy(update={"sql": sql})
