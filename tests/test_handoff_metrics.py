"""Handoff metrics: QRec / CSRet hand-computed on a small table, the switched-subset rule, prices."""

import math

import pytest

from impasse.handoff.metrics import csret, percentile_steps, qrec, switched_subset, table
from impasse.prices import PriceError, PriceTable


def row(strategy, inst, resolved, cost, k=None, switched=True, **kw):
    return {"strategy": strategy, "instance": inst, "resolved": resolved, "cost_usd": cost, "k": k,
            "switched": switched, **kw}


ROWS = [
    # LC alone: resolves a; HC alone: resolves a, b, c
    row("LC", "a", True, 1.0), row("LC", "b", False, 1.0), row("LC", "c", False, 2.0), row("LC", "d", False, 1.0),
    row("HC", "a", True, 10.0), row("HC", "b", True, 10.0), row("HC", "c", True, 10.0), row("HC", "d", True, 10.0),
    # at K=3, strategy X resolves a, b; Y resolves a; Y did NOT switch on d (so d leaves the subset)
    row("X", "a", True, 4.0, "3", suffix_steps=2, suffix_cost_usd=2.0),
    row("X", "b", True, 6.0, "3", suffix_steps=3, suffix_cost_usd=3.0),
    row("X", "c", False, 5.0, "3", suffix_steps=5, suffix_cost_usd=4.0),
    row("X", "d", True, 5.0, "3"),
    row("Y", "a", True, 2.0, "3", suffix_steps=1, suffix_cost_usd=1.0),
    row("Y", "b", False, 2.0, "3", suffix_steps=1, suffix_cost_usd=1.0),
    row("Y", "c", False, 2.0, "3", suffix_steps=1, suffix_cost_usd=1.0),
    row("Y", "d", False, 1.0, "3", switched=False),
]


def test_switched_subset_drops_an_instance_where_one_strategy_did_not_switch():
    assert switched_subset(ROWS, ["X", "Y"], "3") == ["a", "b", "c"]
    assert switched_subset(ROWS, ["X"], "3") == ["a", "b", "c", "d"]


def test_qrec_and_csret_by_hand_on_the_switched_subset():
    cells = {(c.strategy, c.k): c for c in table(ROWS, ["X", "Y"], "LC", "HC", reps=200)}
    x = cells[("X", "3")]
    # subset {a,b,c}: R_LC = 1/3, R_HC = 1, R_X = 2/3 -> QRec = (2/3-1/3)/(1-1/3)*100 = 50
    assert x.n == 3 and x.qrec == pytest.approx(50.0)
    # C_LC = 4/3, C_HC = 10, C_X = 5 -> CSRet = (10-5)/(10-4/3)*100 = 57.69...
    assert x.csret == pytest.approx((10 - 5) / (10 - 4 / 3) * 100)
    y = cells[("Y", "3")]
    assert y.qrec == pytest.approx(0.0) and y.csret == pytest.approx((10 - 2) / (10 - 4 / 3) * 100)
    # suffix steps after the switch and cost per suffix step
    assert x.suffix_steps == pytest.approx(10 / 3) and x.suffix_cost_per_step == pytest.approx(9 / 10)
    # pooled over K (one K here) equals that K; CIs bracket the point estimate
    assert cells[("X", "pooled")].qrec == pytest.approx(50.0)
    lo, hi = x.csret_ci
    assert lo <= x.csret <= hi


def test_undefined_when_the_single_models_tie():
    assert qrec(0.5, 0.4, 0.4) is None and csret(1.0, 2.0, 2.0) is None
    assert qrec(1.0, 0.0, 0.5) == 200.0 and csret(3.0, 1.0, 2.0) == -100.0


