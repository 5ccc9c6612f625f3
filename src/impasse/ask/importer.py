"""``impasse ask import``: HiL-Bench's release (or any folder of task directories) -> tasks
``impasse run --suite ask --task-dir`` runs. One task at a time; a bad one is reported and skipped.

Every task is validated (layout, the three modes against each other and the registry, blocker
labels). Then, per domain:

* SQL: the database is found (``--database``: one SQLite file, or a folder holding
  ``<database_name>.sqlite``, ``<dataset_name>/database.sqlite`` or
  ``<hf_task_id>/<database_name>.sqlite``; else the task's own ``shared/data/database.sqlite``,
  where the release's warm-up script puts it) and checked against the task
  (:func:`impasse.ask.sql.checkdb.check_database`). A task whose database is absent is reported with
  where the release says it lives; one whose database lacks what the task uses is refused naming it.
  The release's column descriptions are imported when present (schema blockers surface through
  them), and their absence is said.
* SWE: validated, never written: the tasks need their authors' container images.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from impasse.ask.harbor import data_location, read_descriptions
from impasse.ask.schema import AskTask
from impasse.ask.taskdir import TaskFormatError, load_task, save_task, task_dirs

Status = Literal["written", "not_runnable", "refused", "invalid"]
SWE_NOT_RUNNABLE = ("needs the authors' container image {image}: impasse's Docker backend (--backend docker) "
                    "runs images it builds from its own task layers and pulls nothing from a registry (none is "
                    "reachable here), so this task cannot run here")


def swe_not_runnable(image: str | None, where: str = "") -> str:
    """Why an imported HiL-Bench SWE task does not run here (the image is named so a user can check)."""
    why = SWE_NOT_RUNNABLE.format(image=repr(image) if image else "(metadata names none)")
    return f"{why}; {where}" if where else why


@dataclass
class ImportResult:
    """What became of one task directory."""

    path: Path
    status: Status
    task: AskTask | None = None
    reason: str = ""
    notes: list[str] = field(default_factory=list)
    written_to: Path | None = None

    @property
    def task_id(self) -> str:
        return self.task.task_id if self.task else self.path.name

    @property
    def valid(self) -> bool:
        return self.status != "invalid"


def database_candidates(task: AskTask, database: Path | None, shared: Path | None) -> list[Path]:
    """Where the task's database may be, in order: under ``--database``, else in the task's own
    ``shared/data/``."""
    assert task.sql is not None
    name, meta = task.sql.database, task.metadata
    if database is not None and not database.is_dir():
        return [database]
    out: list[Path] = []
    if database is not None:
        out += [database / f"{name}.sqlite"]
        out += [database / str(meta[k]) / f for k in ("dataset_name", "hf_task_id") if meta.get(k)
                for f in ("database.sqlite", f"{name}.sqlite")]
    if shared is not None and database is None:
        out.append(shared / "data" / "database.sqlite")
    return out


def _missing_database(task: AskTask, database: Path | None, harbor_where: str, shared: Path | None) -> str:
    assert task.sql is not None
    name = task.sql.database
    if database is not None and not database.is_dir():
        return f"--database {database} does not exist"
    looked = f"no {name}.sqlite (or per-task database.sqlite) under --database {database}" if database else \
        "no shared/data/database.sqlite in the task directory"
    leftovers = sorted(p.name for p in (shared / "data").glob("database.sqlite-*")) if shared else []
    if leftovers and not database:
        looked += f" (only SQLite journal leftovers: {', '.join(leftovers)})"
    return (f"needs the authors' modified copy of the database {name!r} (columns plain BIRD lacks): {looked}; "
            f"{harbor_where}; then import again (or pass --database)")


def attach_database(task: AskTask, database: Path | None, shared: Path | None, where: str) -> ImportResult:
    """A SQL task with its database found and checked, or why not."""
    from impasse.ask.sql.checkdb import check_database

    assert task.sql is not None
    path = next((p for p in database_candidates(task, database, shared) if p.is_file()), None)
    if path is None:
        return ImportResult(Path(), "not_runnable", task, _missing_database(task, database, where, shared))
    problems = check_database(task, path)
    if problems:
        return ImportResult(Path(), "refused", task, "; ".join(problems))
    notes = []
    if not task.sql.descriptions:  # beside the database: the bucket's layout, or a warmed-up data/ folder
        found = read_descriptions(path.parent / "database_description") or read_descriptions(path.parent)
        task = task.model_copy(update={"sql": task.sql.model_copy(update={"descriptions": found})})
    if not task.sql.descriptions:
        schema = [b.id for b in task.blockers if b.location.startswith(("schema", "table", "column"))]
        notes.append("the release's column descriptions are absent (shared/data/database_description/): "
                     "the SQL tools show no descriptions" + (f", yet schema blockers {schema} surface through them"
                                                              if schema else ""))
    sql = task.sql.model_copy(update={"database_path": str(path.resolve())})
    return ImportResult(Path(), "written", task.model_copy(update={"sql": sql}), notes=notes)


def import_one(d: Path, database: Path | None) -> ImportResult:
    """Validate one task directory and decide whether it can run here."""
    from impasse.ask.harbor import is_harbor_task, read_harbor

    try:
        task = load_task(d)
        harbor = read_harbor(d) if is_harbor_task(d) else None
    except (TaskFormatError, ValueError) as e:
        return ImportResult(d, "invalid", reason=str(e))
    where = data_location(harbor) if harbor else ""
    task = task.model_copy(update={"source": "hilbench"})
    if task.domain == "swe":
        reason = swe_not_runnable(task.swe.image if task.swe else None, where)
        task = task.model_copy(update={"runnable": False, "not_runnable_reason": reason})
        return ImportResult(d, "not_runnable", task, reason)
    shared = harbor.shared if harbor else (d / "shared" if (d / "shared").is_dir() else d)
    res = attach_database(task, database, shared, where or "the task names no location for it")
    res.path = d
    if res.task is not None and res.status != "written":
        res.task = res.task.model_copy(update={"runnable": False, "not_runnable_reason": res.reason})
    return res


def import_hilbench(root: Path | str, *, database: Path | str | None = None) -> list[ImportResult]:
    """Every task under ``root`` (one task directory, a ``harbor_sql``/``harbor_swe`` folder, or a
    checkout of the release), each validated and judged on its own."""
    root = Path(root)
    if not root.exists():
        raise TaskFormatError(f"{root}: no such directory")
    dirs = task_dirs(root)
    if not dirs:
        raise TaskFormatError(f"{root}: no task directory (metadata.json or shared/metadata.json) found under it")
    db = Path(database) if database else None
    return [import_one(d, db) for d in dirs]


def write_imported(results: list[ImportResult], out: Path | str) -> list[ImportResult]:
    """Write the runnable tasks under ``out/<task_id>/`` (our layout, the database pinned in
    metadata.json); -> the results, ``written_to`` set on those written."""
    out = Path(out)
    for r in results:
        if r.status == "written" and r.task is not None:
            r.written_to = save_task(r.task, out / r.task.task_id)
    return results
