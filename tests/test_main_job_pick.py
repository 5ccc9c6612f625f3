"""Which tasks a small plan (the main job: 3 tasks, one per package) takes: those where every
planned condition applies, then the cheapest to test as measured at build."""

from impasse.conditions.cards import card, select
from impasse.suites.blockers import cost_class, task_rank


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
    assert task_rank(unmeasured, conditions)[1] == cost_class(load_image(glom_task.image).suite_seconds)



def test_build_timing_noise_within_a_cost_class_does_not_change_the_pick(glom_task):
    """Two builds timed 0.16 and 0.21 s for one task and 0.19 and 0.17 s for another (load): the
    same task is first both times, by id; a task twice as slow still comes after."""
    conditions = [card("clean")]
    for a_s, b_s in [(0.16, 0.19), (0.21, 0.17)]:
        a = glom_task.model_copy(update={"fail_seconds": a_s, "instance_id": "a"})
        b = glom_task.model_copy(update={"fail_seconds": b_s, "instance_id": "b"})
        assert sorted([b, a], key=lambda i: task_rank(i, conditions))[0].instance_id == "a"
    assert [cost_class(x) for x in (0.1, 0.25, 0.3, 0.5, 0.9, 1.0, 1.7)] == [0, 0, 1, 1, 2, 2, 3]


def test_a_slice_builds_the_packages_marked_import_needs_deps_first():
    from impasse.tasks.suite import Suite, load_suite

    first, rest = load_suite("default").slice_first()
    assert [p.name for p in first] == ["markdown-it-py", "glom", "jinja2"]
    assert len(first) + len(rest) == len(load_suite("default").packages) and not {p.name for p in first} & {
        p.name for p in rest}
    one = Suite.model_validate({"name": "s", "packages": [{"name": "Glom"}, {"name": "toolz"}],
                                "import_needs_deps": ["glom"]})
    assert [p.name for p in one.slice_first()[0]] == ["Glom"]  # names compare as PyPI does


def test_a_package_set_naming_an_unknown_package_as_import_needs_deps_says_which(tmp_path):
    import pytest

    from impasse.tasks.suite import load_suite

    f = tmp_path / "set.yaml"
    f.write_text("name: s\npackages: [{name: glom}]\nimport_needs_deps: [glom, jinja]\n")
    with pytest.raises(ValueError, match="import_needs_deps names jinja, which is not among the set's packages"):
        load_suite(str(f))


def test_whole_packages_are_those_with_a_task_where_every_condition_applies(glom_tasks, inflection_tasks, tmp_path):
    """What decides whether a slice must build the rest of its set: glom's tasks take every
    condition (its import needs boltons and face); inflection has no runtime dependency, so
    missing_dependency never applies to it, unless the run plans only other conditions."""
    from impasse.run import RunConfig
    from impasse.suites.blockers import SUITE

    f = tmp_path / "set.yaml"
    f.write_text("name: s\npackages: [{name: glom, version: 25.12.0}, {name: inflection, version: 0.5.1}]\n")
    assert SUITE.whole_packages(RunConfig(packages=str(f))) == {"glom"}
    assert SUITE.whole_packages(RunConfig(packages=str(f), conditions="clean,read_only_source")) == {"glom", "inflection"}


def test_reference_agents_run_four_at_once_unless_told_and_model_runs_two():
    """Scripted reference agents wait on no model but sleep through su's failure delay: their
    runs (the main job) default to 4 episodes at once; anything that calls a model keeps 2."""
    from impasse.cli.run import DEFAULT_AGENTS, REFERENCE_JOBS, _config

    def jobs(agent, given=None, executor="local", model=None):
        return _config("blockers", "default", None, "all", "baseline,tool,monitor", agent, model, None, given, None,
                       None, 80, False, "local", executor, None).jobs

    assert jobs(DEFAULT_AGENTS) == REFERENCE_JOBS == 4
    assert jobs(DEFAULT_AGENTS, given=1) == 1
    assert jobs("oracle,openai:some-model") == 2
    assert jobs(DEFAULT_AGENTS, model="some-model") == 2
    assert jobs(DEFAULT_AGENTS, executor="ray") == 2  # Ray's slots are its own setting


def test_a_run_lists_the_task_images_it_needs_and_this_cache_lacks(glom_task, tmp_path, monkeypatch):
    """The main job builds only its three packages, so the ask slice's SWE task (cachetools) finds
    no image unless the run builds it: ``missing_images`` names it, and nothing that is built."""
    from impasse.run import RunConfig, create_run
    from impasse.run.plan import missing_images
    from impasse.store.rundir import RunDir

    ask = RunConfig(suite="ask", tasks=["cachetools-casekey", "fl01"], interfaces=["ask_human"], agents=["targeted-asker"])
    blockers = RunConfig(tasks=[glom_task.instance_id], conditions="clean", interfaces=["tool"], agents=["oracle"])
    with_glom = create_run(RunDir(tmp_path / "b"), blockers)
    assert missing_images(RunDir(tmp_path / "b"), blockers, with_glom) == []  # the test cache has glom's image
    monkeypatch.setenv("IMPASSE_CACHE", str(tmp_path / "empty-cache"))
    specs = create_run(RunDir(tmp_path / "a"), ask)
    assert missing_images(RunDir(tmp_path / "a"), ask, specs) == [("cachetools-8.0.2", "cachetools", "8.0.2")]