def test_one_price_table_for_every_spelling_of_a_model_and_no_silent_zero():
    table = PriceTable.of({"m": {"input": 2.0, "output": 10.0, "cached_input": 0.5}, "reference/weak": {"input": 1,
                                                                                                       "output": 1}})
    u = {"prompt_tokens": 1_000_000, "cached_tokens": 400_000, "completion_tokens": 100_000}
    assert table.cost(u, "m") == table.cost(u, "model/m") == pytest.approx(0.6 * 2 + 0.4 * 0.5 + 0.1 * 10)
    assert table.cost(u, "unpriced") is None and table.unpriced(["m", "other"]) == ["other"]
    with pytest.raises(PriceError, match="'model/m'"):
        PriceTable.of({"m": {"input": 1, "output": 1}, "model/m": {"input": 2, "output": 2}})
    with pytest.raises(PriceError, match="'m': outptu: Extra inputs") as err:
        PriceTable.of({"m": {"input": 1, "output": 1, "outptu": 2}})
    assert str(err.value).endswith("(an entry is {input: USD/Mtok, output: USD/Mtok, cached_input: USD/Mtok})")


def test_an_unknown_cost_makes_csret_undefined_with_its_reason():
    rows = [dict(r) for r in ROWS]
    for r in rows:
        if r["strategy"] == "X":
            r["cost_usd"], r["unpriced"] = None, ["model/x"]
    x = {(c.strategy, c.k): c for c in table(rows, ["X"], "LC", "HC", reps=50)}[("X", "3")]
    assert x.csret is None and x.csret_reason == "no price for model/x" and x.qrec is not None


def test_a_switch_point_that_switches_nowhere_keeps_its_rows():
    rows = [r for r in ROWS if r["strategy"] in ("LC", "HC")] + [
        row("X", i, False, 1.0, "9", switched=False) for i in "abcd"]
    (x,) = table(rows, ["X"], "LC", "HC", reps=10)
    assert x.k == "9" and x.n == 0 and x.qrec is None and "no instance switched" in x.qrec_reason


def test_percentiles_of_termination_steps():
    steps = [10, 2, 8, 4, 6]
    assert percentile_steps(steps, [10, 50]) == {10: 2, 50: 6}
    with pytest.raises(ValueError, match="no termination steps"):
        percentile_steps([], [10])
    assert not math.isnan(percentile_steps([1], [5])[5])


def test_percentiles_within_difficulty_buckets_by_hand():
    from impasse.handoff.metrics import bucket_percentile_steps
    from impasse.handoff.runner import switch_steps

    runs = [{"instance": "a", "steps": 4, "resolved": True}, {"instance": "b", "steps": 6, "resolved": True},
            {"instance": "c", "steps": 8, "resolved": True}, {"instance": "d", "steps": 20, "resolved": False},
            {"instance": "e", "steps": 30, "resolved": False}]
    # pooled: sorted 4 6 8 20 30; nearest rank of p50 = ceil(2.5) = 3rd = 8, of p10 = 1st = 4
    assert bucket_percentile_steps(runs, 50) == dict.fromkeys("abcde", 8)
    assert switch_steps("p50", runs) == 8 and switch_steps("p10", runs) == 4
    # by outcome: solved {4, 6, 8} -> p50 = ceil(1.5) = 2nd = 6; unsolved {20, 30} -> p50 = 1st = 20
    assert bucket_percentile_steps(runs, 50, "outcome") == {"a": 6, "b": 6, "c": 6, "d": 20, "e": 20}
    # p10: 1st of each bucket
    assert switch_steps("p10", runs, "outcome") == {"a": 4, "b": 4, "c": 4, "d": 20, "e": 20}
    assert switch_steps("5", runs, "outcome") == 5 and switch_steps("escalation", runs) is None
    with pytest.raises(ValueError, match="difficulty bucket 'size'"):
        bucket_percentile_steps(runs, 50, "size")


