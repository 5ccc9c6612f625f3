"""Real-time adherence of ``--rpm`` / ``--tpm``: worker processes share one run ledger and call a
local OpenAI-compatible endpoint over HTTP (answering instantly, so the limiter alone sets the
pace) for ``--seconds`` (default 300: five minutes). Printed: calls, the most calls and tokens in
any 60 s window (must be <= the limits), and the sustained rate against the limit.

    PYTHONPATH=src python benchmarks/rate_limits.py --rpm 30 --workers 4 --seconds 300
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PROMPT_TOKENS, COMPLETION_TOKENS = 300, 20


ARRIVALS: list[float] = []


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        ARRIVALS.append(time.time())  # as a provider's limiter would count it
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        reply = {"id": "r", "object": "chat.completion", "created": 0, "model": body["model"],
                 "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
                 "usage": {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS,
                           "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS}}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def worker(url: str, ledger: str, rpm: int | None, tpm: int | None, until: float) -> None:
    from impasse.agent.models import ModelConfig, OpenAIModel
    from impasse.run.budget import Ledger, Metered, SpendLimits

    inner = OpenAIModel(ModelConfig(model="bench", base_url=url, max_tokens=64, max_retries=0))
    model = Metered(inner, SpendLimits(rpm=rpm, tpm=tpm), Ledger(Path(ledger)), "bench")
    while time.time() < until:
        model.query([{"role": "user", "content": "x" * 600}], [])


def most_in_window(rows: list[dict], key, at: str, window: float = 60.0) -> float:
    """The most of ``key`` over rows whose time ``at`` falls in any half-open 60 s window."""
    rows = sorted(rows, key=lambda r: r[at])
    best, lo, total = 0.0, 0, 0.0
    for r in rows:
        total += key(r)
        while r[at] - rows[lo][at] >= window:
            total -= key(rows[lo])
            lo += 1
        best = max(best, total)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rpm", type=int, default=30)
    ap.add_argument("--tpm", type=int, default=None)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=300.0)
    a = ap.parse_args()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_port}/v1"
    with tempfile.TemporaryDirectory() as d:
        ledger = Path(d) / "usage.jsonl"
        start = time.time()
        until = start + a.seconds
        procs = [multiprocessing.Process(target=worker, args=(url, str(ledger), a.rpm, a.tpm, until))
                 for _ in range(a.workers)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        rows = [json.loads(line) for line in ledger.read_text().splitlines()]
    httpd.shutdown()
    served_at = [{"t": t} for t in ARRIVALS]
    elapsed = max(r["t"] for r in rows) - start
    calls = most_in_window(rows, lambda r: 1, "t_sent")
    served = most_in_window(served_at, lambda r: 1, "t")
    tokens = most_in_window(rows, lambda r: r["prompt_tokens"] + r["completion_tokens"], "t_sent")
    print(f"{a.workers} workers, {a.seconds:g} s, --rpm {a.rpm} --tpm {a.tpm}: {len(rows)} calls")
    print(f"  most calls in any 60 s window: {calls:.0f} sent, {served:.0f} as the endpoint saw them arrive "
          f"(limit {a.rpm})")
    print(f"  most tokens in any 60 s window: {tokens:.0f}  (limit {a.tpm}; calls reserve prompt + 64)")
    print(f"  sustained: {len(rows) / elapsed * 60:.2f} calls/min over {elapsed:.0f} s")


if __name__ == "__main__":
    main()
