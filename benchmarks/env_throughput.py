"""Episodes through ``impasse serve openenv`` against the same Envs called directly, in one run,
with 1, 4 and 16 concurrent sessions: resets/s, steps/s, the p50/p99 latency of a step, and the
CPU each way spends per step.

Direct, each session is a thread calling an ``impasse.env.make`` Env in this process; served, a
thread with OpenEnv's sync client (``--client async``: all sessions on one event loop) talking to
the server, which runs each session's steps on that session's own worker thread. So both ways
step their Envs concurrently as threads of one Python process, sharing its GIL alike; the served
way adds the client (this process) on the same CPUs. All sessions connect, then all reset at once
(resets/s: sessions over that phase's wall time), then all step at once (STEPS bash calls each;
steps/s over that phase), so neither figure mixes in the other. Rounds alternate which way goes
first; figures are medians over rounds (latencies pooled).

CPU per step, over the stepping phase, from each process's CPU clock (every thread, ns): the
process holding the Envs (direct: this one; served: the server), the sandboxes' commands (its
children) and the client (served: this process). The server's own cost per step is its CPU per
step minus the direct process's; CPU time moves much less than wall time when other load shares
the machine. When the sessions keep every CPU busy (``CPUs busy`` near the count), steps/s is
CPU-bound and a step's latency is about sessions / steps/s, so there the p50 overhead follows
the throughput loss rather than the per-step cost.

Targets: a server overhead <= 2 ms per step at p50, and <= 10% of throughput at 16 sessions.

    python benchmarks/env_throughput.py [--steps 20] [--rounds 3] [--sessions 1,4,16]
                                        [--command true] [--client sync|async]
                                        (needs root and a built task)
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SPEC = {"condition": "clean", "interface": "tool", "step_limit": 80}
"""The episode both ways run: the server's defaults (``impasse serve openenv``) spelled out."""
TICK = os.sysconf("SC_CLK_TCK")


def _q(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))]


def process_cpu(pid: int) -> float:
    """Seconds of CPU process ``pid`` has used, all its threads (Linux's per-process CPU clock)."""
    return time.clock_gettime(((~pid) << 3) | 2)


def children_cpu(pid: int) -> float:
    """Seconds of CPU of ``pid``'s finished children (the sandboxes' commands), in clock ticks."""
    if pid == os.getpid():
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        return ru.ru_utime + ru.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[13]) + int(fields[14])) / TICK  # cutime, cstime


@dataclass
class Phases:
    """Marks taken when every session has reached the same point: wall time and CPU clocks."""

    server: int
    marks: list[dict[str, float]] = field(default_factory=list)

    def mark(self) -> None:
        me = os.getpid()
        self.marks.append({"t": time.perf_counter(), "self": process_cpu(me), "self_children": children_cpu(me),
                           "server": process_cpu(self.server), "server_children": children_cpu(self.server)})


@dataclass
class Run:
    resets_per_s: float
    steps_per_s: float
    latencies: list[float]
    cpu: dict[str, float]
    """ms per step: ``envs`` (the process holding the Envs), ``sandbox`` (its children), ``client``;
    ``reset``: the Envs' process, ms per reset."""


def run(sessions: int, steps: int, server_pid: int, open_session: Callable[[], Any],
        reset: Callable[[Any], None], step: Callable[[Any], None], close: Callable[[Any], None],
        served: bool) -> Run:
    phases = Phases(server_pid)
    barrier = threading.Barrier(sessions, action=phases.mark, timeout=600)

    def session(_k: int) -> list[float]:
        handle = open_session()
        try:
            barrier.wait()
            handle = reset(handle)
            barrier.wait()
            lat = []
            for _ in range(steps):
                t = time.perf_counter()
                step(handle)
                lat.append((time.perf_counter() - t) * 1000)
            barrier.wait()
            return lat
        except BaseException:
            barrier.abort()
            raise
        finally:
            close(handle)

    with ThreadPoolExecutor(sessions) as pool:
        got = list(pool.map(session, range(sessions)))
    return measured(phases, sessions, steps, got, served)


