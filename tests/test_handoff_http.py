"""Each handoff interface over real HTTP: two scripted endpoints (prefix, suffix); what the suffix
received, who wrote the summary, that the working tree crossed the switch unchanged, and that the
prefix was the prefix model's own single-model run replayed (no model call repeated)."""

import json

import pytest
from test_model_http import ScriptedServer

from impasse.handoff.interfaces import HANDOFF_MARKER, SUMMARY_MARKER, TICKET_MARKER
from impasse.handoff.runner import Plan, Side, run_plan
from impasse.prices import PriceTable, load_prices
from impasse.store.rundir import RunDir
from impasse.store.trajectory import read_trajectory

NOTE = "/workspace/repo/HANDOFF_NOTE.txt"
PREFIX = [("bash", {"command": f"echo prefix-was-here > {NOTE}"}), ("bash", {"command": f"cat {NOTE}"})]
TICKET = {"blocker": {"failed_operation": "none", "affected_target": "HANDOFF_NOTE.txt", "error_feedback": ""},
          "evidence": ["wrote the note"], "recovery_attempts": [], "request": {"assistance_needed": "finish", "scope": "x"},
          "resume_condition": "tests pass", "progress": {"saved_changes": "TICKET-SAVED-NOTE",
                                                         "unfinished_work": "TICKET-UNFINISHED", "verification_status": "none"}}
SUFFIX = [("bash", {"command": "git status --short"}), ("task_complete", {"verified": False, "summary": "done"})]


def _first_handed_over(server):
    """The suffix's first request after the switch (its messages carry the handoff notice)."""
    return next(r for r in server.requests if {t["function"]["name"] for t in r.get("tools", [])} >= {"bash"}
                and HANDOFF_MARKER in json.dumps(r["messages"]))


def _asked(server, marker):
    return [r for r in server.requests if marker in json.dumps(r["messages"][-1:])]


@pytest.mark.parametrize("interface", ["raw", "compact_pre", "compact_suf", "traj_drop", "ticket"])
def test_interface_over_http(interface, glom_task, tmp_path):
    prefix_actions = PREFIX + [("write_summary", {"summary": "PREFIX-SUMMARY"}), ("write_ticket", TICKET)][
        (1 if interface == "ticket" else 0):]
    suffix_actions = SUFFIX * 2 if interface == "raw" else SUFFIX + [("write_summary", {"summary": "SUFFIX-SUMMARY"})]
    pre, suf = ScriptedServer(prefix_actions), ScriptedServer(suffix_actions)
    try:
        rd = RunDir(tmp_path)
        plan = Plan(Side("openai:lc-model", {"base_url": pre.url}), Side("openai:hc-model", {"base_url": suf.url}),
                    [interface], ["2"], ["escalation"], [glom_task], ["clean"], step_limit=8)
        rows = run_plan(plan, tmp_path, load_prices())
    finally:
        pre.close()
        suf.close()
    (row,) = [r for r in rows if r["strategy"] == f"escalation:{interface}"]
    traj = read_trajectory(rd.trajectory(row["episode_id"]))
    alone = read_trajectory(rd.trajectory(next(r["episode_id"] for r in rows if r["strategy"] == "alone:model/lc-model")))
    (event,) = traj.of_type("handoff")
    assert row["switched"] and event["at_step"] == 2 and event["from_model"] == "model/lc-model"
    assert traj.header["forked_from"]["step"] == 2
    # the prefix is the LC model's own run, replayed: its first two steps, and no task call made again
    assert [s.arguments for s in traj.steps[:2]] == [s.arguments for s in alone.steps[:2]]
    task_calls = [r for r in pre.requests if {t["function"]["name"] for t in r.get("tools", [])} >= {"bash"}]
    assert len(task_calls) == sum(1 for m in alone.messages if m["role"] == "assistant")
    # the working tree crossed unchanged: the diff at the switch holds the prefix's file, and the
    # suffix's first command sees it
    assert "prefix-was-here" in event["working_tree_diff"]
    suffix_steps = [s for s in traj.steps if s.index > 2]
    assert "HANDOFF_NOTE.txt" in suffix_steps[0].output
    got = _first_handed_over(suf)["messages"]
    text = json.dumps(got)
    prefix_msgs = pre.requests[1]["messages"]  # the prefix's history before its 2nd call
    if interface == "raw":
        prefix_tail = [m for m in traj.events[: traj.events.index(event)] if m["type"] in ("message", "step")]
        for e in prefix_tail:  # every prefix message, verbatim and in order
            assert e["message"] in got
        assert any(m.get("tool_calls") for m in got) and "prefix-was-here" in text
    else:  # none of the prefix's actions or outputs
        assert not any(m["role"] in ("assistant", "tool") for m in got)
        assert "echo prefix-was-here" not in text
        assert got[:2] == prefix_msgs[:2]  # system prompt and task
    if interface == "compact_pre":
        assert "PREFIX-SUMMARY" in got[-1]["content"] and event["calls"][0]["model"] == "model/lc-model"
        assert len(_asked(pre, SUMMARY_MARKER)) == 1 and not _asked(suf, SUMMARY_MARKER)  # one extra call, to the prefix
    if interface == "compact_suf":
        assert "SUFFIX-SUMMARY" in got[-1]["content"] and event["calls"][0]["model"] == "model/hc-model"
        (summary_req,) = _asked(suf, SUMMARY_MARKER)  # the suffix read the full trajectory first
        assert any("echo prefix-was-here" in json.dumps(m) for m in summary_req["messages"])
        assert not _asked(pre, SUMMARY_MARKER)
    if interface == "ticket":
        for value in ("TICKET-SAVED-NOTE", "TICKET-UNFINISHED", "tests pass", "wrote the note"):
            assert value in got[-1]["content"]
        assert event["written"]["progress"]["saved_changes"] == "TICKET-SAVED-NOTE"
        assert len(_asked(pre, TICKET_MARKER)) == 1
    if interface == "traj_drop":
        assert "PREFIX-SUMMARY" not in text and event["calls"] == []


