"""Difficulty buckets end to end (the CLI option, the runner's per-instance K) and the reference
profiles' reading depth."""

import pytest
from typer.testing import CliRunner

from impasse.cli import app
from impasse.handoff.reference import Strong, Weak, defect_line


def test_unknown_bucket_is_named_with_the_choices(glom_task, tmp_path):
    res = CliRunner().invoke(app, ["handoff", "--tasks", glom_task.instance_id, "--buckets", "size",
                                   "--out", str(tmp_path)])
    assert res.exit_code != 0
    assert "--buckets 'size'" in res.output and "outcome" in res.output
    assert not (tmp_path / "episodes").exists()  # refused before any episode ran


def test_reading_steps_follow_the_defect_position(glom_task):
    line = defect_line(glom_task.patch)
    assert line > 1 and f"@@ -{line}," in glom_task.patch
    weak, strong = Weak(glom_task), Strong(glom_task)
    # weak: 300-line chunks from the top (1..4); strong: 1000-line chunks after the first (0..2)
    assert weak.slow_steps == max(1, min(4, -(-line // 300)))
    assert strong.slow_steps == max(0, min(2, -(-line // 1000) - 1))
    deep = glom_task.model_copy(update={"patch": glom_task.patch.replace(f"@@ -{line},", "@@ -2153,", 1)})
    assert (Weak(deep).slow_steps, Strong(deep).slow_steps) == (4, 2)
    shallow = glom_task.model_copy(update={"patch": glom_task.patch.replace(f"@@ -{line},", "@@ -83,", 1)})
    assert (Weak(shallow).slow_steps, Strong(shallow).slow_steps) == (1, 0)


def test_bucketed_percentile_switches_at_the_buckets_step(glom_task, tmp_path):
    """Prior runs of the weak model: two solved tasks ending at 3 and 4, this (unsolved) one at 9.
    Pooled p50 would be 4; within the 'unsolved' bucket it is 9, and the episode switches there."""
    from impasse.handoff.runner import Plan, Side, run_plan
    from impasse.prices import load_prices

    me = f"{glom_task.instance_id}@clean"
    prior = {"reference/weak": [{"instance": me, "steps": 9, "resolved": False},
                                {"instance": "x@clean", "steps": 3, "resolved": True},
                                {"instance": "y@clean", "steps": 4, "resolved": True}]}
    plan = Plan(Side("reference:weak"), Side("reference:strong"), ["traj_drop"], ["p50"], ["escalation"],
                [glom_task], ["clean"], step_limit=30, prior=prior, bucket="outcome")
    rows = run_plan(plan, tmp_path, load_prices())
    (row,) = [r for r in rows if r["strategy"] == "escalation:traj_drop"]
    assert row["k"] == "p50" and row["k_step"] == 9 and "p50-outcome" in row["episode_id"]
    from impasse.store.trajectory import read_trajectory

    traj = read_trajectory(tmp_path / "episodes" / f"{row['episode_id']}.jsonl")
    assert traj.header["k_bucket"] == "outcome"
    weak_alone = next(r for r in rows if r["strategy"] == "alone:reference/weak")
    # the weak model's own run here outlasts K (6 steps + 4 reading chunks: the defect is past line 900)
    assert weak_alone["steps"] == 6 + Weak(glom_task).slow_steps > 9
    assert row["switched"] and traj.of_type("handoff")[0]["at_step"] == 9
    # a finished handoff run is finished for the cache's register (prune keeps nothing for it), and
    # `impasse status` says what the directory is instead of a manifest error
    from impasse.store.runs import state_of

    assert state_of(tmp_path).state == "finished"
    res = CliRunner().invoke(app, ["status", str(tmp_path)])
    assert res.exit_code == 0 and "handoff run" in res.output and "episodes complete" in " ".join(res.output.split())


def test_an_instance_without_a_prior_run_has_no_bucket():
    from types import SimpleNamespace

    from impasse.handoff.runner import Plan, Side, unbucketed

    tasks = [SimpleNamespace(instance_id="a"), SimpleNamespace(instance_id="b")]
    prior = {"reference/weak": [{"instance": "a@clean", "steps": 5, "resolved": True}]}
    plan = Plan(Side("reference:weak"), Side("reference:strong"), ["raw"], ["p50"], ["escalation"], tasks,
                ["clean"], prior=prior, bucket="outcome")
    assert unbucketed(plan) == ["b@clean (reference/weak)"]
    plan.bucket = None  # unbucketed percentiles pool every prior run: nothing to place
    assert unbucketed(plan) == []
    plan.bucket, plan.switches = "outcome", ["3"]  # no percentile switch: buckets unused
    assert unbucketed(plan) == []


def test_a_dead_endpoint_is_refused_before_anything_is_written(glom_task, tmp_path, monkeypatch):
    """Both models are preflighted (one request each) before the run directory exists."""
    from test_model_http import ScriptedServer

    monkeypatch.setenv("IMPASSE_API_KEY", "unused")
    live = ScriptedServer([("ping", {})])
    (tmp_path / "lc.yaml").write_text(f"base_url: {live.url}\n")
    (tmp_path / "hc.yaml").write_text("base_url: http://127.0.0.1:9/v1\n")
    try:
        res = CliRunner().invoke(app, ["handoff", "--prefix", "openai:lc", "--suffix", "openai:hc", "--tasks",
                                       glom_task.instance_id, "--prefix-model-config", str(tmp_path / "lc.yaml"),
                                       "--suffix-model-config", str(tmp_path / "hc.yaml"), "--switch", "2",
                                       "--out", str(tmp_path / "out")])
    finally:
        live.close()
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "Traceback" not in text, text[-800:]
    assert "suffix model 'openai:hc'" in text and "cannot reach the model endpoint at http://127.0.0.1:9/v1" in text
    assert len(live.requests) == 1 and not (tmp_path / "out").exists()


def test_an_endpoint_that_dies_mid_run_pauses_it_without_a_traceback(glom_task, tmp_path, monkeypatch):
    """A model endpoint that fails after the preflight: exit 3 and what to do; the same command
    goes on from what was recorded."""
    from test_model_http import ScriptedServer

    monkeypatch.setenv("IMPASSE_API_KEY", "unused")
    steps = [("bash", {"command": "true"})] * 3 + [("task_complete", {"verified": False, "summary": "s"})]
    dying = ScriptedServer(steps, refuse=lambda body: (500, "gone") if len(dying.requests) > 3 else None)
    (tmp_path / "m.yaml").write_text(f"base_url: {dying.url}\nmax_retries: 0\n")
    args = ["handoff", "--prefix", "openai:lc", "--suffix", "openai:hc", "--tasks", glom_task.instance_id,
            "--prefix-model-config", str(tmp_path / "m.yaml"), "--suffix-model-config", str(tmp_path / "m.yaml"),
            "--switch", "2", "--interfaces", "traj_drop", "--direction", "escalation", "--out", str(tmp_path / "out")]
    try:
        res = CliRunner().invoke(app, args)
    finally:
        dying.close()
    text = " ".join(res.output.split())
    assert res.exit_code == 3 and "Traceback" not in text and res.exception is None or isinstance(
        res.exception, SystemExit), text[-800:]
    assert res.exit_code == 3 and "run the same command again" in text, text[-800:]
    assert list((tmp_path / "out" / "episodes").glob("*.jsonl"))  # what was recorded stays


@pytest.mark.slow
def test_a_handoff_runs_on_the_docker_backend(glom_task, tmp_path, docker_client):
    """One prefix in a Docker episode; each interface a Docker fork of it at K, graded on Docker."""
    from impasse.handoff.runner import Plan, Side, run_plan
    from impasse.prices import load_prices
    from impasse.store.rundir import RunDir
    from impasse.store.trajectory import read_trajectory

    plan = Plan(Side("reference:weak"), Side("reference:strong"), ["raw", "traj_drop"], ["3"], ["escalation"],
                [glom_task], ["clean"], step_limit=14, backend="docker")
    rows = run_plan(plan, tmp_path, load_prices())
    branches = {r["strategy"]: r for r in rows if r["strategy"] in ("escalation:raw", "escalation:traj_drop")}
    trajs = {s: read_trajectory(RunDir(tmp_path).trajectory(r["episode_id"])) for s, r in branches.items()}
    assert len(trajs) == 2 and all(r["switched"] for r in branches.values())
    assert {t.header["backend"] for t in trajs.values()} == {"docker"}
    assert {(t.header["forked_from"]["episode_id"], t.header["forked_from"]["step"]) for t in trajs.values()} == {
        (f"prefix-escalation__3__clean__{glom_task.instance_id}", 3)}
    assert all(t.grade is not None and not t.of_type("harness_error") for t in trajs.values())
