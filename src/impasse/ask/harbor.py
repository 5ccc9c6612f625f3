"""HiL-Bench's released task layout (Harbor task directories), read as the release has it.

    <task>/<mode>/task.toml           [metadata] task_type (sql | swe), mode, database_name | image_name
    <task>/<mode>/instruction.md      what the agent is told in that mode (mode: baseline, ask_human, full_info)
    <task>/<mode>/solution/           ground_truth.sql (SQL) | ground_truth.patch (SWE)
    <task>/<mode>/tests/              some exports: the verifier's ground_truth.sql + golden_output.csv
    <task>/shared/metadata.json       dataset_name, hf_task_id, database_name | instance_id, swe_bench_metadata
    <task>/shared/ask-human-data/blocker_registry.json
    SQL: shared/ground_truth.sql, golden_output.csv, data/business_info.json, data_archive.json
         (where the authors host the database and its description CSVs; after the release's
         warm-up script: data/database.sqlite, data/database_description/{table_descriptions,<table>}.csv)
    SWE: shared/problem_statement.txt, image_archive.json, image_ref.txt

A SQL task's question is only in ``<mode>/instruction.md`` (between "Answer the following
question:" and the command list). The three modes are checked against each other and against the
registry: the same question in each, ``ask_human`` offered in that mode only, and the full-info
instruction carrying every blocker's description and resolution. Pure reading and checking: the
loader in :mod:`impasse.ask.taskdir` builds the task from what this returns.
"""

from __future__ import annotations

import csv
import io
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MODES = ("baseline", "ask_human", "full_info")
SHARED = "shared"
QUESTION_RX = re.compile(r"Answer the following question:\s*\n(?P<q>.*?)\n\s*\n(?:## Additional Context|# Available Commands)",
                         re.S)
ASK_COMMAND = "ask_human"
ASK_SERVER = "ask-human"
DESCRIPTIONS = Path("data") / "database_description"
TABLE_DESCRIPTIONS = "table_descriptions.csv"


class TaskFormatError(ValueError):
    """A task directory (ours or the release's) does not follow its layout; the message names the
    file and the field or what is wrong."""


def is_harbor_task(d: Path) -> bool:
    """A release task directory: ``shared/`` beside at least one ``<mode>/task.toml``."""
    return (d / SHARED).is_dir() and any((d / m / "task.toml").is_file() for m in MODES)


@dataclass
class HarborTask:
    """What the mode directories say, checked; the shared data is read by the task loader."""

    root: Path
    domain: str
    instructions: dict[str, str]
    toml: dict[str, dict[str, Any]]
    question: str
    archive: dict[str, Any] = field(default_factory=dict)
    """Where the release says the data it does not ship lives (``data_archive.json`` /
    ``image_archive.json``)."""

    @property
    def shared(self) -> Path:
        return self.root / SHARED

    def first_existing(self, *relative: str) -> Path | None:
        """The first of ``shared/<p>`` then ``<mode>/<p>`` for each p that exists (exports differ
        in where they keep the ground truth and the golden output)."""
        for rel in relative:
            for base in (self.shared, *(self.root / m for m in MODES)):
                if (base / rel).is_file():
                    return base / rel
        return None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError as e:
        raise TaskFormatError(f"{path}: missing (every mode directory of a Harbor task has one)") from e
    except tomllib.TOMLDecodeError as e:
        raise TaskFormatError(f"{path}: not valid TOML ({e})") from e


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError as e:
        raise TaskFormatError(f"{path}: missing (every mode directory of a Harbor task has one)") from e


def _json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise TaskFormatError(f"{path}: not valid JSON ({e})") from e
    return data if isinstance(data, dict) else {}


def squash(text: str) -> str:
    """Whitespace-insensitive form (the release's texts differ from the registry in line breaks)."""
    return re.sub(r"\s+", " ", text).strip()


def sql_question(instruction: str, path: Path) -> str:
    m = QUESTION_RX.search(instruction)
    if not m or not m.group("q").strip():
        raise TaskFormatError(f"{path}: no question found (expected 'Answer the following question:' followed "
                                "by the question and a blank line)")
    return m.group("q").strip()


def _task_type(root: Path, tomls: dict[str, dict[str, Any]]) -> str:
    kinds = {m: str(t.get("metadata", {}).get("task_type", "")).lower() for m, t in tomls.items()}
    for mode, meta in tomls.items():
        got = meta.get("metadata", {}).get("mode")
        if got != mode:
            raise TaskFormatError(f"{root / mode / 'task.toml'}: field metadata.mode is {got!r}, expected {mode!r}")
    if len(set(kinds.values())) != 1 or next(iter(kinds.values())) not in ("sql", "swe"):
        raise TaskFormatError(f"{root}: task.toml field metadata.task_type must be 'sql' or 'swe' and the same in "
                                f"every mode; got {kinds}")
    return next(iter(kinds.values()))


