"""SIGKILL `impasse handoff` in the suffix phase of a handoff episode, resume it with the same
command: nothing recorded is lost, nothing is duplicated, the switch is not performed twice (one
handoff event, one ticket request to the prefix), and the suffix's next request carries exactly the
messages the killed request carried (its phase was rebuilt as it was)."""

import json
import os
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from recording import complete_lines

from impasse.handoff.interfaces import HANDOFF_MARKER, TICKET_MARKER

IMPASSE = [sys.executable, "-m", "impasse.cli"]
NOTE = "/workspace/repo/HANDOFF_NOTE.txt"
TICKET = {"blocker": {"failed_operation": "none", "affected_target": "HANDOFF_NOTE.txt", "error_feedback": ""},
          "evidence": [], "recovery_attempts": [], "request": {"assistance_needed": "finish the note", "scope": "note"},
          "resume_condition": "the note has four lines",
          "progress": {"saved_changes": "TICKET-PROGRESS two lines", "unfinished_work": "two more lines",
                       "verification_status": "none"}}


class Endpoint:
    """An OpenAI-compatible endpoint answering from a script (by the number of assistant messages
    in the request); a ``write_ticket`` request gets the ticket. ``kill(body)`` true -> SIGKILL the
    client's process group instead of answering (once)."""

    def __init__(self, actions, kill=None):
        self.actions, self.kill, self.requests, self.killed, self.victim = actions, kill, [], None, None
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                if server.kill and server.killed is None and server.kill(body):
                    server.killed = body
                    os.killpg(server.victim.pid, signal.SIGKILL)
                    return
                tools = {t["function"]["name"] for t in body.get("tools", [])}
                k = sum(1 for m in body["messages"] if m["role"] == "assistant")
                name, args = ("write_ticket", TICKET) if "write_ticket" in tools else server.actions[
                    min(k, len(server.actions) - 1)]
                message = {"role": "assistant", "content": None, "tool_calls": [{
                    "id": f"call_{k}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}
                data = json.dumps({"id": "r", "object": "chat.completion", "created": 0, "model": body["model"],
                                   "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                                   "usage": {"prompt_tokens": 100 + k, "completion_tokens": 10}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


def _after_switch_with_a_result(body) -> bool:
    """The suffix's second request after the switch (one suffix tool result recorded)."""
    msgs = body["messages"]
    starts = [i for i, m in enumerate(msgs) if m["role"] == "user" and HANDOFF_MARKER in (m.get("content") or "")]
    return bool(starts) and sum(1 for m in msgs[starts[-1]:] if m["role"] == "tool") == 1


def test_sigkill_in_the_suffix_phase_and_resume(glom_task, tmp_path):
    prefix = Endpoint([("bash", {"command": f"echo one > {NOTE}"}), ("bash", {"command": f"echo two >> {NOTE}"}),
                       ("task_complete", {"verified": False, "summary": "two lines"})])
    suffix = Endpoint([("bash", {"command": f"echo three >> {NOTE}"}), ("bash", {"command": f"echo four >> {NOTE}"}),
                       ("bash", {"command": f"cat {NOTE}"}), ("task_complete", {"verified": False, "summary": "done"})],
                      kill=_after_switch_with_a_result)
    for name, ep in (("pre", prefix), ("suf", suffix)):
        (tmp_path / f"{name}.yaml").write_text(f"base_url: {ep.url}\n")
    out = tmp_path / "run"
    cmd = IMPASSE + ["handoff", "--prefix", "openai:lc-model", "--suffix", "openai:hc-model",
                     "--prefix-model-config", str(tmp_path / "pre.yaml"), "--suffix-model-config", str(tmp_path / "suf.yaml"),
                     "--interfaces", "ticket", "--switch", "2", "--direction", "escalation",
                     "--tasks", glom_task.instance_id, "--step-limit", "10", "--reps", "50", "--out", str(out)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, start_new_session=True)
        suffix.victim = proc
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == -signal.SIGKILL, err[-2000:]
        (path,) = [p for p in (out / "episodes").glob("*.jsonl") if p.name.startswith("escalation")]
        before = complete_lines(path)
        kinds = [json.loads(x)["type"] for x in before]
        assert kinds.count("handoff") == 1 and "final" not in kinds  # killed in the suffix phase
        requests_before = len(suffix.requests)
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
    finally:
        prefix.httpd.shutdown()
        suffix.httpd.shutdown()
    after = complete_lines(path)
    assert after[: len(before)] == before  # nothing recorded was lost or rewritten
    events = [json.loads(x) for x in after]
    kinds = [e["type"] for e in events]
    assert kinds.count("handoff") == 1 and kinds.count("resumed") == 1  # the switch was not performed again
    assert kinds.count("grade") == 1 and kinds.count("final") == 1 and kinds[-1] == "final"
    steps = [e["step"] for e in events if e["type"] == "step"]
    assert steps == list(range(1, len(steps) + 1)) and len(steps) == 2 + 4
    # one ticket request to the prefix, ever (the resumed run reused the recorded ticket)
    assert sum(1 for r in prefix.requests if TICKET_MARKER in json.dumps(r["messages"][-1:])) == 1
    # the suffix's first request after the resume is the killed request, message for message
    resumed = next(r for r in suffix.requests[requests_before:]  # (after the resumed command's preflight)
                   if {t["function"]["name"] for t in r.get("tools", [])} != {"ping"})
    assert resumed["messages"] == suffix.killed["messages"]
    assert "TICKET-PROGRESS two lines" in json.dumps(resumed["messages"])
    # the rebuilt sandbox held the prefix's two lines and the suffix's first: the note is complete
    cat = next(e for e in events if e["type"] == "step" and e["arguments"].get("command", "").startswith("cat"))
    assert cat["output"].splitlines()[:5] == ["one", "two", "three", "four", "[exit code: 0]"], cat["output"]
    # one trajectory per planned episode, none archived, one row each
    assert len(list((out / "episodes").glob("*.jsonl"))) == 3
    assert not (out / "attempts").exists() or not any((out / "attempts").iterdir())
    rows = [json.loads(x) for x in (out / "handoff.jsonl").read_text().splitlines()]
    assert len({r["episode_id"] for r in rows}) == len(rows) == 5
    (row,) = [r for r in rows if r["strategy"] == "escalation:ticket"]
    assert row["switched"] and row["steps"] == 6 and row["suffix_steps"] == 4
