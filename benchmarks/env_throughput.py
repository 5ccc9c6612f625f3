"""Episodes through ``impasse serve openenv`` against the same Envs called directly, in one run:
the time of a reset, steps/s and the p50/p99 latency of a step, with 1, 4 and 16 concurrent sessions (each
session: reset, then STEPS bash calls). The server's overhead per step is its p50 minus the
direct p50; targets: <= 2 ms per step at p50, and <= 10% of throughput at 16 sessions.

    python benchmarks/env_throughput.py [--steps N]      (needs root and a built task)
"""

from __future__ import annotations

import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

STEPS = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 20
SESSIONS = (1, 4, 16)
COMMAND = "true"


def _q(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))]


def direct(task: str, out: str, n: int) -> tuple[float, list[float], list[float]]:
    import impasse.env

    def session(k: int) -> tuple[float, list[float]]:
        t = time.perf_counter()
        env = impasse.env.make("blockers", task=task, condition="clean", out=out)
        env.reset()
        reset = time.perf_counter() - t
        lat = []
        for _ in range(STEPS):
            t = time.perf_counter()
            env.step({"name": "bash", "arguments": {"command": COMMAND}})
            lat.append((time.perf_counter() - t) * 1000)
        env.close()
        return reset, lat

    return _run(session, n)


def served(task: str, url: str, n: int) -> tuple[float, list[float], list[float]]:
    from openenv import GenericEnvClient

    def session(k: int) -> tuple[float, list[float]]:
        with GenericEnvClient(base_url=url, message_timeout_s=300).sync() as env:
            t = time.perf_counter()
            env.reset(task=task, condition="clean")
            reset = time.perf_counter() - t
            lat = []
            for _ in range(STEPS):
                t = time.perf_counter()
                env.step({"type": "call_tool", "tool_name": "bash", "arguments": {"command": COMMAND}})
                lat.append((time.perf_counter() - t) * 1000)
        return reset, lat

    return _run(session, n)


def _run(session, n: int) -> tuple[float, list[float], list[float]]:
    t = time.perf_counter()
    with ThreadPoolExecutor(n) as pool:
        got = list(pool.map(session, range(n)))
    wall = time.perf_counter() - t
    return wall, [g[0] for g in got], [x for g in got for x in g[1]]


def main() -> None:
    os.environ.setdefault("IMPASSE_CACHE", str(Path.home() / ".cache" / "impasse-tests"))
    from impasse.suites.blockers import built_instances

    task = built_instances()[0].instance_id
    with tempfile.TemporaryDirectory() as tmp:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = subprocess.Popen([sys.executable, "-m", "impasse.cli", "serve", "openenv", "--port", str(port),
                                   "--out", f"{tmp}/served", "--conditions", "clean", "--max-sessions", "32"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            import httpx

            for _ in range(200):
                try:
                    httpx.get(f"http://127.0.0.1:{port}/health")
                    break
                except httpx.HTTPError:
                    time.sleep(0.2)
            print(f"task {task}; {STEPS} `{COMMAND}` steps per session; the server on 127.0.0.1:{port}")
            print("sessions | way    | reset ms | steps/s | step p50 ms | step p99 ms")
            for n in SESSIONS:
                rows = {}
                for way, fn in (("direct", lambda n=n: direct(task, f"{tmp}/direct", n)),
                                ("server", lambda n=n: served(task, f"http://127.0.0.1:{port}", n))):
                    wall, resets, lat = fn()
                    rows[way] = (1000 * statistics.mean(resets), len(lat) / wall, statistics.median(lat),
                                 _q(lat, 0.99))
                    r = rows[way]
                    print(f"{n:8d} | {way:6s} | {r[0]:8.1f} | {r[1]:7.1f} | {r[2]:11.2f} | {r[3]:11.2f}")
                d, s = rows["direct"], rows["server"]
                print(f"         overhead: {s[2] - d[2]:+.2f} ms per step at p50, throughput {100 * (1 - s[1] / d[1]):+.1f}%")
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
