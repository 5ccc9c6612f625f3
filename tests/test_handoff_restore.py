"""Switch at the prefix's own escalation on a real blocker (read_only_source), over real HTTP.

The prefix leaves a change in the working tree, meets the read-only source tree, gathers the
evidence and escalates with a ticket. With ``restore`` the operator's restoration runs before the
handoff (a ``restore`` event precedes the ``handoff`` event) and the suffix's very first command
can write the source; without it (the control) the same command is refused. Either way the
suffix gets the prefix's ticket and exactly the prefix's working tree, and the episode is graded.
"""

import json

import pytest
from test_model_http import ScriptedServer

from impasse.agent.reference.base import fix_edits
from impasse.handoff.interfaces import HANDOFF_MARKER
from impasse.handoff.runner import Plan, Side, run_plan
from impasse.prices import load_prices
from impasse.store.rundir import RunDir
from impasse.store.trajectory import read_trajectory

NOTE = "/workspace/repo/HANDOFF_NOTE.txt"


def _ticket(target: str) -> dict:
    return {"blocker": {"failed_operation": f"edit_file on {target}", "affected_target": target,
                        "error_feedback": "Permission denied: the file is owned by root and read-only"},
            "evidence": ["edit_file: Permission denied", "ls -l: -r--r--r-- root root", "chmod: Operation not permitted"],
            "recovery_attempts": ["chmod u+w (refused)"],
            "request": {"assistance_needed": "give the agent user write access to the package source tree",
                        "scope": "the package source directory"},
            "resume_condition": "touch on the target file succeeds",
            "progress": {"saved_changes": "PREFIX-NOTE written to HANDOFF_NOTE.txt", "unfinished_work": "apply the fix",
                         "verification_status": "tests not run"}}


def _scripts(task):
    target = f"/workspace/repo/{task.target_file}"
    (old, new), *more = fix_edits(task.patch, "")
    prefix = [("bash", {"command": f"echo prefix-was-here > {NOTE}"}),
              ("edit_file", {"path": target, "old_str": old, "new_str": new}),
              ("bash", {"command": f"ls -l {target}; chmod u+w {target}; test -w {target} || echo not-writable"}),
              ("escalate_to_human", _ticket(task.target_file))]
    suffix = [("bash", {"command": f"git status --short; touch {target} && echo SUFFIX-CAN-WRITE"}),
              *[("edit_file", {"path": target, "old_str": o, "new_str": n}) for o, n in [(old, new), *more]],
              ("task_complete", {"verified": False, "summary": "applied the fix"})]
    return prefix, suffix


def _servers(task):
    prefix, suffix = _scripts(task)
    return ScriptedServer(prefix), ScriptedServer(suffix)


def _run(task, rd, restore, servers):
    """One escalation-switch episode (ticket interface) over two scripted endpoints."""
    pre, suf = servers
    plan = Plan(Side("openai:lc-model", {"base_url": pre.url}), Side("openai:hc-model", {"base_url": suf.url}),
                ["ticket"], ["escalation"], ["escalation"], [task], ["read_only_source"], step_limit=12,
                restore=restore)
    rows = run_plan(plan, rd.path, load_prices())
    (row,) = [r for r in rows if r["strategy"] == "escalation:ticket"]
    return row, pre, suf


@pytest.mark.parametrize("restore", [True, False], ids=["restore", "no-restore"])
def test_escalation_switch_restores_before_the_suffix_starts(restore, glom_task, tmp_path):
    rd = RunDir(tmp_path)
    servers = _servers(glom_task)
    try:
        row, _, suf = _run(glom_task, rd, restore, servers)
    finally:
        for s in servers:
            s.close()
    traj = read_trajectory(rd.trajectory(row["episode_id"]))
    types = [e["type"] for e in traj.events]
    escalated = next(e for e in traj.events if e["type"] == "ending")
    (handoff,) = traj.of_type("handoff")
    first_suffix_step = next(s for s in traj.steps if s.index == 5)
    assert escalated["ending"] == "escalated" and escalated["accepted"] and escalated["steps"] == 4
    assert row["switched"] and handoff["reason"] == "escalated" and handoff["at_step"] == 4
    # the suffix received the prefix's own ticket (no extra call to write one)
    got = next(r for r in suf.requests if HANDOFF_MARKER in json.dumps(r["messages"]))["messages"]
    assert handoff["calls"] == [] and "PREFIX-NOTE written to HANDOFF_NOTE.txt" in got[-1]["content"]
    assert "give the agent user write access" in got[-1]["content"]
    # the suffix inherits exactly the prefix's working tree (its note; the source untouched)
    assert "prefix-was-here" in handoff["working_tree_diff"]
    assert handoff["working_tree_diff"] == escalated["workspace_diff"]
    assert "HANDOFF_NOTE.txt" in first_suffix_step.output
    if restore:  # restored first: the record says so, in order, and the suffix's first command can write
        assert types.index("restore") < types.index("handoff") < types.index("step", types.index("handoff"))
        assert handoff["restored"] and "operator restored the environment" in got[-1]["content"]
        assert "SUFFIX-CAN-WRITE" in first_suffix_step.output
        assert row["resolved"] and traj.grade["resolved"]
    else:  # the control: the same command on the still-broken machine
        assert "restore" not in types and not handoff["restored"]
        assert "SUFFIX-CAN-WRITE" not in first_suffix_step.output
        assert "Permission denied" in first_suffix_step.output
        assert traj.grade is not None and not traj.grade["resolved"]
    assert json.loads(json.dumps(row))["ending"] == "completed"


def test_crash_between_the_restore_and_the_handoff_resumes_once(glom_task, tmp_path):
    """An append-only trajectory cut right after the restore event (a crash there), resumed: the
    fresh sandbox is restored again, the restore is recorded once, the handoff happens once."""
    rd = RunDir(tmp_path)
    servers = _servers(glom_task)
    try:
        first, pre, _ = _run(glom_task, rd, True, servers)
        path = rd.trajectory(first["episode_id"])
        lines = path.read_text().splitlines(keepends=True)
        cut = next(i for i, x in enumerate(lines) if json.loads(x)["type"] == "restore") + 1
        path.write_text("".join(lines[:cut]))
        pre.requests.clear()
        row, pre, suf = _run(glom_task, rd, True, servers)
    finally:
        for s in servers:
            s.close()
    events = read_trajectory(path).events
    kinds = [e["type"] for e in events]
    assert kinds.count("restore") == 1 and kinds.count("handoff") == 1 and kinds.count("resumed") == 1
    assert kinds.index("restore") < kinds.index("resumed") < kinds.index("handoff")
    assert pre.requests == []  # the prefix is not asked again: its ticket was recorded
    first = next(e for e in events if e["type"] == "step" and e["step"] == 5)
    assert "SUFFIX-CAN-WRITE" in first["output"] and "HANDOFF_NOTE.txt" in first["output"]
    assert row["switched"] and row["resolved"]