def test_every_interface_branches_from_one_prefix(glom_task, tmp_path):
    """Five interfaces at one K: one prefix (the LC model's own run, replayed), five forks whose
    first K steps are identical; the prefix model is asked only for the artefacts (a summary for
    compact_pre, a ticket), never for its steps again. A rerun with other options is refused."""
    import pytest

    from impasse.handoff.interfaces import INTERFACES

    names = INTERFACES.names()
    pre = ScriptedServer(PREFIX + [("bash", {"command": "true"})] * 3 + [("task_complete", {"verified": False,
                                                                                            "summary": "s"})])
    suf = ScriptedServer([("write_summary", {"summary": "SUFFIX-SUMMARY"})] + SUFFIX)
    plan = Plan(Side("openai:lc-model", {"base_url": pre.url}), Side("openai:hc-model", {"base_url": suf.url}),
                names, ["2"], ["escalation"], [glom_task], ["clean"], step_limit=8)
    try:
        rows = run_plan(plan, tmp_path, load_prices())
        rd = RunDir(tmp_path)
        branches = {r["strategy"]: read_trajectory(rd.trajectory(r["episode_id"])) for r in rows
                    if r["strategy"].split(":")[1] in names}
        alone = read_trajectory(rd.trajectory(next(r["episode_id"] for r in rows if r["strategy"] == "alone:model/lc-model")))
        steps = {s: [(x.tool, x.arguments, x.output) for x in t.steps if x.index <= 2] for s, t in branches.items()}
        assert len(branches) == 5 and all(v == steps["escalation:raw"] for v in steps.values())
        assert {t.header["forked_from"]["episode_id"] for t in branches.values()} == {
            "prefix-escalation__2__clean__" + glom_task.instance_id}
        task_calls = [r for r in pre.requests if {t["function"]["name"] for t in r.get("tools", [])} >= {"bash"}]
        assert len(task_calls) == sum(1 for m in alone.messages if m["role"] == "assistant")  # the alone run only
        assert len(_asked(pre, SUMMARY_MARKER)) == 1 and len(_asked(pre, TICKET_MARKER)) == 1
        assert len(pre.requests) == len(task_calls) + 2
        for control in ("escalation:abort+fresh", "escalation:lc_full+hc_full"):
            (c,) = [r for r in rows if r["strategy"] == control]
            hc_alone = next(r for r in rows if r["strategy"] == "alone:model/hc-model")
            assert c["switched"] and c["resolved"] == hc_alone["resolved"]  # the strong model's outcome, both ways
        changed = Plan(plan.lc, plan.hc, names, ["2"], ["escalation"], [glom_task], ["clean"], step_limit=9)
        with pytest.raises(ValueError, match="other options .*step_limit: 8 -> 9"):
            run_plan(changed, tmp_path, load_prices())
    finally:
        pre.close()
        suf.close()


