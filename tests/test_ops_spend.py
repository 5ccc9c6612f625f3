"""Spend and rate limits: a real run against a real HTTP endpoint (a scripted policy that reports
token usage) pauses at --max-cost between two steps, resumes with a higher ceiling from its last
recorded step, and the money adds up."""

import json
import os
import subprocess
import sys

import pytest
from test_model_http import ScriptedServer

from impasse.prices import Price
from impasse.run.budget import Ceiling, SpendLimits, ceiling_reached, parse_ceilings, totals

IMPASSE = [sys.executable, "-m", "impasse.cli"]
PRICES = {"input": 100.0, "output": 1000.0, "cached": 10.0}  # USD per million tokens


def test_price_counts_cached_input_at_its_own_rate():
    p = Price(**PRICES)
    assert p.cost(1000, 20, cached=400) == pytest.approx((600 * 100 + 400 * 10 + 20 * 1000) / 1e6)
    assert Price(input=2, output=4).cost(1000, 10, cached=500) == pytest.approx((1000 * 2 + 10 * 4) / 1e6)


def test_a_manifest_from_before_the_price_table_keeps_its_prices():
    from impasse.run.config import RunConfig

    old = RunConfig.model_validate({"model": {"model": "m", "input_cost_per_mtok": 3.0, "output_cost_per_mtok": 9.0}})
    assert old.model == {"model": "m"} and old.spend.table.cost({"prompt_tokens": 10**6}, "m") == pytest.approx(3.0)


def test_a_cost_ceiling_on_a_model_without_a_price_is_refused_before_anything_runs():
    from impasse.run.config import RunConfig
    from impasse.run.plan import check

    cfg = RunConfig(suite="ask", model={"model": "unpriced-model", "base_url": "http://127.0.0.1:9/v1"},
                    spend={"max_cost": 5})
    with pytest.raises(ValueError, match="--max-cost limits unpriced-model, which the price table does not price"):
        check(cfg)
    check(RunConfig(suite="ask", model=cfg.model, spend={"max_cost": 5, "prices": {"unpriced-model": {
        "input": 1, "output": 1}}}))


def test_ceilings_for_the_run_and_per_model():
    rows = [{"model": "a", "prompt_tokens": 100, "completion_tokens": 10, "cost_usd": 0.5},
            {"model": "b", "prompt_tokens": 200, "completion_tokens": 10, "cost_usd": 0.25}]
    spent = totals(rows)
    assert spent["*"]["cost_usd"] == pytest.approx(0.75) and spent["b"]["tokens"] == 210
    limits = SpendLimits(max_cost=1.0, per_model={"a": Ceiling(max_cost=0.5), "b": Ceiling(max_tokens=1000)})
    assert "model 'a'" in ceiling_reached(limits, "a", spent)
    assert ceiling_reached(limits, "b", spent) is None
    assert "--max-tokens 300" in ceiling_reached(SpendLimits(max_tokens=300), "b", spent)
    assert parse_ceilings("5,gpt-4o=2.5") == (5.0, {"gpt-4o": 2.5})
    with pytest.raises(ValueError, match="MODEL=NUMBER"):
        parse_ceilings("five")


def call_cost(request):
    k = sum(1 for m in request["messages"] if m["role"] == "assistant")  # ScriptedServer's usage numbers
    return ((1000 + k) * PRICES["input"] + 20 * PRICES["output"]) / 1e6


@pytest.mark.slow
def test_run_pauses_at_max_cost_and_resumes_with_a_higher_ceiling(glom_task, tmp_path):
    server = ScriptedServer([("bash", {"command": f"echo step{k}"}) for k in range(5)]
                            + [("task_complete", {"verified": False, "summary": "done"})])
    prices = tmp_path / "prices.yaml"
    prices.write_text(f"scripted: {json.dumps(PRICES)}\n")
    model_cfg = tmp_path / "model.yaml"
    model_cfg.write_text("max_tokens: 32\n")  # each call is reserved at its prompt + 32 output tokens
    run_dir = tmp_path / "run"
    env = {**os.environ, "IMPASSE_API_KEY": "test"}
    try:
        first = subprocess.run(IMPASSE + ["run", "--model", "scripted", "--base-url", server.url, "--tasks",
                                          glom_task.instance_id, "--conditions", "clean", "--interfaces", "tool",
                                          "--jobs", "1", "--out", str(run_dir), "--prices", str(prices),
                                          "--model-config", str(model_cfg), "--max-cost", "0.6"], capture_output=True, text=True, env=env)
        assert first.returncode == 3, first.stderr[-3000:]
        assert "spend ceiling reached" in first.stderr and "--max-cost" in first.stderr
        (traj,) = (run_dir / "episodes").glob("*.jsonl")
        events = [json.loads(line) for line in traj.read_text().splitlines()]
        # calls of ~$0.12 each, reserved at more: the one that would not fit is refused before it
        # is made, after a whole step, and the spend stays under the ceiling
        ledger = [json.loads(line) for line in (run_dir / "usage.jsonl").read_text().splitlines()]
        steps = [e["step"] for e in events if e["type"] == "step"]
        assert events[-1]["type"] == "paused" and steps == list(range(1, len(ledger) + 1)) and 1 <= len(ledger) < 5
        assert sum(r["cost_usd"] for r in ledger) <= 0.6 < sum(r["cost_usd"] for r in ledger) + ledger[-1]["reserved_usd"]

        second = subprocess.run(IMPASSE + ["run", "--resume", str(run_dir), "--max-cost", "10"],
                                capture_output=True, text=True, env=env)
        assert second.returncode == 0, second.stderr[-3000:]
    finally:
        server.close()
    events = [json.loads(line) for line in traj.read_text().splitlines()]
    types = [e["type"] for e in events]
    assert types[-1] == "final" and "paused" in types and "resumed" in types
    assert [e["step"] for e in events if e["type"] == "step"] == [1, 2, 3, 4, 5, 6]  # nothing lost, nothing redone
    outputs = [e["output"] for e in events if e["type"] == "step"]
    assert [o.splitlines()[0] for o in outputs[:5]] == [f"step{k}" for k in range(5)]
    # the money: the endpoint's own usage numbers x the price table = the ledger = the trajectory
    agent_requests = [r for r in server.requests if len(r.get("tools", [])) > 1]  # not the preflight
    expected = sum(call_cost(r) for r in agent_requests)
    ledger = [json.loads(line) for line in (run_dir / "usage.jsonl").read_text().splitlines()]
    in_trajectory = [e["usage"]["cost_usd"] for e in events if e["type"] == "message" and e.get("usage")]
    assert len(agent_requests) == len(ledger) == len(in_trajectory) == 6
    assert sum(r["cost_usd"] for r in ledger) == pytest.approx(expected, abs=1e-5)
    assert sum(in_trajectory) == pytest.approx(expected, abs=1e-5)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["config"]["spend"]["max_cost"] == 10
    assert manifest["config"]["spend"]["prices"]["model/scripted"]["input"] == 100  # keyed as the table keys it
    assert manifest["limits_history"][0]["changed"] == {"max_cost": 10.0}