def measured(phases: Phases, sessions: int, steps: int, got: list[list[float]], served: bool) -> Run:
    ready, reset_done, stepped = phases.marks
    n = sessions * steps

    def per_step(key: str) -> float:
        return 1000 * (stepped[key] - reset_done[key]) / n

    envs = "server" if served else "self"
    cpu = {"envs": per_step(envs), "sandbox": per_step(f"{envs}_children"), "client": per_step("self") if served else 0.0,
           "reset": 1000 * (reset_done[envs] - ready[envs]) / sessions}
    return Run(sessions / (reset_done["t"] - ready["t"]), n / (stepped["t"] - reset_done["t"]),
               [x for lat in got for x in lat], cpu)


def direct(task: str, command: str, out: str, sessions: int, steps: int, server_pid: int) -> Run:
    import impasse.env

    def reset(_handle: Any) -> Any:
        env = impasse.env.make("blockers", task=task, out=out, agent="openenv/client", agent_kind="external", **SPEC)
        env.reset()
        return env

    return run(sessions, steps, server_pid, lambda: None, reset,
               lambda env: env.step({"name": "bash", "arguments": {"command": command}}),
               lambda env: env and env.close(), served=False)


def served(task: str, command: str, url: str, sessions: int, steps: int, server_pid: int) -> Run:
    from openenv import GenericEnvClient

    def open_session() -> Any:
        client = GenericEnvClient(base_url=url, message_timeout_s=300).sync()
        client.connect()
        return client

    def reset(client: Any) -> Any:
        client.reset(task=task, **SPEC)
        return client

    action = {"type": "call_tool", "tool_name": "bash", "arguments": {"command": command}}
    return run(sessions, steps, server_pid, open_session, reset, lambda c: c.step(action), lambda c: c.close(),
               served=True)


def served_async(task: str, command: str, url: str, sessions: int, steps: int, server_pid: int) -> Run:
    """The same sessions with OpenEnv's async client, all on one event loop (a trainer's rollout
    worker): no thread and no loop per session on the client's side."""
    import asyncio

    from openenv import GenericEnvClient

    phases = Phases(server_pid)
    action = {"type": "call_tool", "tool_name": "bash", "arguments": {"command": command}}

    async def sessions_at_once() -> list[list[float]]:
        arrived, passed = [0, 0, 0], [asyncio.Event() for _ in range(3)]

        async def barrier(i: int) -> None:
            arrived[i] += 1
            if arrived[i] == sessions:
                phases.mark()
                passed[i].set()
            await passed[i].wait()

        async def session(_k: int) -> list[float]:
            client = GenericEnvClient(base_url=url, message_timeout_s=300)
            try:
                await client.connect()
                await barrier(0)
                await client.reset(task=task, **SPEC)
                await barrier(1)
                lat = []
                for _ in range(steps):
                    t = time.perf_counter()
                    await client.step(action)
                    lat.append((time.perf_counter() - t) * 1000)
                await barrier(2)
                return lat
            except BaseException:
                for event in passed:  # the others stop waiting; the first error is raised
                    event.set()
                raise
            finally:
                await client.close()

        return list(await asyncio.gather(*(session(k) for k in range(sessions))))

    return measured(phases, sessions, steps, asyncio.run(sessions_at_once()), served=True)


def start_server(tmp: str) -> tuple[subprocess.Popen, str]:
    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "impasse.cli", "serve", "openenv", "--port", str(port),
                               "--out", f"{tmp}/served", "--conditions", "clean", "--max-sessions", "32"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            httpx.get(f"{url}/health")
            return server, url
        except httpx.HTTPError:
            if server.poll() is not None:
                break
            time.sleep(0.2)
    raise SystemExit(f"the server did not start (exit {server.poll()})")


def summary(runs: list[Run]) -> dict[str, float]:
    lat = [x for r in runs for x in r.latencies]
    med = statistics.median
    return {"resets/s": med(r.resets_per_s for r in runs), "steps/s": med(r.steps_per_s for r in runs),
            "p50": med(lat), "p99": _q(lat, 0.99), **{k: med(r.cpu[k] for r in runs) for k in runs[0].cpu}}


def compare(sessions: int, steps: int, rounds: int, ways: dict[str, Callable[[int, int], Run]]) -> dict[str, dict]:
    got: dict[str, list[Run]] = {w: [] for w in ways}
    for r in range(rounds):
        for way in (list(ways) if r % 2 == 0 else list(ways)[::-1]):
            got[way].append(ways[way](sessions, steps))
    return {w: summary(runs) for w, runs in got.items()}


