"""Exact limits: reservations keep every worker under a cost ceiling, rpm/tpm are token buckets
shared by all workers (driven here by a fake clock, and by real processes over real HTTP), the
ledger check costs the same at 160k rows as at none, a pause drains, and a model's own ceiling
pauses only that model's episodes (real ask-suite runs against a scripted endpoint)."""

from __future__ import annotations

import json
import math
import multiprocessing
import random
import time
from pathlib import Path

import pytest
from test_model_http import ScriptedServer
from typer.testing import CliRunner

from impasse.agent.models import ModelConfig, OpenAIModel
from impasse.cli import app
from impasse.prices import Price
from impasse.run import buckets
from impasse.run.budget import (
    BudgetReached,
    Estimate,
    Ledger,
    Metered,
    SpendLimits,
    admit,
    estimate,
    reserve,
    settle,
)

SQL_TASK = "fl01_delay_share_ewr_summer"
ACTIONS = [("list_tables", {}), ("execute_query", {"query": "select 1"}), ("list_tables", {}),
           ("submit_final_query", {"query": "select 1"})]


def max_in_window(times: list[float], window: float = 60.0 - 1e-6) -> int:
    """Most calls in any window of 60 s (less a microsecond of float residue)."""
    times, best, lo = sorted(times), 0, 0
    for hi, t in enumerate(times):
        while t - times[lo] >= window:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def simulate(limits: SpendLimits, workers: int, minutes: float, seed: int, used=lambda est, rng: est.tokens):
    """``workers`` workers calling back to back on one shared state, on a fake clock: each waits as
    the limiter says, holds its call for a random time, books what it used."""
    rng, state, now = random.Random(seed), {}, 0.0
    est = Estimate(tokens=900, cost_usd=0.0)
    ready = [(rng.uniform(0, 1), w) for w in range(workers)]  # (time the worker wants to call, worker)
    starts, usage = [], []
    while ready:
        ready.sort()
        now, w = ready.pop(0)
        if now > minutes * 60:
            continue
        verdict, detail = admit(state, limits, "m", est, now)
        if verdict == "wait":
            ready.append((max(now + detail, math.nextafter(now, math.inf)), w))
            continue
        rid = reserve(state, limits, "m", est, now, {"pid": w})
        starts.append(now)
        done = now + rng.uniform(0.05, 4.0)
        tokens = used(est, rng)
        usage.append((now, tokens))
        settle(state, limits, rid, tokens, now)  # used <= estimate: booking changes no bucket
        ready.append((done, w))
    return starts, usage


@pytest.mark.parametrize("rpm", [1, 5, 37])
def test_rpm_bucket_never_lets_more_than_rpm_into_any_minute_and_keeps_the_rate(rpm):
    starts, _ = simulate(SpendLimits(rpm=rpm), workers=8, minutes=10, seed=rpm)
    assert max_in_window(starts) <= rpm
    assert len(starts) >= 0.9 * rpm * 10  # the sustained rate is the limit, not a fraction of it


def test_tpm_bucket_bounds_the_tokens_of_any_minute_and_keeps_the_rate():
    tpm = 20_000
    starts, usage = simulate(SpendLimits(tpm=tpm), workers=6, minutes=10, seed=3,
                             used=lambda est, rng: rng.randint(100, est.tokens))
    for t0 in starts:  # each call counts its estimate (900), as providers count it
        assert 900 * sum(1 for t in starts if t0 <= t < t0 + 60 - 1e-6) <= tpm
    assert len(starts) >= 0.9 * 0.75 * (tpm / 900) * 10  # sustained: 3/4 of the limit


def test_bucket_shapes_are_the_documented_bounds():
    assert buckets.shape("rpm", 5) == (1.0, 5 / 60.5)
    cap, rate = buckets.shape("rpm", 10, burst=4)
    assert cap + rate * 60 - 1 < 10  # at most the limit in a window, burst or not
    assert buckets.wait_for(None, 1.0, 5 / 60, 1, 0.0) == 0  # a new bucket is full
    b = buckets.take(None, 1.0, 5 / 60, 1, 0.0)
    assert buckets.wait_for(b, 1.0, 5 / 60, 1, 0.0) == pytest.approx(12.0)


