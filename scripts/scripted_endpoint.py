#!/usr/bin/env python3
"""A scripted stand-in for an OpenAI-compatible model endpoint, for trying the operations
(sweeps, limits, status, reports) on one machine without a model: POST /v1/chat/completions
answers with the next tool call of a fixed policy for the ask suite's SQL tasks (list the
tables, run a query, submit it), reporting usage as an endpoint would (prompt tokens ~ chars/4).
Its answers are not a model's: runs against it show the machinery, not results.

    python scripts/scripted_endpoint.py --port 8101 [--latency 0.1] [--fail-every 0]
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

POLICY = [("list_tables", {}), ("execute_query", {"query": "select count(*) from flights"}),
          ("submit_final_query", {"query": "select count(*) from flights"})]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8101)
    ap.add_argument("--latency", type=float, default=0.0, help="seconds per answer")
    ap.add_argument("--fail-every", type=int, default=0, help="answer every Nth request with HTTP 503 (retried)")
    a = ap.parse_args()
    count, lock = [0], threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, code: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                count[0] += 1
                n = count[0]
            time.sleep(a.latency)
            if a.fail_every and n % a.fail_every == 0:
                self._send(503, {"error": {"message": "scripted overload"}})
                return
            tools = {t["function"]["name"] for t in body.get("tools", [])}
            k = sum(1 for m in body["messages"] if m["role"] == "assistant")
            if "ping" in tools:
                message = {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "ping", "type": "function", "function": {"name": "ping", "arguments": "{}"}}]}
            elif tools:
                name, args = POLICY[min(k, len(POLICY) - 1)]
                message = {"role": "assistant", "content": None, "tool_calls": [
                    {"id": f"c{k}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}
            else:
                message = {"role": "assistant", "content": "OK"}
            prompt = len(json.dumps(body["messages"])) // 4
            self._send(200, {"id": f"r{n}", "object": "chat.completion", "created": int(time.time()),
                             "model": body["model"], "choices": [{"index": 0, "message": message,
                                                                  "finish_reason": "tool_calls"}],
                             "usage": {"prompt_tokens": prompt, "completion_tokens": 24,
                                       "total_tokens": prompt + 24}})

    httpd = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    print(f"scripted endpoint at http://127.0.0.1:{a.port}/v1", flush=True)
    httpd.serve_forever()


if __name__ == "__main__":
    main()
