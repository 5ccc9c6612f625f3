"""A real OpenAI-compatible HTTP server, started by the test, serving a scripted policy. The
client, the loop, the tools and the sandbox are all real."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from impasse.agent.reference import fix_edits
from impasse.run import EpisodeSpec, RunConfig, run_episode
from impasse.store.trajectory import read_trajectory

pytestmark = pytest.mark.slow


class ScriptedServer:
    """Answers /v1/chat/completions from a list of actions; can fail the first requests."""

    def __init__(self, actions, failures=(), refuse=None):
        """``actions``: the k-th reply for a request with k assistant messages, or a policy
        ``actions(body) -> action`` reading the conversation; ``failures``: HTTP codes for the first
        requests; ``refuse(body) -> (code, message) | None`` answers a request with an error (a dead
        or misconfigured endpoint)."""
        self.actions = actions if callable(actions) else list(actions)
        self.failures, self.requests, self.refuse = list(failures), [], refuse
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                refused = server.refuse(body) if server.refuse else None
                if server.failures or refused:
                    code, text = refused or (server.failures[0], f"scripted {server.failures.pop(0)}")
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(json.dumps({"error": {"message": text}}).encode())
                    return
                k = sum(1 for m in body["messages"] if m["role"] == "assistant")
                action = (server.actions(body) if callable(server.actions)
                          else server.actions[min(k, len(server.actions) - 1)])
                if isinstance(action, str):
                    message = {"role": "assistant", "content": action}
                else:
                    name, args = action
                    message = {"role": "assistant", "content": None, "tool_calls": [{
                        "id": f"call_{k}", "type": "function",
                        "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}]}
                reply = {"id": f"r{k}", "object": "chat.completion", "created": 0, "model": body["model"],
                         "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                         "usage": {"prompt_tokens": 1000 + k, "completion_tokens": 20, "total_tokens": 1020 + k}}
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


def test_real_endpoint_by_configuration_alone(backend, glom_task, tmp_path):
    old, new = fix_edits(glom_task.patch, "")[0]
    target = f"/workspace/repo/{glom_task.target_file}"
    test = f"python -m pytest -q {glom_task.FAIL_TO_PASS[0]}"
    server = ScriptedServer([
        ("bash", "{not json"),                                   # malformed arguments
        ("rm_everything", {}),                                   # unknown tool
        ("edit_file", {"path": target}),                         # missing arguments
        "Let me think about this first.",                        # no tool call at all
        ("bash", {"command": test}),
        ("edit_file", {"path": target, "old_str": old, "new_str": new}),
        ("bash", {"command": test}),
        ("task_complete", {"verified": True, "summary": "fixed"}),
    ], failures=[429, 500, 503])
    try:
        cfg = RunConfig(model={"model": "scripted-policy", "base_url": server.url, "backoff_base": 0.01},
                        spend={"prices": {"scripted-policy": {"input": 1.0, "output": 2.0}}}, interfaces=["tool"])
        spec = EpisodeSpec("http-episode", glom_task.instance_id, "clean", "tool", "model/scripted-policy")
        summary = run_episode(spec, cfg, tmp_path)
    finally:
        server.close()
    assert summary["ending"] == "completed" and summary["resolved"]
    t = read_trajectory(tmp_path / "episodes" / "http-episode.jsonl")
    assert t.header["agent_kind"] == "model"
    outputs = [s.output for s in t.steps]
    assert outputs[0].startswith("Error: arguments are not valid JSON")
    assert outputs[1].startswith("Error: unknown tool 'rm_everything'")
    assert outputs[2].startswith("Error: missing required argument(s): old_str, new_str")
    assert "1 failed" in outputs[3] and "1 passed" in outputs[5]
    assert any(m.get("content") == "Please continue by calling one of the tools." for m in t.messages)
    usages = [e["usage"] for e in t.events if e["type"] == "message" and e["message"]["role"] == "assistant"]
    assert usages[0]["retries"] == 3 and all(u["completion_tokens"] == 20 for u in usages)
    assert usages[0]["cost_usd"] == pytest.approx((1000 * 1.0 + 20 * 2.0) / 1e6)
    # the request the endpoint saw is plain OpenAI chat format with our four tools
    tools = {t["function"]["name"] for t in server.requests[-1]["tools"]}
    assert tools == {"bash", "edit_file", "task_complete", "escalate_to_human"}


def test_endpoint_that_keeps_failing_is_a_harness_error_and_resume_reruns_it(backend, glom_task, tmp_path):
    """A dead service is not the agent's failure: recorded as a harness error, never graded,
    and run again once the endpoint is back."""
    from impasse.agent.endings import EndpointError

    old, new = fix_edits(glom_task.patch, "")[0]
    target = f"/workspace/repo/{glom_task.target_file}"
    spec = EpisodeSpec("e", glom_task.instance_id, "clean", "baseline", "model/m")
    server = ScriptedServer([("bash", {"command": "true"})], failures=[500] * 10)
    try:
        cfg = RunConfig(model={"model": "m", "base_url": server.url, "backoff_base": 0.001, "max_retries": 2})
        with pytest.raises(EndpointError, match="after 2 retries"):
            run_episode(spec, cfg, tmp_path)
    finally:
        server.close()
    failed = read_trajectory(tmp_path / "episodes" / "e.jsonl")
    assert failed.failed and not failed.of_type("grade")
    healthy = ScriptedServer([("edit_file", {"path": target, "old_str": old, "new_str": new}),
                              ("task_complete", {"verified": False, "summary": "fixed"})])
    try:
        cfg = RunConfig(model={"model": "m", "base_url": healthy.url})
        summary = run_episode(spec, cfg, tmp_path)
    finally:
        healthy.close()
    assert summary["resolved"] and (tmp_path / "attempts" / "e.1.jsonl").exists()


@pytest.mark.parametrize("refuse,message", [
    (None, "cannot reach the model endpoint"),
    (lambda b: (401, "invalid api key"), "refused the API key (HTTP 401)"),
    (lambda b: (404, "The model `nope` does not exist."), "does not know this model"),
    (lambda b: (400, "tools are not supported by this model") if b.get("tools") else None,
     "does not accept tool definitions"),
])
def test_preflight_names_the_url_and_the_problem_before_anything_runs(glom_task, tmp_path, refuse, message):
    import subprocess
    import sys

    server = ScriptedServer(["hi"], refuse=refuse) if refuse else None
    url = server.url if server else "http://127.0.0.1:9/v1"
    try:
        res = subprocess.run([sys.executable, "-m", "impasse.cli", "run", "--model", "nope", "--base-url", url,
                              "--tasks", glom_task.instance_id, "--conditions", "clean", "--out", str(tmp_path / "r")],
                             capture_output=True, text=True, timeout=120)
    finally:
        if server:
            server.close()
    text = " ".join(res.stderr.split())
    assert res.returncode == 2 and message in text and url in text, text
    assert not list((tmp_path / "r" / "episodes").glob("*.jsonl")) if (tmp_path / "r" / "episodes").exists() else True


def test_endpoint_dying_mid_run_pauses_the_run_and_resume_finishes_it(glom_task, tmp_path):
    """The endpoint serves the first episodes, then dies: the run pauses after three consecutive
    endpoint failures (instead of failing every remaining episode), exits 3, and once the service
    is back `--resume` finishes it with every earlier episode untouched."""
    import os
    import subprocess
    import sys
    import time

    state = {"dead": False}
    script = [("bash", {"command": "git status --short"}), ("task_complete", {"verified": False, "summary": "s"})]
    server = ScriptedServer(script, refuse=lambda body: (500, "upstream down") if state["dead"] else None)
    conf = tmp_path / "model.yaml"
    conf.write_text("max_retries: 0\n")
    run = tmp_path / "run"
    conditions = "clean,read_only_source,read_only_fs,disk_full,text_file_busy,already_fixed,exec_unavailable"
    args = [sys.executable, "-m", "impasse.cli", "run", "--model", "m", "--base-url", server.url, "--model-config",
            str(conf), "--tasks", glom_task.instance_id, "--conditions", conditions, "--interfaces", "baseline",
            "--jobs", "1", "--out", str(run)]
    try:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ)
        deadline = time.time() + 120
        while time.time() < deadline and sum(read_trajectory(p).complete for p in (run / "episodes").glob("*.jsonl")
                                             if p.stat().st_size) < 2:
            time.sleep(0.1)
        state["dead"] = True
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 3, err
        assert "run paused" in err and "upstream down" in " ".join(err.split())
        attempted = {p.stem for p in (run / "episodes").glob("*.jsonl")}
        assert 2 <= len(attempted) < 7  # not every episode was tried against a dead endpoint
        before = {p.name: p.read_text() for p in (run / "episodes").glob("*.jsonl") if read_trajectory(p).complete}
        state["dead"] = False
        res = subprocess.run([sys.executable, "-m", "impasse.cli", "run", "--resume", str(run)], capture_output=True,
                             text=True, timeout=300, env=os.environ)
    finally:
        server.close()
    assert res.returncode == 0, res.stderr
    after = {p.name: p.read_text() for p in (run / "episodes").glob("*.jsonl")}
    assert len(after) == 7 and all(after[name] == text for name, text in before.items())
    assert all(read_trajectory(run / "episodes" / name).complete for name in after)
    assert list((run / "attempts").glob("*.jsonl")), "failed attempts are kept for inspection"


def test_llm_ticket_judge_through_the_client():
    from impasse.agent.models import ModelConfig, OpenAIModel
    from impasse.tickets.judge import llm_judge
    from impasse.tickets.ticket import Ticket

    server = ScriptedServer(['Scores: {"blocker": "full", "progress": "partial", "request": "full", '
                             '"resume_condition": "bogus"}'])
    try:
        j = llm_judge(Ticket(), OpenAIModel(ModelConfig(model="judge", base_url=server.url)))
    finally:
        server.close()
    assert j.scores == {"blocker": "full", "progress": "partial", "request": "full", "resume_condition": "missing"}
    # no overall rating in the reply: the rubric's rule is applied, and the judgement says so
    assert j.overall == "partial" and "rubric" in j.note and j.judge == "llm:judge"
    assert "Ticket:" in server.requests[0]["messages"][0]["content"]


def test_report_scores_tickets_with_an_llm_judge(tmp_path):
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    corpus = Path(__file__).parent / "corpus"
    run = tmp_path / "run" / "episodes"
    run.mkdir(parents=True)
    for name in ("variant-evidence-spread", "real-premature-tool-text_file"):
        shutil.copy(corpus / f"{name}.jsonl", run / f"{name}.jsonl")
    server = ScriptedServer(['{"blocker": "full", "progress": "full", "request": "full", "resume_condition": "full"}'])
    try:
        out = subprocess.run([sys.executable, "-m", "impasse.cli", "report", str(tmp_path / "run"), "--json", "-",
                              "--judge-model", "judge", "--judge-base-url", server.url],
                             capture_output=True, text=True, timeout=120)
    finally:
        server.close()
    assert out.returncode == 0, out.stderr
    eps = {Path(e["trajectory"]).stem: e for e in json.loads(out.stdout)["episodes"]}
    assert eps["variant-evidence-spread"]["ticket_sufficient_llm"] is True
    assert eps["real-premature-tool-text_file"]["ticket_sufficient_llm"] is True  # the LLM's view, not the rubric's
    assert eps["real-premature-tool-text_file"]["ticket_sufficient"] is False
    assert len(server.requests) == 3  # the judge's preflight, then one call per ticket


def test_a_models_own_key_variable_never_falls_back_to_the_openai_key(monkeypatch):
    """A model configured with its own key variable (a sweep's api_key_env) whose variable is not
    set sends no key, never $OPENAI_API_KEY, to its endpoint, which may be anyone's; nor does the
    default variable, unset, at any endpoint but OpenAI's own API (it sent the user's OpenAI key
    to whatever --base-url named); and when such an endpoint refuses, the preflight says no key
    was sent and which variable to set."""
    from impasse.agent.endings import EndpointError
    from impasse.agent.models import ModelConfig, preflight

    seen = []
    refuse = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            seen.append(self.headers.get("Authorization"))
            self.rfile.read(int(self.headers["Content-Length"]))
            status, body = (401, {"error": {"message": "invalid api key"}}) if refuse else (200, {
                "id": "r", "object": "chat.completion", "created": 0, "model": "m", "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "OK"}, "finish_reason": "stop"}]})
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_port}/v1"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-the-users-openai-key")
    monkeypatch.delenv("LARGE_API_KEY", raising=False)
    monkeypatch.delenv("IMPASSE_API_KEY", raising=False)
    try:
        preflight(ModelConfig(model="m", base_url=url, api_key_env="LARGE_API_KEY"), needs_tools=False)
        monkeypatch.setenv("LARGE_API_KEY", "k-large")
        preflight(ModelConfig(model="m", base_url=url, api_key_env="LARGE_API_KEY"), needs_tools=False)
        preflight(ModelConfig(model="m", base_url=url), needs_tools=False)  # the default variable, unset
        refuse.append(True)
        with pytest.raises(EndpointError) as refused:
            preflight(ModelConfig(model="m", base_url=url), needs_tools=False)
        monkeypatch.setenv("IMPASSE_API_KEY", "k-impasse")
        with pytest.raises(EndpointError) as wrong:
            preflight(ModelConfig(model="m", base_url=url), needs_tools=False)
    finally:
        httpd.shutdown()
    assert "Bearer sk-the-users-openai-key" not in seen
    assert seen == ["Bearer not-needed", "Bearer k-large", "Bearer not-needed", "Bearer not-needed", "Bearer k-impasse"]
    assert "no key was sent" in str(refused.value) and "$OPENAI_API_KEY is sent only to OpenAI's own API" in str(
        refused.value) and "set $IMPASSE_API_KEY" in str(refused.value)
    assert "the key sent came from $IMPASSE_API_KEY" in str(wrong.value)


@pytest.mark.parametrize("base_url, sent", [
    (None, "sk-openai"), ("https://api.openai.com/v1", "sk-openai"), ("https://eu.api.openai.com/v1", "sk-openai"),
    ("http://api.openai.com/v1", None), ("https://api.openai.com.evil.example/v1", None),
    ("http://localhost:8000/v1", None), ("https://openrouter.ai/api/v1", None)])
def test_the_openai_key_goes_to_openais_own_api_only(base_url, sent):
    from impasse.agent.models import ModelConfig, key_for

    env = {"OPENAI_API_KEY": "sk-openai"}
    assert key_for(ModelConfig(model="m", base_url=base_url), env)[0] == sent
    assert key_for(ModelConfig(model="m", base_url=base_url), {**env, "IMPASSE_API_KEY": "k"})[0] == "k"
    assert key_for(ModelConfig(model="m", base_url=base_url, api_key_env="OWN"), env)[0] is None
