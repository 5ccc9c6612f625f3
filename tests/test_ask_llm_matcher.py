"""`impasse run --suite ask --matcher llm`: HiL-Bench's judge at an OpenAI-compatible endpoint,
served here over real HTTP by a scripted judge (it reads the blockers and the question the real
client sends and picks a blocker by a fixed policy). A judge that is dead before the run fails the
preflight (nothing runs); one that dies mid-run pauses the run (exit 3), and ``--resume`` after it
is back finishes with every pass valid and scored. A judge that answers nonsense gives the hiccup
reply, and those passes are invalid, said so, and rerun by ``--resume``."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml
from typer.testing import CliRunner

from impasse.cli import app

TASK = "fl02_regional_by_airport"


def pick(user: str) -> str | None:
    """The scripted judge's policy: the blocker sharing most words (of 5+ letters) with the question."""
    blockers = json.loads(user.split("Blockers:\n", 1)[1].split("\n\nQuestion:\n", 1)[0])
    question = user.rsplit("\n\nQuestion:\n", 1)[1]
    words = set(re.findall(r"[a-z]{5,}", question.lower()))

    def shared(b: dict) -> int:
        return len(words & set(re.findall(r"[a-z]{5,}", (b["description"] + " ".join(b["example_questions"])).lower())))

    best = max(blockers, key=shared)
    return best["id"] if shared(best) >= 2 else None


class JudgeServer:
    """/v1/chat/completions for a judge: ``mode`` 'ok' (verdict JSON), 'nonsense' (not JSON),
    'dead' (HTTP 503 to everything); switchable while the run goes on."""

    def __init__(self, mode: str = "ok", die_after: int | None = None):
        self.mode, self.die_after, self.judged, self.requests = mode, die_after, 0, []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                user = body["messages"][-1]["content"]
                is_verdict = "Question:\n" in user
                if is_verdict:
                    server.judged += 1
                    if server.die_after is not None and server.judged > server.die_after:
                        server.mode = "dead"
                if server.mode == "dead":
                    self._send(503, {"error": {"message": "judge service unavailable"}})
                    return
                if not is_verdict:
                    content = "OK"
                elif server.mode == "nonsense":
                    content = "I think the agent asks about carriers."
                else:
                    content = json.dumps({"reasoning": "scripted", "blocker_key": pick(user)})
                self._send(200, {"id": "j", "object": "chat.completion", "created": 0, "model": body["model"],
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": content}}],
                                 "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

            def _send(self, code, payload):
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


@pytest.fixture
def judge_config(tmp_path):
    path = tmp_path / "judge.yaml"
    path.write_text(yaml.safe_dump({"max_retries": 1, "backoff_base": 0.01, "timeout": 10}))
    return path


def _run(server, out, judge_config, *extra):
    return CliRunner().invoke(app, ["run", "--suite", "ask", "--tasks", TASK, "--interfaces", "ask_human",
                                    "--agent", "targeted-asker", "--jobs", "1", "--out", str(out),
                                    "--matcher", "llm", "--matcher-model", "judge-70b",
                                    "--matcher-base-url", server.url, "--matcher-config", str(judge_config), *extra])


def _report(run, tmp_path):
    res = CliRunner().invoke(app, ["report", str(run), "--json", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    return json.loads((tmp_path / "r.json").read_text())


def test_llm_matcher_judges_a_run_over_http(tmp_path, judge_config):
    server = JudgeServer()
    try:
        res = _run(server, tmp_path / "run", judge_config)
    finally:
        server.close()
    assert res.exit_code == 0, res.output
    verdicts = [r for r in server.requests if "Question:\n" in r["messages"][-1]["content"]]
    assert verdicts and all(r["model"] == "judge-70b" and r["temperature"] == 0.05 and "tools" not in r
                            for r in verdicts)
    assert "tools" not in server.requests[0]  # the preflight: a plain completion
    report = _report(tmp_path / "run", tmp_path)
    [row] = report["summary"]["table"]
    assert row["excluded"] == 0 and row["recall"] > 0  # the judge's verdicts, scored
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["matcher"] == "llm"
    assert manifest["config"]["matcher_model"]["base_url"] == server.url


def test_dead_judge_before_the_run_fails_the_preflight(tmp_path, judge_config):
    server = JudgeServer(mode="dead")
    try:
        res = _run(server, tmp_path / "run", judge_config)
    finally:
        server.close()
    assert res.exit_code == 2, res.output
    assert "ask_human judge" in res.output and "Nothing was run" in res.output
    assert not list((tmp_path / "run").glob("episodes/*.jsonl"))


def test_judge_dying_mid_run_pauses_it_and_resume_finishes_it_valid(tmp_path, judge_config):
    server = JudgeServer(die_after=2)
    try:
        res = _run(server, tmp_path / "run", judge_config)
        assert res.exit_code == 3, res.output  # paused, not scored
        assert "run paused" in res.output and "model endpoint failed" in res.output
        server.mode, server.die_after = "ok", None  # the service is back
        res = CliRunner().invoke(app, ["run", "--resume", str(tmp_path / "run")])
        assert res.exit_code == 0, res.output
    finally:
        server.close()
    report = _report(tmp_path / "run", tmp_path)
    [row] = report["summary"]["table"]
    assert row["excluded"] == 0 and row["ask_episodes"] == 3
    assert all(e["valid"] for e in report["episodes"])


def test_nonsense_verdicts_are_invalid_passes_said_aloud_and_rerun(tmp_path, judge_config):
    server = JudgeServer(mode="nonsense")
    try:
        res = _run(server, tmp_path / "run", judge_config)
        assert res.exit_code == 1, res.output
        assert "3 episode(s) invalid" in res.output and "--resume" in res.output
        server.mode = "ok"
        res = CliRunner().invoke(app, ["run", "--resume", str(tmp_path / "run")])
        assert res.exit_code == 0, res.output
    finally:
        server.close()
    assert len(list((tmp_path / "run" / "attempts").glob("*.jsonl"))) == 3  # the invalid passes kept aside
    assert all(e["valid"] for e in _report(tmp_path / "run", tmp_path)["episodes"])


def test_matcher_options_are_checked(tmp_path):
    res = CliRunner().invoke(app, ["run", "--suite", "ask", "--matcher", "llm", "--out", str(tmp_path / "r")])
    assert res.exit_code == 2 and "--matcher llm needs --matcher-model" in res.output
    res = CliRunner().invoke(app, ["run", "--suite", "ask", "--matcher-model", "m", "--out", str(tmp_path / "r")])
    assert res.exit_code == 2 and "add --matcher llm" in res.output
    res = CliRunner().invoke(app, ["run", "--matcher", "llm", "--matcher-model", "m", "--out", str(tmp_path / "r")])
    assert res.exit_code == 2 and "for --suite ask" in res.output
    res = CliRunner().invoke(app, ["run", "--suite", "ask", "--matcher", "oracle", "--out", str(tmp_path / "r")])
    assert res.exit_code == 2 and "unknown matcher 'oracle'" in res.output