def test_a_reservation_that_cannot_fit_refuses_and_one_that_fits_later_waits():
    limits = SpendLimits(max_cost=1.0, per_model={"a": {"max_cost": 0.5}})
    state = {"spent": {"*": {"tokens": 0, "cost_usd": 0.7}, "a": {"tokens": 0, "cost_usd": 0.25}}}
    verdict, (scope, why) = admit(state, limits, "b", Estimate(10, 0.4), 0)
    assert verdict == "refuse" and scope == "*" and "the run has spent $0.7000" in why
    assert admit(state, limits, "b", Estimate(10, 0.2), 0) == ("go", None)
    state["reserved"] = {"x": {"model": "b", "cost_usd": 0.2, "tokens": 10}}
    assert admit(state, limits, "b", Estimate(10, 0.2), 0)[0] == "wait"  # fits once x is booked
    verdict, (scope, why) = admit(state, limits, "a", Estimate(10, 0.29), 0)
    assert verdict == "refuse" and scope == "a" and "model 'a'" in why
    state["paused"] = {"a": "reached"}
    assert admit(state, limits, "a", Estimate(1, 0.0), 0)[0] == "refuse"
    assert admit({"paused": {"a": "x"}}, limits, "b", Estimate(1, 0.0), 0)[0] == "go"  # only a is paused


def test_the_estimate_reserves_the_whole_max_output_at_the_models_price():
    msgs = [{"role": "user", "content": "x" * 3000}]
    est = estimate(msgs, [], 100, Price(input=1.0, output=10.0))
    assert est.tokens >= 1000 + 100
    assert est.cost_usd == pytest.approx(((est.tokens - 100) * 1.0 + 100 * 10.0) / 1e6)


PRICE = {"input": 10.0, "output": 100.0}  # a scripted call: 1000+k prompt, 20 completion tokens


def _worker(url: str, ledger: str, ceiling: float, rpm: int | None, out) -> None:
    limits = SpendLimits(max_cost=ceiling, rpm=rpm, prices={"scripted": PRICE})
    inner = OpenAIModel(ModelConfig(model="scripted", base_url=url, max_tokens=32, max_retries=0))
    model = Metered(inner, limits, Ledger(Path(ledger)), "ep")
    msgs = [{"role": "user", "content": "y" * 3300}]  # ~1100 estimated prompt tokens >= the 1000 billed
    calls = 0
    try:
        while True:
            model.query(msgs, [])
            calls += 1
    except BudgetReached as e:
        out.put((calls, e.scope, time.time()))


def _run_workers(url, ledger, ceiling, rpm, n):
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(url, str(ledger), ceiling, rpm, q)) for _ in range(n)]
    for p in procs:
        p.start()
    results = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    return results


def test_four_processes_over_http_stay_under_the_ceiling(tmp_path):
    server = ScriptedServer(["ok"])
    ledger = tmp_path / "usage.jsonl"
    try:
        results = _run_workers(server.url, ledger, 0.5, None, 4)
    finally:
        server.close()
    rows = [json.loads(line) for line in ledger.read_text().splitlines()]
    spent = sum(r["cost_usd"] for r in rows)
    one_call = max(r["reserved_usd"] for r in rows)
    assert spent <= 0.5  # the reservation covers each call whole: never over
    assert spent > 0.5 - 2 * one_call  # and it does not stop early (~0.0134 per call)
    assert len(rows) == sum(c for c, _, _ in results) == len(server.requests)
    assert {scope for _, scope, _ in results} == {"*"}
    state = json.loads((tmp_path / "usage.state.json").read_text())
    assert state["spent"]["*"]["cost_usd"] == pytest.approx(spent) and state["reserved"] == {}
    assert "*" in state["paused"]


def test_rpm_is_shared_by_processes_in_real_time(tmp_path):
    server = ScriptedServer(["ok"])
    ledger = tmp_path / "usage.jsonl"
    try:  # rpm 120: one call every 0.5 s whatever the worker count; 0.09 USD ~ 7 calls
        t0 = time.time()
        _run_workers(server.url, ledger, 0.09, 120, 3)
    finally:
        server.close()
    times = [json.loads(line)["t_sent"] for line in ledger.read_text().splitlines()]
    assert len(times) >= 5
    gaps = [b - a for a, b in zip(sorted(times), sorted(times)[1:], strict=False)]
    assert min(gaps) >= 60.5 / 120 - 1e-3  # three workers, yet spaced as one bucket says
    assert time.time() - t0 >= 0.5 * (len(times) - 1)