HEADER = ("                                                           | CPU ms per step                 | CPU ms\n"
          "sessions | way    | resets/s | steps/s | p50 ms  | p99 ms  | Envs' process | sandbox | client | per reset")


def report(sessions: int, rows: dict[str, dict]) -> dict[str, float]:
    for way, r in rows.items():
        print(f"{sessions:8d} | {way:6s} | {r['resets/s']:8.1f} | {r['steps/s']:7.1f} | {r['p50']:7.2f} | "
              f"{r['p99']:7.2f} | {r['envs']:13.2f} | {r['sandbox']:7.2f} | {r['client']:6.2f} | {r['reset']:9.2f}")
    d, s = rows["direct"], rows["server"]
    all_cpu = {w: r["envs"] + r["sandbox"] + r["client"] for w, r in rows.items()}
    busy = {w: all_cpu[w] * rows[w]["steps/s"] / 1000 for w in rows}
    v = {"p50": s["p50"] - d["p50"], "throughput": 100 * (1 - s["steps/s"] / d["steps/s"]),
         "cpu": s["envs"] - d["envs"], "ratio": s["envs"] / d["envs"],
         "all_cpu": 100 * (all_cpu["server"] / all_cpu["direct"] - 1)}
    print(f"         server overhead: {v['p50']:+.2f} ms per step at p50, throughput {-v['throughput']:+.1f}%; "
          f"the server's CPU {s['envs']:.2f} ms per step = {v['ratio']:.2f}x direct ({v['cpu']:+.2f} ms), "
          f"client {s['client']:.2f} ms; all processes' CPU per step {v['all_cpu']:+.1f}%; "
          f"CPUs busy with the steps: direct {busy['direct']:.2f}, served {busy['server']:.2f}")
    return v


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20, help="bash calls per session (default 20)")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each way per session count (default 3)")
    ap.add_argument("--sessions", default="1,4,16", help="concurrent session counts (default 1,4,16)")
    ap.add_argument("--command", default="true", help="what each bash step runs (default: true)")
    ap.add_argument("--client", choices=("sync", "async"), default="sync",
                    help="OpenEnv's client: sync (a thread and a loop per session, as in the README) or async "
                         "(every session on one event loop)")
    args = ap.parse_args()
    counts = [int(x) for x in args.sessions.split(",")]
    os.environ.setdefault("IMPASSE_CACHE", str(Path.home() / ".cache" / "impasse-tests"))
    from impasse.suites.blockers import built_instances

    task, cmd = built_instances()[0].instance_id, args.command
    with tempfile.TemporaryDirectory() as tmp:
        server, url = start_server(tmp)
        try:
            serve = served_async if args.client == "async" else served
            ways = {"direct": lambda n, k: direct(task, cmd, f"{tmp}/direct", n, k, server.pid),
                    "server": lambda n, k: serve(task, cmd, url, n, k, server.pid)}
            for warm in ways.values():  # imports, the first sandbox, the server's first session
                warm(1, 1)
            print(f"task {task}; {args.steps} `{cmd}` steps per session, {args.rounds} rounds, OpenEnv's {args.client} "
                  f"client; {os.cpu_count()} CPUs, "
                  f"load average {os.getloadavg()[0]:.1f} at the start; the server at {url}")
            print(HEADER)
            verdicts = {n: report(n, compare(n, args.steps, args.rounds, ways)) for n in counts}
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} at the end" + (f": busier than {os.cpu_count()} CPUs, so the wall-clock figures "
                                                   "carry other processes' load (the CPU figures much less)"
                                                   if load > 0.5 * (os.cpu_count() or 1) else ""))
    print("target: server overhead <= 2 ms per step at p50: " + ", ".join(
        f"{n} sessions {v['p50']:+.2f} ms ({'met' if v['p50'] <= 2 else 'NOT met'})" for n, v in verdicts.items()))
    if 16 in verdicts:
        t = verdicts[16]["throughput"]
        print(f"target: <= 10% of throughput at 16 sessions: {-t:+.1f}% ({'met' if t <= 10 else 'NOT met'})")


if __name__ == "__main__":
    main()
