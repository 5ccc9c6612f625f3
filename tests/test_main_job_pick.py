"""Which tasks a small plan (the main job: 3 tasks, one per package) takes: those where every
planned condition applies, then the cheapest to test as measured at build."""

from impasse.conditions.cards import card, select
from impasse.suites.blockers import task_rank


def test_a_task_where_every_condition_applies_comes_before_a_cheaper_one_where_some_do_not(glom_task):
    conditions = [card(c) for c in select("all")]
    whole = glom_task.model_copy(update={"fail_seconds": 2.0})
    # a doctest-only task: tests_unreadable does not apply to it
    partial = glom_task.model_copy(update={"fail_seconds": 0.1, "test_files": [], "instance_id": "z"})
    assert task_rank(whole, conditions) < task_rank(partial, conditions)
    only_clean = [card("clean")]
    assert task_rank(partial, only_clean) < task_rank(whole, only_clean)  # now both are whole: the cheaper first


def test_the_measured_cost_orders_tasks_and_an_unmeasured_one_uses_its_suite_time(glom_task):
    from impasse.tasks.image import load_image

    conditions = [card("clean")]
    slow = glom_task.model_copy(update={"fail_seconds": 3.0, "instance_id": "a"})
    fast = glom_task.model_copy(update={"fail_seconds": 0.2, "instance_id": "b"})
    assert sorted([slow, fast], key=lambda i: task_rank(i, conditions)) == [fast, slow]
    unmeasured = glom_task.model_copy(update={"fail_seconds": None})
    assert task_rank(unmeasured, conditions)[1] == round(load_image(glom_task.image).suite_seconds, 1)