def test_a_check_costs_the_same_at_160k_ledger_rows(tmp_path):
    limits = SpendLimits(max_cost=1e9, rpm=10**9, prices={"m": PRICE})

    def per_check(ledger: Ledger, n: int = 200) -> float:
        with ledger.locked():
            pass  # a first look rebuilds the totals once if the state is missing
        t = time.perf_counter()
        for _ in range(n):
            with ledger.locked() as s:
                rid = reserve(s, limits, "m", Estimate(10, 0.001), time.time(), {"pid": 1})
            with ledger.locked() as s:
                settle(s, limits, rid, 10, time.time())
                ledger.append({"model": "m", "prompt_tokens": 5, "completion_tokens": 5, "cost_usd": 0.001}, s)
        return (time.perf_counter() - t) / n

    small = Ledger(tmp_path / "a" / "usage.jsonl")
    big = Ledger(tmp_path / "b" / "usage.jsonl")
    big.path.parent.mkdir()
    row = json.dumps({"t": 0, "episode_id": "e", "model": "m", "prompt_tokens": 1000, "completion_tokens": 20,
                      "cost_usd": 0.012})
    big.path.write_text((row + "\n") * 160_000)
    t_small, t_big = per_check(small), per_check(big)
    assert t_big < 3 * t_small + 0.002, (t_small, t_big)
    assert big.state()["spent"]["*"]["calls"] == 160_200  # rebuilt once from the ledger, then counted on


def test_a_state_behind_the_ledger_is_rebuilt_from_it(tmp_path):
    ledger = Ledger(tmp_path / "usage.jsonl")
    with ledger.locked() as s:
        ledger.append({"model": "m", "prompt_tokens": 1, "completion_tokens": 1, "cost_usd": 0.5}, s)
    with open(ledger.path, "a") as fh:  # a writer killed after its line, before the totals
        fh.write(json.dumps({"model": "m", "prompt_tokens": 1, "completion_tokens": 1, "cost_usd": 0.25}) + "\n")
    assert ledger.state()["spent"]["m"]["cost_usd"] == pytest.approx(0.75)


# ------------------------------------------------------------------ runs (the ask suite's SQL tasks)


def _run(tmp_path, server, *extra, agents="openai:m1,openai:m2", out="run"):
    prices = tmp_path / "prices.yaml"
    prices.write_text("m1: {input: 10, output: 100}\nm2: {input: 10, output: 100}\n")
    cfg = tmp_path / "model.yaml"
    cfg.write_text("max_tokens: 32\nmax_retries: 0\n")
    return CliRunner().invoke(app, ["run", "--suite", "ask", "--tasks", SQL_TASK, "--interfaces", "baseline",
                                    "--agent", agents, "--base-url", server.url, "--model-config", str(cfg),
                                    "--step-limit", "4", "--prices", str(prices), "--out", str(tmp_path / out),
                                    *extra])


def test_a_models_own_ceiling_pauses_only_its_episodes_and_no_new_one_starts(tmp_path):
    server = ScriptedServer(ACTIONS)
    try:  # m1 may spend ~2 calls (0.0134 reserved each); m2 is unlimited
        res = _run(tmp_path, server, "--max-cost", "m1=0.03", "--jobs", "2")
        assert res.exit_code == 3, res.output
        assert "m1" in res.output and "paused" in res.output
        trajs = {p.stem for p in (tmp_path / "run" / "episodes").glob("*.jsonl")}
        m1 = sorted(t for t in trajs if t.startswith("m1"))
        assert len(m1) <= 2  # the pausing one (and one started beside it): the rest never start
        assert len([t for t in trajs if t.startswith("m2")]) == 3
        summary = json.loads((tmp_path / "run" / "summary.json").read_text())
        rows = summary["episodes"] if isinstance(summary, dict) and "episodes" in summary else summary
        done_m2 = [r for r in rows if r["agent"] == "model/m2" and r["final_ending"] != "paused"]
        assert len(done_m2) == 3
        ledger = [json.loads(line) for line in (tmp_path / "run" / "usage.jsonl").read_text().splitlines()]
        assert sum(r["cost_usd"] for r in ledger if r["model"] == "m1") <= 0.03
        res = CliRunner().invoke(app, ["run", "--resume", str(tmp_path / "run"), "--max-cost", "m1=1"])
        assert res.exit_code == 0, res.output
    finally:
        server.close()
    assert len(list((tmp_path / "run" / "episodes").glob("m1*.jsonl"))) == 3


def test_the_run_ceiling_pauses_all_and_drains(tmp_path):
    server = ScriptedServer(ACTIONS)
    try:
        res = _run(tmp_path, server, "--max-cost", "0.05", "--jobs", "1")
    finally:
        server.close()
    assert res.exit_code == 3, res.output
    ledger = [json.loads(line) for line in (tmp_path / "run" / "usage.jsonl").read_text().splitlines()]
    assert sum(r["cost_usd"] for r in ledger) <= 0.05
    assert len(list((tmp_path / "run" / "episodes").glob("*.jsonl"))) == 1  # nothing started after the pause