@pytest.mark.slow
@pytest.mark.parametrize("cut", ["step_limit", "harness_error"])
def test_a_prefix_goes_on_live_only_past_a_recorded_run_cut_short(cut, glom_task, tmp_path):
    """The recorded single-model run (a --prior run) stops after 2 steps, not by the model's own
    doing: its step limit was 2 (this run's is 8), or its endpoint died (a harness error). At
    K = 4 the prefix replays those 2 steps with no model call, then the prefix model goes on live
    for steps 3 and 4, once, before the branches fork: every branch's first 4 steps are the same
    two recorded and two live ones, and the prefix model got exactly 2 live prefix calls."""
    from impasse.agent.endings import EndpointError
    from impasse.handoff.runner import prior_steps
    from impasse.run import EpisodeSpec, RunConfig, run_episode

    prior_dir = tmp_path / "prior"
    recorded = ScriptedServer([("bash", {"command": f"echo PRIOR-{n} >> /workspace/repo/NOTE.txt"}) for n in (1, 2, 3)],
                              refuse=(lambda b: (500, "down") if sum(m["role"] == "assistant" for m in b["messages"]) >= 2
                                      else None) if cut == "harness_error" else None)
    try:
        cfg = RunConfig(model={"model": "lc-model", "base_url": recorded.url, "max_retries": 0},
                        step_limit=2 if cut == "step_limit" else 8)
        spec = EpisodeSpec("lc-alone", glom_task.instance_id, "clean", "tool", "model/lc-model")
        if cut == "harness_error":
            with pytest.raises(EndpointError):
                run_episode(spec, cfg, prior_dir)
        else:
            run_episode(spec, cfg, prior_dir)
    finally:
        recorded.close()
    (prior,) = prior_steps(prior_dir)["model/lc-model"]
    assert prior["complete"] is (cut == "step_limit")

    def lc(body):  # the live prefix continues the recorded run; the handoff's own LC-alone run is plain
        k = sum(m["role"] == "assistant" for m in body["messages"])
        if "PRIOR-" in json.dumps(body["messages"]):
            return ("bash", {"command": f"echo LIVE-{k + 1} >> /workspace/repo/NOTE.txt"})
        return ("bash", {"command": "true"}) if k < 2 else ("task_complete", {"verified": False, "summary": "s"})

    pre, suf = ScriptedServer(lc), ScriptedServer(SUFFIX)
    plan = Plan(Side("openai:lc-model", {"base_url": pre.url}), Side("openai:hc-model", {"base_url": suf.url}),
                ["traj_drop", "raw"], ["4"], ["escalation"], [glom_task], ["clean"], step_limit=8,
                prior=prior_steps(prior_dir), prior_dir=str(prior_dir))
    prices = PriceTable.of({"lc-model": {"input": 1, "output": 1}, "hc-model": {"input": 10, "output": 10}})
    try:
        rows = run_plan(plan, tmp_path / "out", prices)
        live_calls = [r for r in pre.requests if "PRIOR-" in json.dumps(r["messages"])]
        asked = len(pre.requests)
        again = run_plan(plan, tmp_path / "out", prices)  # resumed: everything reused, nothing asked again
        assert len(pre.requests) == asked
    finally:
        pre.close()
        suf.close()
    assert len(live_calls) == 2  # steps 3 and 4 only: the recorded two were replayed, and made once for both branches
    rd = RunDir(tmp_path / "out")
    branches = {r["strategy"]: read_trajectory(rd.trajectory(r["episode_id"])) for r in rows
                if r["strategy"] in ("escalation:traj_drop", "escalation:raw")}
    first_k = {s: [(x.tool, x.arguments["command"], x.output) for x in t.steps if x.index <= 4]
               for s, t in branches.items()}
    assert first_k["escalation:traj_drop"] == first_k["escalation:raw"]
    assert [c for _, c, _ in first_k["escalation:raw"]] == [
        "echo PRIOR-1 >> /workspace/repo/NOTE.txt", "echo PRIOR-2 >> /workspace/repo/NOTE.txt",
        "echo LIVE-3 >> /workspace/repo/NOTE.txt", "echo LIVE-4 >> /workspace/repo/NOTE.txt"]
    (event,) = branches["escalation:raw"].of_type("handoff")
    assert event["at_step"] == 4 and "LIVE-4" in event["working_tree_diff"]
    for r in rows:
        if r["strategy"] in branches:
            assert r["switched"] and r["prefix_live_calls"] == 2
    assert [r["switched"] for r in again if r["strategy"] in branches] == [True, True]
    # abort+fresh pays the prefix to K: the two replayed replies and the two live ones (each 1000+k
    # prompt and 20 completion tokens at $1/M), as the branches do
    (abort,) = [r for r in rows if r["strategy"] == "escalation:abort+fresh"]
    assert abort["prefix_cost_usd"] == rows[[r["strategy"] for r in rows].index("escalation:raw")]["prefix_cost_usd"]
    assert abort["prefix_cost_usd"] == pytest.approx(sum(1000 + k + 20 for k in range(4)) / 1e6)
    from impasse.handoff.report import switch_points

    assert switch_points(rows, "escalation") == [["4", "4", "1 of 1 (1 with a prefix gone on live past its recorded run)"]]


