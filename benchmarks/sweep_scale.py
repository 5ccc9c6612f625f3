"""Does recording keep up with a paper-scale sweep? Measure here, then simulate 1-64 nodes.

Three parts, one run:

1. **Writers** (a local Ray cluster: a head and ``--nodes`` worker nodes, each its own raylet):
   client actors on the worker nodes play episodes that append events of the measured sizes
   through the run's real writer actors (:class:`impasse.run.ray.TrajectoryServer`: every event
   written and fsync'd before the answer), at 1..64 concurrent episodes and 1..4 writers.
   Printed: events/s, and the one-client round trip.
2. **End to end**: one small plan of real episodes (reference agents, the local sandbox) through
   the Ray executor on that cluster (one slot per worker node) and through the local pool with
   the same number of slots. Printed: episodes/s of each, and what the simulation takes from it
   (per-step command times, per-episode fixed cost, Ray's extra cost per episode).
3. **Simulation** of the paper's sweep (8 models x 102 tasks x 12 conditions x 2 interfaces =
   19,584 episodes) on 1, 4, 16 and 64 nodes: a discrete-event model whose slots run episodes
   from one queue; every recorded event waits for its writer (a FIFO server with the measured
   service time) plus the measured round trip. Printed, with every assumption: wall time, the
   ideal (the same work with no waiting for writers and perfect packing) and their ratio, the
   efficiency. Target: >= 0.9 at 16 nodes.

    IMPASSE_CACHE=~/.cache/impasse-tests python benchmarks/sweep_scale.py [--nodes 2] [--from RUN_DIR]

``--from RUN_DIR`` takes event sizes, per-step command times and (``--lengths-from-run``)
episode lengths from a finished run instead of part 2's small plan.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

SWEEP = {"models": 8, "tasks": 102, "conditions": 12, "interfaces": 2}
PAPER_LENGTHS = {"limit": 80, "limit_share": 0.34, "mean_steps": 7.51 + 38.9}
"""DESIGN.md's reference numbers (baseline): t* 7.5 steps, 38.9 calls after it, 34% end at 80."""
EVENTS_AROUND = {"start": 3, "end": 3}
"""header + system + task message; ending + grade + final (and per step: the model's message, the step)."""


# ------------------------------------------------------------------------------ 1. the writers