# ----------------------------------------------------------------------------- rows from trajectories
def _traj(strategy, calls, switch_at=None, prefix="model/lc", suffix="model/hc", instance="i", k=None):
    """A recorded episode in memory: ``calls`` = [(model, prompt tokens)], one tool step each; a
    handoff after ``switch_at`` steps whose summary call is made by the suffix model."""
    from impasse.store.trajectory import Trajectory

    events = []
    for n, (model, prompt) in enumerate(calls, 1):
        if switch_at is not None and n == switch_at + 1:
            events.append({"type": "handoff", "at_step": switch_at, "calls": [
                {"model": suffix, "usage": {"prompt_tokens": 10**6, "completion_tokens": 0, "model": suffix}}]})
        events.append({"type": "message", "message": {"role": "assistant", "content": None},
                       "usage": {"prompt_tokens": prompt, "completion_tokens": 0, "model": model}})
        events.append({"type": "step", "step": n, "tool": "bash", "arguments": {}, "output": "", "exit_code": 0})
    events += [{"type": "ending", "phase": 1, "steps": len(calls), "ending": "completed"},
               {"type": "grade", "resolved": True}, {"type": "final"}]
    header = {"episode_id": f"{strategy.replace(':', '-')}__{k or 'full'}__clean__{instance}", "instance_id": instance,
              "condition": "clean", "strategy": strategy, "prefix": prefix, "suffix": suffix, "k": k}
    return Trajectory(None, header, events)


def test_an_unpriced_suffix_model_costs_unknown_per_suffix_step_never_zero():
    from impasse.handoff.runner import row_of

    prices = PriceTable.of({"lc": {"input": 1, "output": 1}})  # hc has no price
    t = _traj("escalation:raw", [("model/lc", 10**6)] * 2 + [("model/hc", 10**6)] * 3, switch_at=2, k="2")
    r = row_of(t, prices)
    assert r["cost_usd"] is None and r["unpriced"] == ["model/hc"]
    assert r["prefix_cost_usd"] == 2.0 and r["suffix_cost_usd"] is None and r["handoff_calls_usd"] is None
    lc, hc = row("alone:model/lc", "i@clean", False, 1.0), row("alone:model/hc", "i@clean", True, None)
    (c, _pooled) = table([lc, hc, {**r, "instance": "i@clean"}], ["escalation:raw"], "alone:model/lc",
                         "alone:model/hc", reps=10)
    assert c.suffix_steps == 3 and c.suffix_cost_per_step is None  # shown as "–", not $0.0000


def test_a_switch_point_that_switches_nowhere_has_no_suffix_steps_to_show():
    from impasse.handoff.report import row_cells

    rows = [r for r in ROWS if r["strategy"] in ("LC", "HC")] + [row("X", "a", False, 1.0, "9", switched=False)]
    (x,) = table(rows, ["X"], "LC", "HC", reps=10)
    assert row_cells(x)[-2:] == ["–", "–"]


def test_the_controls_take_the_prefix_cost_from_the_replayed_prefix_and_hc_alone():
    """abort+fresh = the cost to K of the very run the branches replayed (a --prior run's, not this
    run's single-model episode) + HC alone; an unpriced HC makes its suffix part unknown."""
    from impasse.handoff.runner import Plan, Side, controls, row_of

    prices = PriceTable.of({"lc": {"input": 1, "output": 1}, "hc": {"input": 10, "output": 10}})
    alone_lc = _traj("alone:model/lc", [("model/lc", 10**6)] * 5)
    alone_hc = _traj("alone:model/hc", [("model/hc", 10**6)] * 4, prefix="model/hc")
    prior_lc = _traj("alone:model/lc", [("model/lc", 3 * 10**6)] * 6)  # what the prefix replayed
    branch = row_of(_traj("escalation:raw", [("model/lc", 3 * 10**6)] * 2 + [("model/hc", 10**6)] * 2,
                          switch_at=2, k="2"), prices)
    rows = [row_of(alone_lc, prices), row_of(alone_hc, prices), branch]
    plan = Plan(Side("reference:weak"), Side("reference:strong"), ["raw"], ["2"], ["escalation"], [], ["clean"])
    plan.lc.spec, plan.hc.spec = "openai:lc", "openai:hc"
    alone = {("model/lc", "i@clean"): alone_lc, ("model/hc", "i@clean"): alone_hc}
    sources = {("escalation", "2", "i@clean"): prior_lc}
    by = {r["strategy"]: r for r in controls(rows, plan, prices, alone, sources)}
    abort = by["escalation:abort+fresh"]
    assert abort["prefix_cost_usd"] == 6.0  # 2 replayed calls of 3M tokens at $1/M, not this run's 2 x 1M
    assert abort["cost_usd"] == 6.0 + 40.0 and abort["suffix_cost_usd"] == 40.0
    unpriced = PriceTable.of({"lc": {"input": 1, "output": 1}})
    rows = [row_of(alone_lc, unpriced), row_of(alone_hc, unpriced), row_of(_traj(
        "escalation:raw", [("model/lc", 10**6)] * 2 + [("model/hc", 10**6)] * 2, switch_at=2, k="2"), unpriced)]
    for c in controls(rows, plan, unpriced, alone, sources):
        assert c["cost_usd"] is None and c["suffix_cost_usd"] is None and "model/hc" in c["unpriced"]


