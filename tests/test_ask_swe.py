"""The ask suite's SWE tasks: well-formed on disk (fast) and valid for real in the sandbox (slow:
every blocker must change the outcome of the held-out tests)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from impasse.ask.swe import author
from impasse.ask.swe.tasks import BLOCKERS_PER_TASK, KINDS, load_all, problems
from impasse.ask.swe.validate import Run, judge

TASKS = load_all()


def test_at_least_thirty_tasks_each_from_a_spec():
    assert len(TASKS) >= 30
    assert sorted(t.instance_id for t in TASKS) == author.spec_ids()


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.instance_id)
def test_task_is_well_formed(task):
    assert problems(task) == []


def test_blocker_counts_and_kind_mix():
    counts = {t.instance_id: len(t.blockers) for t in TASKS}
    assert BLOCKERS_PER_TASK == (3, 3)
    assert all(c == 3 for c in counts.values()), counts
    kinds = Counter(b.kind for t in TASKS for b in t.blockers)
    assert set(kinds) == set(KINDS)
    assert min(kinds.values()) / sum(kinds.values()) >= 0.15, kinds


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.instance_id)
def test_rendered_files_match_their_spec(task):
    """The task dir is what the spec renders to (patches need the image; checked by the slow test)."""
    spec = author.load_spec(task.instance_id)
    assert task.problem_statement == spec.statement.strip() + "\n"
    assert task.heldout_tests == spec.tests
    assert [b.model_dump() for b in task.blockers] == [
        {k: v for k, v in b.model_dump().items() if k != "slots"} for b in spec.blockers]
    assert (task.metadata.package, task.metadata.package_version) == (spec.package, spec.version)
    # every without-patch differs from the solution exactly where its blocker's slots are
    for b in spec.blockers:
        assert any(full != guess for full, guess in b.slots.values()), b.id


def test_a_blocker_count_other_than_three_is_a_problem():
    task = TASKS[0]
    short = task.model_copy(update={"blockers": task.blockers[:2],
                                    "without": {b.id: task.without[b.id] for b in task.blockers[:2]}})
    assert any("2 blockers; a task needs 3" in p for p in problems(short))


@pytest.mark.parametrize("kind", ["lexical", "offline"])
def test_targeted_questions_rarely_reach_a_sibling_blocker(kind):
    """The reference question is phrased from the quoted statement line (the task's words, not the
    registry's): it may miss; the word-overlap judge never gives it a sibling blocker's resolution,
    the default (hybrid) judge seldom: a quoted term can name a sibling's topic ("What value or rule
    should I use for 'missing readings'?" asked for the text-readings gap)."""
    from impasse.ask.agents import _quoted, question_for
    from impasse.ask.asktool import AskState, decide
    from impasse.ask.judge import make_matcher

    matcher = make_matcher(kind)
    wrong, right, n = {}, 0, 0
    for t in TASKS:
        for b in t.blockers:
            q = question_for(b, f"{_quoted(b.location)}\n{t.problem_statement}")
            assert b.description not in q and all(e not in q for e in b.example_questions)
            got = decide(AskState(list(t.blockers), matcher), q)[0].get("blocker_id")
            n, right = n + 1, right + (got == b.id)
            if got not in (None, b.id):
                wrong[f"{t.instance_id}/{b.id}"] = got
    assert wrong == {} if kind == "lexical" else len(wrong) <= 0.1 * n, wrong  # hybrid: 5 of 90 measured
    assert right >= 0.25 * n, (right, n)  # an honest reference misses some; measured: lexical 26, hybrid 32 of 90


def test_statement_leak_is_caught(tmp_path):
    task = TASKS[0]
    leaky = task.model_copy(update={"problem_statement": task.problem_statement + task.blockers[0].resolution})
    assert any("verbatim" in p for p in problems(leaky))


def test_fill_rejects_unknown_slot():
    with pytest.raises(KeyError, match="nope"):
        author.fill("x = {{nope}}", {})


def test_judge_requires_every_blocker_to_matter():
    task = TASKS[0]
    ids = task.metadata.FAIL_TO_PASS
    ok = {n: "PASSED" for n in ids}
    one_fails = {**ok, ids[0]: "FAILED"}
    runs = [Run("clean", True, one_fails), Run("solution", True, ok),
            *[Run(b.id, True, one_fails) for b in task.blockers]]
    assert judge(task, runs) == []
    runs[-1] = Run(task.blockers[-1].id, True, ok)
    assert any("does not matter" in p for p in judge(task, runs))
    assert any("solution fails" in p for p in judge(task, [Run("solution", True, one_fails)]))
    assert any("already passes" in p for p in judge(task, [Run("clean", True, ok)]))
    assert any("does not apply" in p for p in judge(task, [Run("solution", False, error="corrupt patch")]))


def test_registry_is_hilbench_shaped():
    registry = json.loads((TASKS[0].dir / "ask-human-data" / "blocker_registry.json").read_text())
    assert set(registry) == {"blockers"}
    assert set(registry["blockers"][0]) == {"id", "kind", "subtype", "location", "description", "resolution",
                                            "example_questions"}


@pytest.fixture(scope="module")
def images(backend):
    return {key: author.image_for(*key, backend=backend)
            for key in sorted({(t.metadata.package, t.metadata.package_version) for t in TASKS})}


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.instance_id)
def test_task_validates_in_sandbox(backend, images, task):
    from impasse.ask.swe.validate import validate_task

    image = images[(task.metadata.package, task.metadata.package_version)]
    verdict = validate_task(backend, task, image)
    assert verdict.ok, verdict.problems
    assert len(task.blockers) == 3
    assert {r.name for r in verdict.runs} == {"clean", "solution", *(b.id for b in task.blockers)}
