"""The Ray executor on a real local Ray cluster (a head and worker nodes, each its own raylet):
SIGKILL a worker node mid-run, then the driver, resume; every planned episode is there exactly
once and every event recorded before a kill is still there, unchanged."""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from recording import recorded

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]  # one Ray cluster per session

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[dev]')")
from ray.cluster_utils import Cluster  # noqa: E402

IMPASSE = [sys.executable, "-m", "impasse.cli"]
WORKER = {"num_cpus": 1, "memory": 3 * 2**30}


@pytest.fixture(scope="session")
def ray_cluster():
    """A head (where the driver and its writer actor live) and a worker node, 1 CPU each: two
    raylets, so episodes really run on another node than the one that writes the run."""
    cluster = Cluster(initialize_head=True, connect=False, head_node_args={**WORKER, "include_dashboard": False})
    workers = [cluster.add_node(**WORKER)]
    cluster.wait_for_nodes()
    yield cluster, workers
    cluster.shutdown()


def _steps(run_dir: Path) -> int:
    return sum(1 for lines in recorded(run_dir).values() for line in lines if '"type": "step"' in line)


def _wait(pred, timeout: float, proc: subprocess.Popen | None = None) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        if proc is not None and proc.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def _assert_kept(before: dict[str, list[str]], now: dict[str, list[str]]) -> None:
    for eid, lines in before.items():
        assert now[eid][: len(lines)] == lines, f"{eid}: recorded events were lost or rewritten"


def test_worker_and_driver_killed_then_resume(ray_cluster, glom_task, tmp_path):
    cluster, workers = ray_cluster
    run_dir = tmp_path / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    args = ["run", "--tasks", glom_task.instance_id, "--conditions", "clean,read_only_source", "--interfaces", "tool",
            "--agent", "oracle,escalator", "--executor", "ray", "--ray-address", cluster.address, "--out", str(run_dir)]
    driver = subprocess.Popen(IMPASSE + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                              start_new_session=True)
    try:
        assert _wait(lambda: _steps(run_dir) >= 1, 150, driver), "no step recorded: " + (
            driver.stderr.read().decode()[-2000:] if driver.poll() is not None else "timeout")
        # A worker node dies mid-episode: its raylet (and with it its workers) SIGKILLed.
        victim = workers[0]
        os.kill(victim.all_processes["raylet"][0].process.pid, signal.SIGKILL)
        before = recorded(run_dir)
        cluster.add_node(**WORKER)  # a replacement joins, as an autoscaler would do
        n = _steps(run_dir)
        _wait(lambda: _steps(run_dir) > n, 60, driver)
        assert driver.poll() is None, "the run ended before the driver could be killed: make episodes longer"
        os.killpg(driver.pid, signal.SIGKILL)  # the driver (and its writer actor with it)
        driver.wait()
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
    mid = recorded(run_dir)
    _assert_kept(before, mid)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    planned = {e["episode_id"] for e in manifest["episodes"]}
    assert len(planned) == 4
    unfinished = [eid for eid, lines in mid.items() if not lines or '"type": "final"' not in lines[-1]]
    assert unfinished, "nothing was interrupted: the kills tested nothing"

    done = subprocess.run(IMPASSE + ["run", "--resume", str(run_dir)], capture_output=True, text=True, env=env,
                          timeout=240)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    final = recorded(run_dir)
    _assert_kept(mid, final)
    assert set(final) == planned
    for eid, lines in final.items():
        events = [json.loads(line) for line in lines]
        types = [e["type"] for e in events]
        assert types.count("header") == 1 and types.count("final") == 1 and types[-1] == "final", eid
        assert types.count("grade") == 1, eid
        steps = [e["step"] for e in events if e["type"] == "step"]
        assert steps == list(range(1, len(steps) + 1)), f"{eid}: steps must be 1..n exactly once"
    for eid in unfinished:
        assert '"type": "resumed"' in "\n".join(final[eid]) or not mid[eid], f"{eid} was rerun, not resumed"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert sorted(r["episode_id"] for r in summary) == sorted(planned)
    assert not [r for r in summary if r["ending"] == "harness_error"]
    assert "run summary" in done.stdout  # the same table as the local pool prints


def test_a_node_without_the_image_copies_the_pinned_build_from_the_shared_cache(glom_task, tmp_path, monkeypatch):
    from impasse.run.ray import ensure_image
    from impasse.tasks.image import load_image

    shared = Path(os.environ["IMPASSE_CACHE"])
    want = load_image(glom_task.image)
    assert want is not None
    monkeypatch.setenv("IMPASSE_CACHE", str(tmp_path / "node-cache"))  # a fresh node: nothing built
    assert load_image(glom_task.image) is None
    ensure_image(glom_task.image, glom_task.package, glom_task.package_version, "default", str(shared))
    got = load_image(glom_task.image)
    assert got is not None and got.ref == want.ref and got.dir.is_relative_to(tmp_path)
    assert (got.layer / "workspace" / "repo").is_dir()