def test_the_terminal_tables_stay_readable_when_piped(tmp_path, capsys):
    """Piped (no terminal), the tables are not squeezed into 80 columns: every strategy name and
    every column title is printed whole."""
    from impasse.handoff.report import COLUMNS, write_report
    from impasse.handoff.runner import Plan, Side

    plan = Plan(Side("openai:lc"), Side("openai:hc"), ["compact_pre"], ["3"], ["escalation"], [], ["clean"])
    rows = [row("alone:model/lc", "a", False, 1.0), row("alone:model/hc", "a", True, 10.0),
            row("escalation:compact_pre", "a", True, 4.0, "3", suffix_steps=2, suffix_cost_usd=2.0, k_step=3)]
    rows[0]["prefix"], rows[1]["prefix"] = "model/lc", "model/hc"
    write_report(rows, plan, tmp_path, reps=10)
    printed = capsys.readouterr().out
    assert "escalation:compact_pre" in printed and all(c in printed for c in COLUMNS)


def _recorded(steps, ending=None, at=None):
    """A recorded single-model run of ``steps`` tool calls, ending as ``ending`` (None: cut short
    with no ending, as a harness error or an interrupted run leaves it)."""
    from impasse.store.trajectory import Trajectory

    events = [e for n in range(1, steps + 1) for e in (
        {"type": "message", "message": {"role": "assistant", "content": None}},
        {"type": "step", "step": n, "tool": "bash", "arguments": {}, "output": "", "exit_code": 0})]
    if ending:
        events += [{"type": "ending", "phase": 1, "steps": at or steps, "ending": ending}, {"type": "final"}]
    else:
        events.append({"type": "harness_error", "error": "OSError: gone"})
    return Trajectory(None, {"condition": "clean", "instance_id": "i"}, events)


@pytest.mark.parametrize("run, k, expected", [
    (_recorded(9, "completed"), 4, (4, 4)),              # still going after K: replayed to K
    (_recorded(3, "completed"), 4, (None, 0)),           # the model completed first: no switch
    (_recorded(4, "escalated"), 4, (None, 0)),           # escalated at K itself: it stopped, no switch
    (_recorded(2, "error"), 4, (None, 0)),               # the model could not go on: it stopped
    (_recorded(2, "step_limit"), 4, (4, 2)),             # a smaller budget (a --prior run's) cut it: live to K
    (_recorded(9, "step_limit"), 8, (None, 0)),          # K leaves the suffix nothing of this run's budget
    (_recorded(2, None), 4, (4, 2)),                     # a harness error cut it: live from step 2 to K
    (_recorded(6, None), 4, (4, 4)),                     # cut after K: replayed to K
])
def test_where_a_prefix_switches_depends_on_what_ended_its_recorded_run(run, k, expected):
    from impasse.handoff.runner import switch_reach

    reach = switch_reach(run, str(k), k, step_limit=8)
    assert (reach.step, reach.replayed) == expected
    assert (reach.step is None) == bool(reach.reason)


def test_the_reason_a_prefix_does_not_switch_is_what_stopped_it():
    from impasse.handoff.runner import switch_reach

    assert "ended on its own (completed) at step 3" in switch_reach(_recorded(3, "completed"), "4", 4, 8).reason
    assert "never escalated" in switch_reach(_recorded(3, "completed"), "escalation", None, 8).reason
    assert "cut short before any ending" in switch_reach(_recorded(3, None), "escalation", None, 8).reason
    assert "leaves the suffix no step of the 10-step budget" in switch_reach(_recorded(12, "completed"), "p90", 10,
                                                                               10).reason