def _check_offers_ask(root: Path, mode: str, toml: dict[str, Any], instruction: str | None) -> None:
    """The ask-human MCP server is configured in ask_human mode only (and a SQL instruction lists
    the ``ask_human`` command there only)."""
    servers = {str(s.get("name")) for s in toml.get("environment", {}).get("mcp_servers", []) if isinstance(s, dict)}
    want = mode == "ask_human"
    if (ASK_SERVER in servers) != want:
        raise TaskFormatError(f"{root / mode / 'task.toml'}: {'lacks' if want else 'configures'} the {ASK_SERVER!r} MCP "
                              f"server, which {'ask_human mode needs' if want else 'only ask_human mode has'}")
    if instruction is not None and (f"`{ASK_COMMAND}" in instruction) != want:
        raise TaskFormatError(f"{root / mode / 'instruction.md'}: {'does not list' if want else 'lists'} the "
                              f"{ASK_COMMAND} command, which {'ask_human mode needs' if want else 'only ask_human mode has'}")


def read_harbor(root: Path) -> HarborTask:
    """Read and cross-check the three mode directories of one release task."""
    tomls = {m: _read_toml(root / m / "task.toml") for m in MODES}
    domain = _task_type(root, tomls)
    texts = {m: _read_text(root / m / "instruction.md") for m in MODES}
    for mode in MODES:
        _check_offers_ask(root, mode, tomls[mode], texts[mode] if domain == "sql" else None)
    if domain == "sql":
        questions = {m: sql_question(t, root / m / "instruction.md") for m, t in texts.items()}
        if len({squash(q) for q in questions.values()}) != 1:
            raise TaskFormatError(f"{root}: the question differs between the modes' instruction.md files")
        question = questions["ask_human"]
        archive = _json(root / SHARED / "data_archive.json")
    else:
        ps = root / SHARED / "problem_statement.txt"
        question = ps.read_text().strip() if ps.is_file() else texts["ask_human"].strip()
        if squash(texts["baseline"]) != squash(question):
            raise TaskFormatError(f"{root / 'baseline' / 'instruction.md'}: differs from the problem statement")
        archive = _json(root / SHARED / "image_archive.json")
    return HarborTask(root, domain, texts, tomls, question, archive)


def check_full_info(task: HarborTask, blockers: list[Any]) -> None:
    """The full-info instruction is the question plus every blocker's description and resolution
    (HiL-Bench's template): a registry that drifted from it is refused, naming the blocker."""
    text = squash(task.instructions["full_info"])
    for b in blockers:
        for what in ("description", "resolution"):
            if squash(str(getattr(b, what))) not in text:
                raise TaskFormatError(f"{task.root / 'full_info' / 'instruction.md'}: lacks the {what} of blocker "
                                        f"{b.id!r} that the registry holds; the export is inconsistent")


# ---------------------------------------------------------------------- schema descriptions


def _csv_rows(path: Path) -> list[dict[str, str]]:
    text = path.read_text(encoding="utf-8", errors="replace")
    return list(csv.DictReader(io.StringIO(text)))


def read_descriptions(folder: Path) -> dict[str, Any] | None:
    """The release's description CSVs (``table_descriptions.csv``: table_name, table_description;
    ``<table>.csv``: original_column_name, combined_description or column_description, data_format)
    -> ``{"tables": {table: {"description", "columns": {column: {"description", "type"}}}}}``,
    the shape the SQL tools show; None when the folder has no ``table_descriptions.csv``."""
    index = folder / TABLE_DESCRIPTIONS
    if not index.is_file():
        return None
    tables: dict[str, Any] = {}
    for row in _csv_rows(index):
        name = (row.get("table_name") or "").strip()
        if name:
            tables[name] = {"description": (row.get("table_description") or "").strip(), "columns": {}}
    for name, rec in tables.items():
        path = folder / f"{name.lower()}.csv"
        if not path.is_file():
            continue
        for row in _csv_rows(path):
            col = (row.get("original_column_name") or "").strip()
            if col:
                text = row.get("combined_description") or row.get("column_description") or ""
                rec["columns"][col] = {"description": text.strip(), "type": (row.get("data_format") or "").strip()}
    return {"tables": tables}


def data_location(task: HarborTask) -> str:
    """Where the release says the data it does not ship lives, as one phrase."""
    a = task.archive
    if task.domain == "sql":
        if not a.get("db_artifact_path"):
            return "shared/data_archive.json names no location"
        n = len(a.get("desc_artifact_paths") or [])
        return (f"the release keeps it in the Hugging Face bucket {a.get('hf_bucket')!r} as {a['db_artifact_path']!r} "
                f"with {n} description CSV(s) (shared/data_archive.json); the release's harbor_sql/warmup_data.sh "
                "puts them in shared/data/")
    if a.get("hf_url"):
        return f"the release keeps its image archive at {a['hf_url']} (shared/image_archive.json)"
    return "shared/image_archive.json names no location"
