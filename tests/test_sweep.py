"""Sweep files end to end: two models, each at its own scripted OpenAI-compatible endpoint over
real HTTP, on the ask suite's SQL tasks: validated whole before any call, every model
preflighted, a dry run that calls and writes nothing, the run, its status from another process,
a model's own ceiling pausing only that model, the resume, and the per-model report tables."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import yaml
from test_model_http import ScriptedServer
from typer.testing import CliRunner

from impasse.cli import app

TASK = "fl01_delay_share_ewr_summer"
ACTIONS = [("list_tables", {}), ("execute_query", {"query": "select 1"}), ("submit_final_query", {"query": "select 1"})]


@pytest.fixture
def servers():
    s = [ScriptedServer(ACTIONS), ScriptedServer(ACTIONS)]
    yield s
    for x in s:
        x.close()


def sweep_file(tmp_path, servers, **over):
    small, big = servers
    doc = {"models": [
        {"label": "small", "model": "small-v1", "base_url": small.url, "api_key_env": "KEY_SMALL",
         "config": {"max_tokens": 64, "max_retries": 0}, "rpm": 6000, "price": {"input": 10, "output": 100}},
        {"label": "big", "base_url": big.url, "config": {"max_tokens": 64, "max_retries": 0},
         "price": {"input": 20, "output": 200, "cached_input": 2}}],
        "suites": [{"name": "ask", "tasks": [TASK]}], "interfaces": ["baseline", "ask_human"], "repeats": 2,
        "max_cost": 5, "step_limit": 4, "jobs": 2}
    for k, v in over.items():
        if k.startswith("model_"):
            doc["models"][int(k[-1])].update(v)
        else:
            doc[k] = v
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_dry_run_prints_the_plan_and_calls_and_writes_nothing(tmp_path, servers):
    res = invoke("run", "--sweep", sweep_file(tmp_path, servers), "--out", tmp_path / "sw", "--dry-run")
    assert res.exit_code == 0, res.output
    assert "small" in res.output and "big" in res.output and "assumed per episode" in res.output
    assert "total: 8 episodes" in res.output  # 2 models x 1 task x 2 interfaces x 2 repeats
    assert not any(s.requests for s in servers) and not (tmp_path / "sw").exists()


def test_a_dry_run_assumes_no_longer_completions_than_a_models_max_tokens(tmp_path, servers):
    """Both models cap completions at max_tokens 64: the estimate assumes 64 completion tokens per
    call, not estimate.yaml's 300 (4 calls per episode at step limit 4, 4 episodes per model)."""
    res = invoke("run", "--sweep", sweep_file(tmp_path, servers, model_1={"config": {"max_retries": 0}}), "--out",
                 tmp_path / "sw", "--dry-run")
    assert res.exit_code == 0, res.output
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:]] for line in res.output.splitlines()
            if line.count("│") > 5 and line.split("│")[1].strip() in ("small", "big")}
    assert rows["small"][3] == str(16 * 64) and "max_tokens caps its completion tokens" in " ".join(res.output.split())
    assert rows["small"][4] == f"${(16 * 6000 * 10 + 16 * 64 * 100) / 1e6:.4f}"
    assert rows["big"][3] == str(16 * 300)  # no max_tokens of its own below the assumption: estimate.yaml's


@pytest.mark.parametrize("change, message", [
    ({"model_1": {"config": {"api_key": "sk-1"}}}, "models[1] ('big').config: unknown settings ['api_key']"),
    ({"model_1": {"config": {"input_cost_per_mtok": 2}}}, "a sweep model's price is its own `price: {input"),
    ({"model_1": {"label": "small"}}, "model label 'small' appears twice"),
    ({"suites": [{"name": "blockers2"}]}, "suites[0] ('blockers2').name"),
    ({"model_0": {"rpm": 0}}, "models[0] ('small').rpm"),
    ({"colour": "red"}, "colour"),
])
def test_a_bad_sweep_file_is_a_clear_error_before_any_call(tmp_path, servers, change, message):
    res = invoke("run", "--sweep", sweep_file(tmp_path, servers, **change), "--out", tmp_path / "sw")
    assert res.exit_code == 2 and message in res.output, res.output
    assert "Traceback" not in res.output and not any(s.requests for s in servers)


def test_a_cost_ceiling_on_an_unpriced_model_is_refused_before_any_call(tmp_path, servers):
    res = invoke("run", "--sweep", sweep_file(tmp_path, servers, model_1={"price": None}), "--out", tmp_path / "sw")
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "max_cost limits model 'big'" in text, text
    assert "add `price: {input: USD/Mtok, output: USD/Mtok}`" in text and "in the sweep file" in text
    assert "--prices" not in text  # a sweep takes no --prices: its prices are the models' price: entries
    assert not any(s.requests for s in servers) and not (tmp_path / "sw").exists()