def measure_writers(cluster_address: str, sizes: list[int], clients: list[int], writers: list[int],
                    events: int) -> dict[tuple[int, int], float]:
    import ray

    from impasse.run.ray import RemoteStore, TrajectoryServer

    ray.init(address=cluster_address, log_to_driver=False)
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)

    @ray.remote(num_cpus=0, resources={"bench": 1})
    class Episode:
        def play(self, servers: list[Any], eid: str, sizes: list[int]) -> float:
            store = RemoteStore(servers)
            w = store.open_writer(eid, {"episode_id": eid})
            t = time.perf_counter()
            for k, n in enumerate(sizes):
                w.append({"type": "step", "step": k + 1, "message": {"role": "tool", "content": "x" * n}})
            w.close()
            return time.perf_counter() - t

    rates: dict[tuple[int, int], float] = {}
    rng = random.Random(0)
    with tempfile.TemporaryDirectory(dir=os.environ.get("IMPASSE_BENCH_DIR")) as tmp:
        for w in writers:
            servers = [ray.remote(num_cpus=0, max_concurrency=64)(TrajectoryServer).options(scheduling_strategy=here)
                       .remote(str(Path(tmp) / f"w{w}")) for _ in range(w)]
            ray.get([s.instances.remote() for s in servers])
            for k in clients:
                if w > 1 and k < 8:
                    continue  # several writers matter only with many episodes
                eps = [Episode.remote() for _ in range(k)]
                ray.get([e.__ray_ready__.remote() for e in eps])
                n = max(30, events // k)
                t = time.perf_counter()
                ray.get([e.play.remote(servers, f"w{w}-k{k}-{j}", rng.choices(sizes, k=n)) for j, e in enumerate(eps)])
                rates[(w, k)] = k * n / (time.perf_counter() - t)
                print(f"  {w} writer(s), {k:>3} episodes at once: {rates[(w, k)]:7.0f} events/s", flush=True)
                for e in eps:
                    ray.kill(e)
            for s in servers:
                ray.kill(s)
    ray.shutdown()
    return rates


# ------------------------------------------------------------------------------ 2. end to end


def _plan(task: str, jobs: int, executor: str, address: str | None):
    from impasse.run import RunConfig

    return RunConfig(tasks=[task], conditions="clean,read_only_source,text_file_busy,test_killed", interfaces=["tool"],
                     agents=["oracle", "escalator"], jobs=jobs, executor=executor,
                     executor_options={"address": address} if address else {})


def end_to_end(task: str, slots: int, address: str, root: Path) -> dict[str, Any]:
    from impasse.run import create_run, execute
    from impasse.store.rundir import RunDir

    out: dict[str, Any] = {}
    for executor in ("local", "ray"):
        cfg = _plan(task, slots, executor, address if executor == "ray" else None)
        rd = RunDir(root / executor)
        specs = create_run(rd, cfg)
        t = time.perf_counter()
        res = execute(rd, cfg, specs).results
        took = time.perf_counter() - t
        bad = [r for r in res if r["ending"] == "harness_error"]
        if bad:
            raise SystemExit(f"{executor}: harness error: {bad[0].get('error')}")
        out[executor] = {"wall": took, "episodes": len(specs), "run": rd.path}
        print(f"  {executor:>5}: {len(specs)} episodes in {took:.1f} s on {slots} slots: "
              f"{len(specs) / took:.3f} episodes/s", flush=True)
    return out


def trajectory_facts(run_dir: Path) -> dict[str, list[float]]:
    """Event sizes (bytes per line), per-step command times and steps per episode of a run."""
    sizes, durations, lengths = [], [], []
    for p in sorted((run_dir / "episodes").glob("*.jsonl")):
        steps = 0
        for line in p.read_text().splitlines():
            sizes.append(len(line.encode()))
            if '"type": "step"' in line[:40]:
                steps += 1
                durations.append(float(json.loads(line).get("duration_s") or 0.0))
        lengths.append(steps)
    return {"sizes": sizes, "durations": durations, "lengths": lengths}


# ------------------------------------------------------------------------------ 3. the simulation


@dataclass(frozen=True)
class Costs:
    """Everything the simulation assumes, each measured here or stated."""

    service_s: float      # one writer's time per event at saturation (part 1)
    round_trip_s: float   # one event's round trip with no queue (part 1, one client)
    fixed_s: float        # per episode: sandbox, grading, teardown, dispatch (part 2)
    durations: tuple[float, ...]  # per-step command times (part 2 or --from)
    model_median_s: float  # per model call (assumed: lognormal)
    model_sigma: float
    lengths: tuple[int, ...] | None  # measured steps per episode, or None for the paper's shape


def draw_length(rng: random.Random, c: Costs) -> int:
    if c.lengths:
        return max(1, rng.choice(c.lengths))
    if rng.random() < PAPER_LENGTHS["limit_share"]:
        return PAPER_LENGTHS["limit"]
    rest = (PAPER_LENGTHS["mean_steps"] - PAPER_LENGTHS["limit_share"] * PAPER_LENGTHS["limit"]) / (
        1 - PAPER_LENGTHS["limit_share"])
    return min(PAPER_LENGTHS["limit"] - 1, max(3, round(rng.expovariate(1 / rest))))


def episodes(n: int, c: Costs, seed: int = 0) -> list[list[float]]:
    """Each episode as its think/act times: [fixed, model_1, command_1, model_2, ...]."""
    rng = random.Random(seed)
    mu = math.log(c.model_median_s)
    out = []
    for _ in range(n):
        steps = draw_length(rng, c)
        times = [c.fixed_s]
        for _ in range(steps):
            times += [rng.lognormvariate(mu, c.model_sigma), rng.choice(c.durations)]
        out.append(times)
    return out


def simulate(work: list[list[float]], slots: int, writers: int, c: Costs, seed: int = 0) -> dict[str, float]:
    """Makespan of ``work`` on ``slots`` slots with ``writers`` FIFO writers (discrete events).

    An episode writes its start events, waits its fixed cost, then alternates: the model's time,
    one event (its message), the command's time, one event (the step); its last event is its
    end events. Each event queues at its episode's writer (episodes spread evenly over writers,
    as the executor's hash of the id does), holds it for the service time, and the episode goes
    on one round trip after the writer took it. With no queue an event costs the round trip."""
    rng = random.Random(seed)
    writer_of = [rng.randrange(writers) for _ in work]
    free = [0.0] * writers
    heap: list[tuple[float, int, int, int]] = []  # (time, slot, episode, phase)
    nxt, waits, end = 0, [], 0.0
    for s in range(min(slots, len(work))):
        heapq.heappush(heap, (0.0, s, nxt, 0))
        nxt += 1
    while heap:
        t, s, e, phase = heapq.heappop(heap)
        times, w = work[e], writer_of[e]
        last = phase == len(times)
        n_events = EVENTS_AROUND["start"] if phase == 0 else EVENTS_AROUND["end"] if last else 1
        start = max(t, free[w])
        free[w] = start + n_events * c.service_s
        waits.append(start - t)
        t = start + n_events * c.round_trip_s
        if last:  # the slot takes the next episode
            end = max(end, t)
            if nxt < len(work):
                heapq.heappush(heap, (t, s, nxt, 0))
                nxt += 1
            continue
        heapq.heappush(heap, (t + times[phase], s, e, phase + 1))
    events = sum(len(x) - 1 + EVENTS_AROUND["start"] + EVENTS_AROUND["end"] for x in work)
    ideal = (sum(sum(x) for x in work) + events * c.round_trip_s) / slots
    waits.sort()
    return {"wall": end, "ideal": ideal, "efficiency": ideal / end if end else 0.0,
            "wait_p99": waits[int(0.99 * (len(waits) - 1))] if waits else 0.0,
            "writer_busy": events * c.service_s / writers / end if end else 0.0}


def print_simulation(c: Costs, nodes: list[int], slots_per_node: int, writers: list[int]) -> None:
    n = math.prod(SWEEP.values())
    work = episodes(n, c)
    steps = [(len(x) - 1) // 2 for x in work]
    print(f"\n3. simulated sweep: {n:,} episodes ({' x '.join(f'{v} {k}' for k, v in SWEEP.items())}), "
          f"{slots_per_node} slots per node")
    print("   assumptions:")
    print(f"     steps per episode: {'measured (--lengths-from-run)' if c.lengths else 'the paper' + chr(39) + 's shape'}"
          f" -> mean {statistics.mean(steps):.1f}, {sum(s == PAPER_LENGTHS['limit'] for s in steps) / n:.0%} at the "
          f"{PAPER_LENGTHS['limit']}-step limit")
    print(f"     model call: lognormal, median {c.model_median_s:g} s, sigma {c.model_sigma:g} (assumed; --model-latency)")
    print(f"     command per step: measured, median {statistics.median(c.durations):.3f} s, "
          f"mean {statistics.mean(c.durations):.3f} s ({len(c.durations)} samples)")
    print(f"     per episode fixed (sandbox, grade, teardown, Ray dispatch): measured {c.fixed_s:.2f} s")
    print(f"     writer: measured {c.service_s * 1000:.2f} ms per event at saturation, "
          f"round trip {c.round_trip_s * 1000:.2f} ms; events: {EVENTS_AROUND}")
    print("     one queue, episodes in random order, every node the same; no node failures, no endpoint limits")
    print("   efficiency = ideal / wall; 'no queue' = the wall time if no event ever waited for its writer (what is "
          "left is the tail: the last episodes running alone)")
    print(f"\n   {'nodes':>5} {'slots':>6} {'writers':>7} {'wall':>9} {'no queue':>9} {'ideal':>9} {'efficiency':>10} "
          f"{'writer busy':>11} {'p99 wait':>9}")
    for k in nodes:
        free = simulate(work, k * slots_per_node, 1, Costs(**{**c.__dict__, "service_s": 0.0}))
        for w in writers:
            r = simulate(work, k * slots_per_node, w, c)
            print(f"   {k:>5} {k * slots_per_node:>6} {w:>7} {r['wall'] / 3600:8.2f}h {free['wall'] / 3600:8.2f}h "
                  f"{r['ideal'] / 3600:8.2f}h {r['efficiency']:10.3f} {r['writer_busy']:10.0%} "
                  f"{r['wait_p99'] * 1000:7.1f}ms", flush=True)


# ------------------------------------------------------------------------------ main


def _first_task() -> str:
    from impasse.tasks.build import all_instances

    task = next(iter(all_instances()), None)
    if task is None:
        raise SystemExit("no built task: run `impasse tasks build glom` first")
    return task.instance_id


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=2, help="worker nodes of the local cluster (separate raylets)")
    ap.add_argument("--events", type=int, default=3000, help="events per writer measurement")
    ap.add_argument("--from", dest="from_run", type=Path, help="a finished run: event sizes and command times")
    ap.add_argument("--lengths-from-run", action="store_true", help="also its steps per episode")
    ap.add_argument("--model-latency", type=float, default=3.0, help="median seconds per model call (assumed)")
    ap.add_argument("--slots-per-node", type=int, default=64,
                    help="e.g. a 32-core, 128 GiB node at 0.5 CPU and 2 GiB per episode")
    ap.add_argument("--sim-writers", default="1,4", help="writers to simulate")
    ap.add_argument("--skip-e2e", action="store_true", help="no part 2 (needs --from for command times)")
    a = ap.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, connect=False,
                      head_node_args={"num_cpus": 0, "include_dashboard": False})
    for _ in range(a.nodes):
        cluster.add_node(num_cpus=1, memory=3 * 2**30, resources={"bench": 1000})
    cluster.wait_for_nodes()
    try:
        facts = trajectory_facts(a.from_run) if a.from_run else None
        sizes = facts["sizes"] if facts else [300, 600, 1500, 4000]
        print(f"1. writers: a head and {a.nodes} worker nodes; event sizes: median "
              f"{statistics.median(sizes):.0f} B ({'from ' + str(a.from_run) if facts else 'a fixed mix'})")
        rates = measure_writers(cluster.address, sizes, [1, 8, 32, 64], [1, 2, 4], a.events)
        e2e = None
        if not a.skip_e2e:
            print(f"\n2. end to end: the same plan on the Ray executor ({a.nodes} nodes, 1 slot each) "
                  f"and on the local pool ({a.nodes} slots)")
            with tempfile.TemporaryDirectory(dir=os.environ.get("IMPASSE_BENCH_DIR")) as tmp:
                e2e = end_to_end(_first_task(), a.nodes, cluster.address, Path(tmp))
                run_facts = trajectory_facts(e2e["local"]["run"])
        else:
            run_facts = None
        if facts is None and run_facts is None:
            raise SystemExit("--skip-e2e needs --from RUN_DIR (command times)")
        src = facts or run_facts
        single = max(r for (w, _k), r in rates.items() if w == 1)
        fixed = 0.0
        if e2e is not None:
            per_slot = {k: v["wall"] * a.nodes / v["episodes"] for k, v in e2e.items()}
            steps_time = sum(run_facts["durations"]) / e2e["local"]["episodes"]
            fixed = max(0.0, per_slot["ray"] - steps_time)
            print(f"     per episode: {per_slot['local']:.2f} s (local) vs {per_slot['ray']:.2f} s (ray) "
                  f"per slot; commands {steps_time:.2f} s -> fixed cost on Ray {fixed:.2f} s")
        costs = Costs(service_s=1 / single, round_trip_s=1 / rates[(1, 1)], fixed_s=fixed,
                      durations=tuple(src["durations"]) or (0.1,), model_median_s=a.model_latency, model_sigma=0.6,
                      lengths=tuple(src["lengths"]) if a.lengths_from_run and facts else None)
        print_simulation(costs, [1, 4, 16, 64], a.slots_per_node, [int(x) for x in a.sim_writers.split(",")])
    finally:
        import ray

        ray.shutdown()  # the executor's connection to the cluster, before the cluster goes
        cluster.shutdown()


if __name__ == "__main__":
    main()