def test_a_fresh_node_builds_the_image_once_and_runs_its_episodes(ray_cluster, glom_task, tmp_path):
    """A worker node whose own cache is empty (no image, no sdist, no base): the first episode
    builds the task image there on demand, the second (running at the same time on the same node)
    waits on the build lock and reuses it; both episodes run to the end."""
    cluster, _ = ray_cluster
    node_cache = tmp_path / "fresh-node-cache"
    node_cache.mkdir()
    fresh = cluster.add_node(num_cpus=2, memory=5 * 2**30, resources={"fresh_node": 2},
                             env_vars={"IMPASSE_CACHE": str(node_cache)})
    # Wait for this node only: a node killed by another test may still count as registered.
    assert _wait(lambda: fresh.node_id in cluster.global_state._live_node_ids(), 60), "the fresh node did not join"
    run_dir = tmp_path / "run"
    try:
        done = subprocess.run(
            IMPASSE + ["run", "--tasks", glom_task.instance_id, "--conditions", "read_only_source", "--interfaces", "tool,monitor",
                       "--agent", "escalator", "--executor", "ray", "--ray-address", cluster.address,
                       "--executor-option", 'resources={"fresh_node": 1}', "--executor-option",
                       "memory_gb_per_episode=1", "--out", str(run_dir)],
            capture_output=True, text=True, timeout=900, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    finally:
        cluster.remove_node(fresh)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert len(summary) == 2 and {r["interface"] for r in summary} == {"tool", "monitor"}
    assert all(r["ending"] == "escalated" for r in summary), summary
    for lines in recorded(run_dir).values():
        assert '"type": "final"' in lines[-1] and sum('"type": "step"' in x for x in lines) >= 1

    key, _, pinned_build = glom_task.image.partition("@")
    builds = [p.name for p in (node_cache / "images" / key).iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")]
    assert len(builds) == 1, f"the node built the image {len(builds)} times: {builds}"
    # Both episodes ran on that node, on its build: its instance layer and the run's shadow are there.
    assert list((node_cache / "layers").glob(f"{glom_task.instance_id}@{builds[0]}")), "no episode ran on the node"
    if builds[0] != pinned_build:  # builds are not bit-reproducible: the node records what it ran instead
        (alias_file,) = (node_cache / "ray-runs").glob("*/image-aliases.json")
        assert json.loads(alias_file.read_text()) == {glom_task.image: f"{key}@{builds[0]}"}
        # ... and so does the run directory, once, with what was compared
        (record,) = [json.loads(x) for x in (run_dir / "stand-ins.jsonl").read_text().splitlines()]
        assert record["pinned"] == glom_task.image and record["stand_in"] == f"{key}@{builds[0]}"
        assert set(record["compared"]) == {"spec", "freeze", "files", "clean_tests", "python"}
    else:
        assert not (run_dir / "stand-ins.jsonl").exists()


def test_a_node_build_stands_in_for_the_pinned_one_only_when_every_fact_matches(glom_task, tmp_path, monkeypatch):
    """Package versions, file contents, clean-test results and the interpreter: one differing
    fact is a refusal naming it; all equal is a stand-in with a record of what was compared."""
    from impasse.run.ray import ensure_image, pinned_facts
    from impasse.tasks.image import load_image

    shared = Path(os.environ["IMPASSE_CACHE"])
    pinned = load_image(glom_task.image)
    key = glom_task.image.partition("@")[0]
    monkeypatch.setenv("IMPASSE_CACHE", str(tmp_path / "node-cache"))
    # The node's own current build of the package (here: a copy of the shared one).
    assert ensure_image(key, glom_task.package, glom_task.package_version, "default", str(shared)) == (key, None)
    absent = f"{key}@{'0' * 16}"  # a pinned build this node has never seen
    facts = pinned_facts(pinned)
    a_file = next(iter(facts["files"]))
    a_test = next(iter(facts["clean_tests"]))
    changed = {
        "freeze": {**facts, "freeze": [*facts["freeze"], "boltons==0.0.1"]},
        "files": {**facts, "files": {**facts["files"], a_file: "0" * 64}},
        "clean_tests": {**facts, "clean_tests": {**facts["clean_tests"], a_test: "FAILED"}},
        "python": {**facts, "python": {**facts["python"], "version": "3.11.0"}},
    }
    for fact, other in changed.items():
        with pytest.raises(FileNotFoundError, match=rf"different build \({fact}"):
            ensure_image(absent, glom_task.package, glom_task.package_version, "default", None, other)
    ref, record = ensure_image(absent, glom_task.package, glom_task.package_version, "default", None, facts)
    assert ref == pinned.ref and record["pinned"] == absent and record["stand_in"] == pinned.ref
    assert set(record["compared"]) == {"spec", "freeze", "files", "clean_tests", "python"}
    assert record["python"] == facts["python"]["version"] and record["files"] == len(facts["files"]) > 0


def test_the_ask_suite_runs_on_ray(ray_cluster, tmp_path):
    """Ray runs any suite: the ask suite's episodes (an SQL task, no task image) as Ray tasks, their
    trajectories streamed to the driver's writer, no harness error."""
    cluster, _ = ray_cluster
    run_dir = tmp_path / "run"
    done = subprocess.run(IMPASSE + ["run", "--suite", "ask", "--tasks", "fl01", "--interfaces", "ask_human",
                                     "--agent", "targeted-asker", "--executor", "ray", "--ray-address", cluster.address,
                                     "--out", str(run_dir)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert len(summary) == 3 and not [r for r in summary if r["ending"] in ("harness_error", "error")]
    report = subprocess.run(IMPASSE + ["report", str(run_dir), "--json", "-"], capture_output=True, text=True)
    assert report.returncode == 0, report.stderr[-2000:]
    assert json.loads(report.stdout)["format"].startswith("impasse.ask-report")


def test_ray_slots_book_into_the_drivers_ledger_under_its_ceiling(ray_cluster, tmp_path):
    """Episodes on both nodes (per-node run directories) reserve and book in the driver's one
    ledger: the run's ceiling holds across nodes and the report counts every call."""
    from test_model_http import ScriptedServer

    cluster, _ = ray_cluster
    server = ScriptedServer([("list_tables", {}), ("execute_query", {"query": "select 1"})])
    prices, model_cfg = tmp_path / "p.yaml", tmp_path / "m.yaml"
    prices.write_text("m1: {input: 10, output: 100}\n")
    model_cfg.write_text("max_tokens: 32\nmax_retries: 0\n")
    run_dir = tmp_path / "run"
    try:
        done = subprocess.run(IMPASSE + ["run", "--suite", "ask", "--tasks", "fl01", "--interfaces", "baseline",
                                         "--agent", "openai:m1", "--base-url", server.url, "--model-config",
                                         str(model_cfg), "--prices", str(prices), "--max-cost", "0.08",
                                         "--step-limit", "4", "--executor", "ray", "--ray-address", cluster.address,
                                         "--out", str(run_dir)], capture_output=True, text=True, timeout=600)
    finally:
        server.close()
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr[-2000:]
    ledger = [json.loads(line) for line in (run_dir / "usage.jsonl").read_text().splitlines()]
    assert len(ledger) == len(server.requests) - 1  # every call but the preflight, booked on the driver's side
    assert 0.08 - 0.0134 < sum(r["cost_usd"] for r in ledger) <= 0.08


def _active(run_dir: Path) -> int:
    """Episodes between their header and their final line right now."""
    n = 0
    for p in (run_dir / "episodes").glob("*.jsonl"):
        try:
            text = p.read_text()
        except FileNotFoundError:
            continue
        n += bool(text) and '"type": "final"' not in text
    return n


def test_a_node_never_runs_more_episodes_than_its_slots(ray_cluster, glom_task, tmp_path):
    """A node with 2 CPUs and 1 CPU per episode holds 2 slots. Every recorded event makes the
    episode wait on the writer; a Ray *task* lends its CPU out while it waits, so a task per
    episode ran 4 at once here. Sampled every 20 ms, never more than 2 are between header and end."""
    cluster, _ = ray_cluster
    node = cluster.add_node(num_cpus=2, memory=8 * 2**30, resources={"slot_test": 100})
    assert _wait(lambda: node.node_id in cluster.global_state._live_node_ids(), 60), "the node did not join"
    run_dir = tmp_path / "run"
    peak, stop = [0], [False]

    def sample() -> None:
        while not stop[0]:
            peak[0] = max(peak[0], _active(run_dir) if (run_dir / "episodes").is_dir() else 0)
            time.sleep(0.02)

    import threading

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    try:
        done = subprocess.run(
            IMPASSE + ["run", "--tasks", glom_task.instance_id, "--conditions", "clean,read_only_source,text_file_busy",
                       "--interfaces", "tool", "--agent", "oracle,persistent", "--executor", "ray",
                       "--ray-address", cluster.address, "--executor-option", 'resources={"slot_test": 1}',
                       "--executor-option", "memory_gb_per_episode=1", "--out", str(run_dir)],
            capture_output=True, text=True, timeout=900)
    finally:
        stop[0] = True
        watcher.join()
        cluster.remove_node(node)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert len(json.loads((run_dir / "summary.json").read_text())) == 6
    assert 1 <= peak[0] <= 2, f"{peak[0]} episodes ran at once on a node with 2 slots"
    assert peak[0] == 2, "the two slots never ran together: the test saw no parallelism to bound"


def _ray_procs(marker: str) -> list[int]:
    """PIDs of the processes one `ray start --temp-dir MARKER` started (never anyone else's)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if marker in (d / "cmdline").read_bytes().decode(errors="replace"):
                    out.append(int(d.name))
            except OSError:
                continue
    return out


@pytest.fixture(scope="module")
def token_cluster(tmp_path_factory):
    """A head and a worker node started the documented way (`ray start`), with token
    authentication: the head and the worker read the token from RAY_AUTH_TOKEN_PATH."""
    import secrets
    import socket

    token = tmp_path_factory.mktemp("ray-auth") / "ray-token"
    token.write_text(secrets.token_hex(32))
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token), "RAY_USAGE_STATS_ENABLED": "0"}
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    with socket.socket() as s:
        s.bind(("", 0))
        port = s.getsockname()[1]
    marker = f"/tmp/impasse-ray-{secrets.token_hex(4)}"
    ray_bin = str(Path(sys.executable).with_name("ray"))
    try:
        head = subprocess.run([ray_bin, "start", "--head", f"--port={port}", "--num-cpus=0", "--include-dashboard=false",
                               f"--temp-dir={marker}-h"], env={**clean, **auth}, capture_output=True, text=True,
                              timeout=180)
        assert head.returncode == 0, head.stderr[-2000:]
        address = f"{socket.gethostbyname(socket.gethostname())}:{port}"
        yield {"address": address, "auth": auth, "clean": clean, "ray": ray_bin, "marker": marker}
    finally:
        for pid in _ray_procs(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for d in Path("/tmp").glob(Path(marker).name + "-*"):
            shutil.rmtree(d, ignore_errors=True)


def test_without_an_address_the_run_starts_its_own_cluster(token_cluster, glom_task, tmp_path):
    """(Before a node joins the cluster below.) RAY_ADDRESS names a cluster with no CPU at all (and the shell has its token): joining it
    would wait forever. Without --ray-address the run starts a private cluster and finishes."""
    c = token_cluster
    env = {**c["clean"], **c["auth"], "RAY_ADDRESS": c["address"]}
    done = subprocess.run(IMPASSE + ["run", "--tasks", glom_task.instance_id, "--conditions", "read_only_source",
                                     "--interfaces", "tool", "--agent", "escalator", "--executor", "ray", "--jobs", "1",
                                     "--out", str(tmp_path / "run")], env=env, capture_output=True, text=True,
                          timeout=400)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 in parallel (a private Ray cluster" in " ".join((done.stdout + done.stderr).split())
    (row,) = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert row["ending"] == "escalated"
    assert not Path.home().joinpath(".ray", "auth_token").exists(), "the private cluster's token leaked into ~/.ray"


def test_a_second_node_joins_with_the_token_and_runs_episodes(token_cluster, glom_task, tmp_path):
    c = token_cluster
    node_args = [c["ray"], "start", f"--address={c['address']}", "--num-cpus=1", "--memory=" + str(3 * 2**30)]
    refused = subprocess.run([*node_args, f"--temp-dir={c['marker']}-x"], env=c["clean"], capture_output=True,
                             text=True, timeout=180)
    assert refused.returncode != 0, "a node without the token joined a cluster with token authentication"
    joined = subprocess.run([*node_args, f"--temp-dir={c['marker']}-w"], env={**c["clean"], **c["auth"]},
                            capture_output=True, text=True, timeout=180)
    assert joined.returncode == 0, joined.stderr[-2000:]

    args = ["run", "--tasks", glom_task.instance_id, "--conditions", "read_only_source", "--interfaces", "tool",
            "--agent", "escalator", "--executor", "ray", "--ray-address", c["address"]]
    no_token = subprocess.run(IMPASSE + [*args, "--out", str(tmp_path / "refused")], env=c["clean"],
                              capture_output=True, text=True, timeout=300)
    assert no_token.returncode == 2 and "RAY_AUTH_TOKEN" in " ".join(no_token.stderr.split()), \
        no_token.stdout[-1500:] + no_token.stderr[-1500:]
    done = subprocess.run(IMPASSE + [*args, "--out", str(tmp_path / "run")], env={**c["clean"], **c["auth"]},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (row,) = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert row["ending"] == "escalated"  # the head has no CPUs: it ran on the node that joined
