"""Fuzzing the records impasse reads: mutated trajectories, manifests, task files and tickets are
either used as they are or refused with the documented error (file, line and field); nothing else
may escape. A bounded run here; `benchmarks/fuzz_records.py` runs the long one."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.jsonl"))
LONG = os.environ.get("IMPASSE_FUZZ_EXAMPLES")  # benchmarks/fuzz_records.py sets it for the long run
SETTINGS = settings(max_examples=int(LONG or 120), deadline=None, suppress_health_check=list(HealthCheck),
                    derandomize=not LONG, database=None)

values = st.recursive(st.none() | st.booleans() | st.integers(-10, 10**6) | st.floats(allow_nan=False)
                      | st.text(max_size=20), lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=6)


def mutate(data: st.DataObject, events: list[Any]) -> list[Any]:
    """One to three structural changes to a list of JSON records (see :func:`mutate_once`)."""
    events = json.loads(json.dumps(events))
    for _ in range(data.draw(st.integers(1, 3))):
        events = mutate_once(data, events)
    return events


def mutate_once(data: st.DataObject, events: list[Any]) -> list[Any]:
    """A field's value replaced (any type, or a value written as text), a field deleted, a record
    replaced by a non-object, or one dropped."""
    if not events:
        return events
    i = data.draw(st.integers(0, len(events) - 1))
    kind = data.draw(st.sampled_from(["value", "text", "delete", "record", "drop"]))
    target = events[i]
    if kind in ("value", "text", "delete") and isinstance(target, dict) and target:
        key = data.draw(st.sampled_from(sorted(target)))
        if kind == "delete":
            del target[key]
        elif kind == "text":
            target[key] = json.dumps(target[key])  # "8" for 8, "false" for false, ...
        else:
            target[key] = data.draw(values)
    elif kind == "record":
        events[i] = data.draw(values)
    elif len(events) > 1:
        del events[i]
    return events


def _documented(message: str, path: Path) -> bool:
    return path.name in message and re.search(r":\d+: ", message) is not None


@SETTINGS
@given(data=st.data())
def test_a_mutated_trajectory_is_annotated_and_reported_or_refused_by_file_line_and_field(data, tmp_path_factory):
    from impasse.annotate.annotator import AnnotationError, annotate
    from impasse.report.report import build
    from impasse.store.trajectory import TrajectoryError, read_trajectory

    src = data.draw(st.sampled_from(CORPUS))
    events = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    path = tmp_path_factory.mktemp("fuzz") / src.name
    path.write_text("\n".join(json.dumps(e) for e in mutate(data, events)) + "\n")
    try:
        traj = read_trajectory(path)
    except TrajectoryError as e:
        assert _documented(str(e), path), str(e)
        return
    try:
        row = annotate(traj).to_json()
    except AnnotationError as e:  # e.g. a condition no card describes
        assert _documented(str(e), path), str(e)
        return
    build([row], None, [str(path)])


@SETTINGS
@given(data=st.data())
def test_a_mutated_manifest_resumes_or_is_refused_naming_the_field(data, tmp_path_factory):
    from impasse.run.config import RunConfig
    from impasse.run.plan import read_run
    from impasse.store.rundir import RunDir, RunDirError

    doc = {"format": "impasse.run/1", "config": RunConfig(agents=["oracle"]).model_dump(),
           "episodes": [{"episode_id": "e1", "instance_id": "t", "condition": "clean", "interface": "tool",
                         "agent": "reference/oracle"}]}
    flat = [doc, doc["config"], doc["episodes"][0]]
    which = data.draw(st.integers(0, 2))
    mutated = mutate(data, [flat[which]])[0]
    if which == 0:
        doc = mutated
    elif which == 1:
        doc["config"] = mutated
    else:
        doc["episodes"] = [mutated]
    rd = RunDir(tmp_path_factory.mktemp("run"))
    rd.manifest.write_text(json.dumps(doc))
    try:
        read_run(rd)
    except RunDirError as e:
        assert "manifest.json" in str(e), str(e)


@SETTINGS
@given(data=st.data())
def test_a_mutated_task_file_is_read_or_refused_by_line(data, tmp_path_factory):
    from impasse.tasks.schema import SchemaError, read_instances

    rows = [json.loads(line) for line in (Path(__file__).parent / "fixtures" / "instances.jsonl").read_text().splitlines()
            if line.strip()] if (Path(__file__).parent / "fixtures" / "instances.jsonl").exists() else [
        {"instance_id": "a__1", "repo": "pypi/a", "base_commit": "x", "patch": "", "problem_statement": "p",
         "FAIL_TO_PASS": ["t::a"], "PASS_TO_PASS": [], "version": "1"}]
    path = tmp_path_factory.mktemp("tasks") / "instances.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in mutate(data, rows)) + "\n")
    try:
        read_instances(path)
    except SchemaError as e:
        assert _documented(str(e), path), str(e)


@SETTINGS
@given(args=values)
def test_any_ticket_arguments_are_judged(args):
    from impasse.tickets.judge import judge_ticket
    from impasse.tickets.ticket import Ticket

    ticket = Ticket.from_arguments(args if isinstance(args, dict) else {"blocker": args})
    assert set(judge_ticket(ticket)) == {"blocker", "progress", "request", "resume_condition"}
