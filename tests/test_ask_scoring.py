"""Ask-F1, pass@k and the shaped reward on small fixed episodes, with values computed by hand."""

from __future__ import annotations

import pytest

from impasse.ask.scoring import (
    JUDGE_FAILED,
    Episode,
    Question,
    apply_answer_cap,
    episode_metrics,
    included,
    judgment_gap,
    pass_at_k,
    pass_at_k_unbiased,
    shaped_reward,
    summarize,
)

M = lambda b: Question(status="matched", blocker_id=b)  # noqa: E731
IRR = Question(status="irrelevant")


def ep(questions, n_blockers=4, task="t", i=0, resolved=False, valid=True):
    return Episode(task_id=task, pass_index=i, n_blockers=n_blockers, questions=questions,
                   resolved=resolved, valid=valid)


def test_duplicate_matches_count_as_questions_not_discoveries():
    # a, a, b, irrelevant: 2 unique of 4 questions; 2 of 4 blockers
    m = episode_metrics(ep([M("a"), M("a"), M("b"), IRR]))
    assert (m.n_questions, m.n_discovered) == (4, 2)
    assert m.precision == pytest.approx(0.5)
    assert m.recall == pytest.approx(0.5)
    assert m.f1 == pytest.approx(0.5)


def test_answer_cap_refuses_the_fourth_match_and_it_still_counts():
    qs = apply_answer_cap(["a", "b", "a", "c", None])
    assert [q.status for q in qs] == ["matched", "matched", "matched", "capped", "irrelevant"]
    m = episode_metrics(ep(qs, n_blockers=5))
    # discovered {a, b} = 2; questions 5 -> P 0.4, R 0.4, F1 0.4
    assert (m.n_discovered, m.n_questions) == (2, 5)
    assert m.precision == pytest.approx(0.4) and m.recall == pytest.approx(0.4)
    assert m.f1 == pytest.approx(0.4)


def test_recall_ceiling_under_the_cap():
    m = episode_metrics(ep(apply_answer_cap(["a", "b", "c", "d", "e"]), n_blockers=5))
    assert m.recall == pytest.approx(3 / 5)
    assert m.precision == pytest.approx(3 / 5)


def test_empty_questions_and_judge_failures_count_in_the_denominator():
    qs = apply_answer_cap(["a", "b", JUDGE_FAILED, "c"], questions=["What unit?", "ok?", "Which?", ""])
    assert [q.status for q in qs] == ["matched", "matched", "judge_failure", "empty"]
    m = episode_metrics(ep(qs, n_blockers=3))
    assert m.precision == pytest.approx(2 / 4)
    assert m.recall == pytest.approx(2 / 3)
    assert m.f1 == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))  # 4/7


def test_zero_questions_is_zero_but_blockers_stay_in_the_aggregate():
    m = episode_metrics(ep([], n_blockers=3))
    assert (m.precision, m.recall, m.f1) == (0.0, 0.0, 0.0)
    s = summarize([ep([], n_blockers=3), ep([M("a")], n_blockers=3, task="u")])
    assert s.recall == pytest.approx(1 / 6)
    assert s.precision == pytest.approx(1.0)


def test_micro_f1_differs_from_the_mean_of_episode_f1():
    e1 = ep([M("a")], n_blockers=1, task="x")  # P 1, R 1, F1 1
    e2 = ep([IRR] * 9 + [M("a")], n_blockers=5, task="y")  # P 0.1, R 0.2, F1 2/15
    s = summarize([e1, e2])
    # micro: P = 2/11, R = 2/6 -> F1 = 2*(2/11)*(1/3)/((2/11)+(1/3)) = 4/17
    assert s.precision == pytest.approx(2 / 11)
    assert s.recall == pytest.approx(1 / 3)
    assert s.f1 == pytest.approx(4 / 17)
    assert s.macro_f1 == pytest.approx((1 + 2 / 15) / 2)
    assert abs(s.f1 - s.macro_f1) > 0.3


def test_inclusion_drops_tasks_with_an_invalid_pass():
    eps = [ep([M("a")], task="x", i=0), ep([M("a")], task="x", i=1, valid=False),
           ep([IRR], task="y", i=0), ep([IRR], task="y", i=1)]
    assert {e.task_id for e in included(eps, expected_passes=2)} == {"y"}
    assert len(included(eps)) == 3