def test_every_model_is_preflighted_before_anything_runs(tmp_path, servers):
    servers[1].refuse = lambda body: (401, "bad key")
    res = invoke("run", "--sweep", sweep_file(tmp_path, servers), "--out", tmp_path / "sw")
    assert res.exit_code == 2 and "model 'big'" in res.output and "401" in res.output
    assert len(servers[0].requests) == 1  # its preflight only: nothing ran
    assert not (tmp_path / "sw").exists()


def test_a_two_model_sweep_runs_reports_status_and_estimates_from_itself(tmp_path, servers, monkeypatch):
    monkeypatch.setenv("KEY_SMALL", "k")
    out = tmp_path / "sw"
    seen = []

    def flaky(body):  # big's 3rd request answers 503 once: the client retries it
        seen.append(1)
        return (503, "overloaded") if len(seen) == 3 else None

    servers[1].refuse = flaky
    res = invoke("run", "--sweep", sweep_file(tmp_path, servers, model_1={"config": {
        "max_tokens": 64, "max_retries": 2, "backoff_base": 0.01}}), "--out", out)
    assert res.exit_code == 0, res.output
    small, big = servers
    assert {r["model"] for r in small.requests} == {"small-v1"} and {r["model"] for r in big.requests} == {"big"}
    trajs = sorted(p.name for p in (out / "ask" / "episodes").glob("*.jsonl"))
    assert len(trajs) == 8 and sum(t.startswith("small") for t in trajs) == 4
    ledger = [json.loads(line) for line in (out / "usage.jsonl").read_text().splitlines()]
    assert {r["model"] for r in ledger} == {"small", "big"} and {r["run"] for r in ledger} == {"ask"}
    # status from another process: the same totals as the ledger
    st = subprocess.run([sys.executable, "-m", "impasse.cli", "status", str(out), "--json"], capture_output=True,
                        text=True)
    assert st.returncode == 0, st.stderr
    (doc,) = json.loads(st.stdout)
    assert doc["complete"] == 8 and doc["planned"] == 8
    assert doc["spent"]["*"]["cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in ledger))
    text = invoke("status", out).output
    assert "8/8 episodes complete" in text and "of $5" in text
    # the dry run of the same sweep, estimated from this one, predicts its cost
    res = invoke("run", "--sweep", sweep_file(tmp_path, servers), "--out", tmp_path / "again", "--dry-run",
                 "--estimate-from", out)
    assert res.exit_code == 0 and "measured (this model)" in res.output
    assert f"${sum(r['cost_usd'] for r in ledger):.4f}" in res.output
    # the report's per-model tables: terminal, JSON, HTML
    res = invoke("report", out / "ask", "--json", tmp_path / "r.json", "--html", tmp_path / "r.html")
    assert res.exit_code == 0, res.output
    assert "per-model usage" in res.output
    usage = {r["model"]: r for r in json.loads((tmp_path / "r.json").read_text())["usage"]}
    for model in ("small", "big"):
        mine = [r for r in ledger if r["model"] == model]
        assert usage[model]["calls"] == len(mine) and usage[model]["episodes"] == 4
        assert usage[model]["cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in mine), abs=1e-6)
        assert usage[model]["prompt_tokens"] == sum(r["prompt_tokens"] for r in mine)
        assert usage[model]["wall_seconds"] >= usage[model]["model_seconds"] / 2 > 0
    assert usage["big"]["retries"] == 1 and usage["small"]["retries"] == 0
    assert usage["all"]["calls"] == len(ledger) == len(small.requests) + len(big.requests) - 3  # 2 pings, 1 retry
    page = (tmp_path / "r.html").read_text()
    assert 'id="usage"' in page and f"${usage['big']['cost_usd']:.4f}" in page


def test_a_models_own_ceiling_in_a_sweep_pauses_only_it_and_resume_finishes(tmp_path, servers):
    out = tmp_path / "sw"
    res = invoke("run", "--sweep", sweep_file(tmp_path, servers, model_0={"max_cost": 0.03}), "--out", out)
    assert res.exit_code == 3, res.output
    ledger = [json.loads(line) for line in (out / "usage.jsonl").read_text().splitlines()]
    assert sum(r["cost_usd"] for r in ledger if r["model"] == "small") <= 0.03
    trajs = [p.name for p in (out / "ask" / "episodes").glob("*.jsonl")]
    assert sum(t.startswith("big") for t in trajs) == 4 and sum(t.startswith("small") for t in trajs) <= 2
    status = " ".join(invoke("status", out).output.split())
    assert "paused small" in status and not re.search(r"ETA \d", status)  # a paused run has no time left to show
    assert f"paused: no ETA until `impasse run --resume {out}`" in status
    (doc,) = json.loads(subprocess.run([sys.executable, "-m", "impasse.cli", "status", str(out), "--json"],
                                       capture_output=True, text=True).stdout)
    assert doc["state"] == "paused" and doc["eta_seconds"] is None
    res = invoke("run", "--resume", out, "--max-cost", "small=5")
    assert res.exit_code == 0, res.output
    assert len(list((out / "ask" / "episodes").glob("*.jsonl"))) == 8


def test_status_from_another_terminal_while_the_sweep_runs(tmp_path, servers):
    import time

    for s in servers:  # each answer takes a moment, so the sweep is caught half way
        s.refuse = lambda body: time.sleep(0.15)
    out = tmp_path / "sw"
    proc = subprocess.Popen([sys.executable, "-m", "impasse.cli", "run", "--sweep", str(sweep_file(tmp_path, servers)),
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = None
    try:
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            st = subprocess.run([sys.executable, "-m", "impasse.cli", "status", str(out), "--json"],
                                capture_output=True, text=True)
            if st.returncode == 0:
                (doc,) = json.loads(st.stdout)
                if 0 < doc["complete"] < doc["planned"]:
                    seen = doc
                    break
            time.sleep(0.3)
        output = proc.communicate(timeout=120)[0]
    finally:
        proc.kill()
    assert proc.returncode == 0, output[-2000:]
    assert seen is not None, "never saw the sweep half way"
    assert seen["eta_seconds"] is not None and seen["eta_seconds"] > 0, {k: seen.get(k) for k in ("state", "pauses", "complete", "spent")}
    assert 0 < seen["spent"]["*"]["cost_usd"] < 5
    assert "ETA" in output and "sweep: $" in output and "of $5" in output  # the progress line


def test_a_plain_run_dry_run_calls_and_writes_nothing(tmp_path, servers):
    res = invoke("run", "--suite", "ask", "--tasks", TASK, "--agent", "openai:m1,openai:m2", "--base-url",
                 servers[0].url, "--interfaces", "baseline", "--out", tmp_path / "r", "--dry-run")
    assert res.exit_code == 0, res.output
    assert "total: 6 episodes" in res.output and "nothing was called" in res.output
    assert not servers[0].requests and not (tmp_path / "r").exists()
    res = invoke("run", "--suite", "ask", "--tasks", TASK, "--estimate-from", tmp_path, "--out", tmp_path / "r")
    assert res.exit_code == 2 and "--estimate-from is for --dry-run" in res.output


@pytest.mark.slow
def test_a_sweep_over_two_suites_shares_one_ledger_and_repeats_episodes(glom_task, tmp_path):
    policy = [("bash", {"command": "echo hi"}), ("task_complete", {"verified": False, "summary": "done"})]

    def act(body):  # the blockers episodes get bash + task_complete, the ask ones the SQL policy
        names = {t["function"]["name"] for t in body.get("tools", [])}
        k = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return (ACTIONS if "list_tables" in names else policy)[min(k, 1 if "bash" in names else 2)]

    servers = [ScriptedServer(act), ScriptedServer(act)]
    try:
        path = sweep_file(tmp_path, servers, suites=[
            {"name": "ask", "tasks": [TASK], "interfaces": ["baseline"]},
            {"name": "blockers", "tasks": [glom_task.instance_id], "interfaces": ["tool"]}], conditions="clean")
        res = invoke("run", "--sweep", path, "--out", tmp_path / "sw")
    finally:
        for s in servers:
            s.close()
    assert res.exit_code == 0, res.output
    blockers = sorted(p.stem for p in (tmp_path / "sw" / "blockers" / "episodes").glob("*.jsonl"))
    assert len(blockers) == 4 and sum(b.endswith("__r2") for b in blockers) == 2  # 2 models x 2 repeats
    assert len(list((tmp_path / "sw" / "ask" / "episodes").glob("*.jsonl"))) == 4
    ledger = [json.loads(line) for line in (tmp_path / "sw" / "usage.jsonl").read_text().splitlines()]
    assert {r["run"] for r in ledger} == {"ask", "blockers"}
    st = json.loads(subprocess.run([sys.executable, "-m", "impasse.cli", "status", str(tmp_path / "sw"), "--json"],
                                   capture_output=True, text=True).stdout)
    assert [s["complete"] for s in st] == [4, 4]


@pytest.mark.slow
def test_status_of_a_run_without_model_calls_has_an_eta(glom_task, tmp_path):
    """A run of reference agents books no call, so its ledger file never appears: `impasse status`
    still knows when the session started and gives an ETA (it said "ETA ?" all run long)."""
    import time

    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "impasse.cli", "run", "--tasks", glom_task.instance_id,
                             "--conditions", "clean,read_only_source,test_killed", "--interfaces", "tool",
                             "--agent", "persistent", "--jobs", "1", "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = None
    try:
        deadline = time.time() + 600
        while time.time() < deadline and proc.poll() is None:
            st = subprocess.run([sys.executable, "-m", "impasse.cli", "status", str(out), "--json"],
                                capture_output=True, text=True)
            if st.returncode == 0:
                (doc,) = json.loads(st.stdout)
                if 0 < doc["complete"] < doc["planned"]:
                    seen = doc
                    break
            time.sleep(0.5)
        err = proc.communicate(timeout=600)[1]
    finally:
        proc.kill()
    assert proc.returncode == 0, err[-2000:]
    assert seen is not None, "never saw the run half way"
    assert seen["eta_seconds"] is not None and seen["eta_seconds"] > 0, seen
