"""Each handoff interface over real HTTP: two scripted endpoints (prefix, suffix); what the suffix
received, who wrote the summary, and that the working tree crossed the switch unchanged."""

import json

import pytest
from test_model_http import ScriptedServer

from impasse.handoff.metrics import load_prices
from impasse.handoff.runner import Plan, Side, _episode
from impasse.store.rundir import RunDir
from impasse.store.trajectory import read_trajectory
from impasse.tasks.schema import write_jsonl

NOTE = "/workspace/repo/HANDOFF_NOTE.txt"
PREFIX = [("bash", {"command": f"echo prefix-was-here > {NOTE}"}), ("bash", {"command": f"cat {NOTE}"})]
TICKET = {"blocker": {"failed_operation": "none", "affected_target": "HANDOFF_NOTE.txt", "error_feedback": ""},
          "evidence": ["wrote the note"], "recovery_attempts": [], "request": {"assistance_needed": "finish", "scope": "x"},
          "resume_condition": "tests pass", "progress": {"saved_changes": "TICKET-SAVED-NOTE",
                                                         "unfinished_work": "TICKET-UNFINISHED", "verification_status": "none"}}
SUFFIX = [("bash", {"command": "git status --short"}), ("task_complete", {"verified": False, "summary": "done"})]


def _first_task_request(server):
    return next(r for r in server.requests if {t["function"]["name"] for t in r.get("tools", [])} >= {"bash"})


@pytest.mark.parametrize("interface", ["raw", "compact_pre", "compact_suf", "traj_drop", "ticket"])
def test_interface_over_http(interface, glom_task, tmp_path):
    prefix_actions = PREFIX + [("write_summary", {"summary": "PREFIX-SUMMARY"}), ("write_ticket", TICKET)][
        (1 if interface == "ticket" else 0):]
    suffix_actions = SUFFIX * 2 if interface == "raw" else SUFFIX + [("write_summary", {"summary": "SUFFIX-SUMMARY"})]
    pre, suf = ScriptedServer(prefix_actions), ScriptedServer(suffix_actions)
    try:
        rd = RunDir(tmp_path)
        write_jsonl([glom_task], rd.instances)
        plan = Plan(Side("openai:lc-model", {"base_url": pre.url}), Side("openai:hc-model", {"base_url": suf.url}),
                    [interface], ["2"], ["escalation"], [glom_task], ["clean"], step_limit=8)
        row = _episode(rd, plan, load_prices(), glom_task, "clean", plan.lc, plan.hc, interface,
                       f"escalation:{interface}", ("2", 2))
    finally:
        pre.close()
        suf.close()
    traj = read_trajectory(next(rd.trajectories().__iter__()))
    (event,) = traj.of_type("handoff")
    assert row["switched"] and event["at_step"] == 2 and event["from_model"] == "model/lc-model"
    # the working tree crossed unchanged: the diff at the switch holds the prefix's file, and the
    # suffix's first command sees it
    assert "prefix-was-here" in event["working_tree_diff"]
    suffix_steps = [s for s in traj.steps if s.index > 2]
    assert "HANDOFF_NOTE.txt" in suffix_steps[0].output
    got = _first_task_request(suf)["messages"]
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
        assert len(pre.requests) == 3 and len(suf.requests) == 2  # one extra call, to the prefix
    if interface == "compact_suf":
        assert "SUFFIX-SUMMARY" in got[-1]["content"] and event["calls"][0]["model"] == "model/hc-model"
        summary_req = suf.requests[0]["messages"]  # the suffix read the full trajectory first
        assert any("echo prefix-was-here" in json.dumps(m) for m in summary_req)
    if interface == "ticket":
        for value in ("TICKET-SAVED-NOTE", "TICKET-UNFINISHED", "tests pass", "wrote the note"):
            assert value in got[-1]["content"]
        assert event["written"]["progress"]["saved_changes"] == "TICKET-SAVED-NOTE"
    if interface == "traj_drop":
        assert "PREFIX-SUMMARY" not in text and event["calls"] == []
