"""Each handoff interface over real HTTP: two scripted endpoints (prefix, suffix); what the suffix
received, who wrote the summary, that the working tree crossed the switch unchanged, and that the
prefix was the prefix model's own single-model run replayed (no model call repeated)."""

import json

import pytest
from test_model_http import ScriptedServer

from impasse.handoff.interfaces import HANDOFF_MARKER, SUMMARY_MARKER, TICKET_MARKER
from impasse.handoff.runner import Plan, Side, run_plan
from impasse.prices import load_prices
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