def test_pass_at_k_any_of_first_k_and_the_unbiased_estimator():
    eps = [ep([], task="x", i=0), ep([], task="x", i=1, resolved=True), ep([], task="x", i=2),
           ep([], task="y", i=0), ep([], task="y", i=1), ep([], task="y", i=2)]
    assert pass_at_k(eps, 1) == pytest.approx(0.0)
    assert pass_at_k(eps, 2) == pytest.approx(0.5)
    assert pass_at_k(eps, 3) == pytest.approx(0.5)
    # x: n=3, c=1 -> pass@1 = 1/3, pass@2 = 1 - C(2,2)/C(3,2) = 2/3; y: 0
    assert pass_at_k_unbiased(eps, 1) == pytest.approx(1 / 6)
    assert pass_at_k_unbiased(eps, 2) == pytest.approx(1 / 3)


def test_judgment_gap():
    full = [ep([], task="x", resolved=True), ep([], task="y", resolved=True)]
    ask = [ep([], task="x", resolved=True), ep([], task="y")]
    assert judgment_gap(full, ask, k=1) == pytest.approx(0.5)


def test_shaped_reward():
    # new a +0.3, repeat a -0.1, irrelevant -0.1, new b +0.3, terminal 2/4
    qs = [M("a"), M("a"), IRR, M("b")]
    assert shaped_reward(qs, 4) == pytest.approx(0.3 - 0.1 - 0.1 + 0.3 + 0.5)
    # nothing found: no terminal bonus, only penalties
    assert shaped_reward([IRR, IRR], 3) == pytest.approx(-0.2)
    assert shaped_reward([], 3) == 0.0
    with pytest.raises(ValueError):
        shaped_reward([], 0)


def test_per_pass_f1_is_each_pass_micro_f1_and_its_mean_std():
    from impasse.ask.scoring import mean_std, per_pass_f1

    eps = [ep([M("a"), IRR], task="t1", i=1), ep([M("a")], task="t2", i=1),  # pass 1: 2/3 precise, 2/8 found
           ep([IRR], task="t1", i=2), ep([M("b"), M("c")], task="t2", i=2)]  # pass 2: 2/3 precise, 2/8 found
    got = per_pass_f1(eps)
    f = 2 * (2 / 3) * (2 / 8) / (2 / 3 + 2 / 8)
    assert got == pytest.approx({1: f, 2: f})
    assert mean_std([0.2, 0.4, 0.6]) == pytest.approx((0.4, 0.2))  # sample std, as HiL-Bench's batch runner
    assert mean_std([0.5]) == (0.5, 0.0) and mean_std([]) == (0.0, 0.0)


def _row(agent, domain, mode, task, k, questions, resolved=False, n=2):
    from impasse.ask.annotate import episode_of
    from impasse.ask.scoring import shaped_reward

    r = {"episode_id": f"{agent}-{domain}-{mode}-{task}-{k}", "instance_id": task, "agent": agent, "mode": mode,
         "domain": domain, "pass": k, "n_blockers": n, "resolved": resolved, "valid": True,
         "questions": [{"question": "q", "status": "matched" if b else "irrelevant", "blocker_id": b} for b in questions]}
    r["shaped_reward"] = shaped_reward(episode_of(r).questions, n)
    return r


def test_table_has_combined_domain_rows_and_per_mode_pass_at_3_and_reward():
    from impasse.ask.annotate import mode_table, table

    rows = [_row("a", "sql", "ask_human", "s1", k, ["x"], resolved=k == 2) for k in (1, 2, 3)]
    rows += [_row("a", "swe", "ask_human", "w1", k, ["x", "y"]) for k in (1, 2, 3)]
    rows += [_row("a", "sql", "baseline", "s1", k, []) for k in (1, 2, 3)]
    t, excluded = table(rows)
    by = {r["domain"]: r for r in t}
    assert set(by) == {"sql", "swe", "both"} and not excluded
    assert by["both"]["tasks"] == 2 and by["both"]["recall"] == pytest.approx(9 / 12)  # (3 + 6) / (6 + 6)
    assert by["both"]["ask_human_pass@3"] == 0.5 and by["sql"]["baseline_pass@3"] == 0.0
    assert by["swe"]["ask_f1_mean"] == pytest.approx(1.0) and by["swe"]["ask_f1_std"] == 0.0
    modes = {(r["domain"], r["mode"]): r for r in mode_table(rows)}
    assert modes[("sql", "ask_human")]["pass@3"] == 1.0
    assert modes[("sql", "ask_human")]["shaped_reward"] == pytest.approx(0.3 + 0.5)
    assert modes[("swe", "ask_human")]["shaped_reward"] == pytest.approx(0.6 + 1.0)
    assert modes[("sql", "baseline")]["shaped_reward"] == 0.0 and ("both", "baseline") in modes