def test_a_cost_ceiling_needs_a_price_for_every_model_it_covers(tmp_path):
    server = ScriptedServer(ACTIONS)
    try:
        prices = tmp_path / "p.yaml"
        prices.write_text("m1: {input: 1, output: 1}\n")
        res = CliRunner().invoke(app, ["run", "--suite", "ask", "--tasks", SQL_TASK, "--agent", "openai:m1,openai:m2",
                                       "--base-url", server.url, "--prices", str(prices), "--max-cost", "5",
                                       "--out", str(tmp_path / "r")])
    finally:
        server.close()
    assert res.exit_code == 2 and "m2" in res.output and "does not price" in res.output
    assert not server.requests and not (tmp_path / "r").exists()  # refused before any call


def test_a_per_model_ceiling_naming_no_model_of_the_run_is_refused(tmp_path):
    server = ScriptedServer(ACTIONS)
    try:
        res = _run(tmp_path, server, "--max-cost", "m3=1")
    finally:
        server.close()
    assert res.exit_code == 2 and "'m3', which is no model of this run" in res.output and not server.requests


def test_agent_list_takes_base_url_and_model_config_and_preflights_each(tmp_path):
    server = ScriptedServer(ACTIONS)
    try:
        res = _run(tmp_path, server, "--jobs", "1")
    finally:
        server.close()
    assert res.exit_code == 0, res.output
    pings = [r for r in server.requests if r.get("max_tokens") == 32 and "ping" in json.dumps(r.get("tools", []))]
    assert sorted(r["model"] for r in pings) == ["m1", "m2"]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["models"]["m2"]["base_url"] == server.url


def test_agent_list_takes_a_base_url_and_a_model_config_per_model(tmp_path):
    a, b = ScriptedServer(ACTIONS), ScriptedServer(ACTIONS)
    cfg_b = tmp_path / "b.yaml"
    cfg_b.write_text("max_tokens: 48\n")
    try:
        res = CliRunner().invoke(app, ["run", "--suite", "ask", "--tasks", SQL_TASK, "--interfaces", "baseline",
                                       "--agent", "openai:m1,openai:m2", "--base-url", f"m1={a.url},m2={b.url}",
                                       "--model-config", f"m2={cfg_b}", "--step-limit", "2", "--jobs", "1",
                                       "--out", str(tmp_path / "run")])
        assert res.exit_code == 0, res.output
        assert {r["model"] for r in a.requests} == {"m1"} and {r["model"] for r in b.requests} == {"m2"}
        assert {r.get("max_tokens") for r in b.requests if "ping" not in json.dumps(r.get("tools", []))} == {48}
        res = CliRunner().invoke(app, ["run", "--suite", "ask", "--tasks", SQL_TASK, "--agent", "openai:m1,openai:m2",
                                       "--base-url", f"m1={a.url}", "--out", str(tmp_path / "r2")])
        assert res.exit_code == 2 and "but not m2" in res.output
    finally:
        a.close()
        b.close()


def test_agent_list_with_a_dead_endpoint_or_a_bad_model_config_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("api_key: sk-123\n")
    res = CliRunner().invoke(app, ["run", "--suite", "ask", "--agent", "openai:m1", "--base-url",
                                   "http://127.0.0.1:9/v1", "--model-config", str(bad), "--out", str(tmp_path / "r")])
    assert res.exit_code == 2 and "unknown settings ['api_key']" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(app, ["run", "--suite", "ask", "--agent", "openai:m1,openai:m2", "--base-url",
                                   "http://127.0.0.1:9/v1", "--out", str(tmp_path / "r")])
    assert res.exit_code == 2 and "model 'm1'" in res.output and "cannot reach" in res.output
    assert not (tmp_path / "r").exists()


def test_a_model_config_with_an_unknown_key_is_named_not_a_type_error():
    from impasse.agent.models import check_settings

    with pytest.raises(ValueError, match=r"prefix.yaml: unknown settings \['api_key'\] \(the key is read"):
        check_settings({"api_key": "sk-1", "temperature": 0}, "prefix.yaml")
    with pytest.raises(ValueError, match="prefix.yaml: timeout"):
        check_settings({"timeout": "soon"}, "prefix.yaml")
    assert check_settings({"temperature": 0.2}, "x") == {"temperature": 0.2}