@pytest.mark.slow
def test_a_prefix_whose_live_part_ends_on_its_own_does_not_switch(glom_task, tmp_path):
    """A recorded run cut at its step limit 1 (this run's is 8); going on live, the prefix model
    completes at step 2, before K = 3: it stopped on its own, so nothing is handed over (the rows
    say why), and a rerun asks it nothing again."""
    from impasse.handoff.runner import prior_steps
    from impasse.run import EpisodeSpec, RunConfig, run_episode

    prior_dir = tmp_path / "prior"
    recorded = ScriptedServer([("bash", {"command": "echo PRIOR-1"})])
    try:
        run_episode(EpisodeSpec("lc-alone", glom_task.instance_id, "clean", "tool", "model/lc-model"),
                    RunConfig(model={"model": "lc-model", "base_url": recorded.url}, step_limit=1), prior_dir)
    finally:
        recorded.close()
    done = ("task_complete", {"verified": False, "summary": "done early"})
    pre, suf = ScriptedServer([("bash", {"command": "true"}), done]), ScriptedServer(SUFFIX)
    plan = Plan(Side("openai:lc-model", {"base_url": pre.url}), Side("openai:hc-model", {"base_url": suf.url}),
                ["traj_drop"], ["3"], ["escalation"], [glom_task], ["clean"], step_limit=8,
                prior=prior_steps(prior_dir), prior_dir=str(prior_dir))
    try:
        rows = run_plan(plan, tmp_path / "out", load_prices())
        asked = len(pre.requests)
        run_plan(plan, tmp_path / "out", load_prices())
        assert len(pre.requests) == asked
    finally:
        pre.close()
        suf.close()
    (row,) = [r for r in rows if r["strategy"] == "escalation:traj_drop"]
    assert not row["switched"] and "ended on its own (completed) at step 2, before K" in row["reason"]
