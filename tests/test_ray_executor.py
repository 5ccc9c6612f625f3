"""The Ray executor on a real local Ray cluster (a head and worker nodes, each its own raylet):
SIGKILL a worker node mid-run, then the driver, resume; every planned episode is there exactly
once and every event recorded before a kill is still there, unchanged."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from recording import recorded

pytestmark = pytest.mark.slow

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


def test_a_node_build_stands_in_for_the_pinned_one_only_with_the_same_installed_files(glom_task, tmp_path,
                                                                                       monkeypatch):
    from impasse.run.ray import ensure_image, pinned_facts
    from impasse.tasks.image import load_image

    shared = Path(os.environ["IMPASSE_CACHE"])
    pinned = load_image(glom_task.image)
    key = glom_task.image.partition("@")[0]
    monkeypatch.setenv("IMPASSE_CACHE", str(tmp_path / "node-cache"))
    # The node's own current build of the package (here: a copy of the shared one).
    ensure_image(key, glom_task.package, glom_task.package_version, "default", str(shared))
    absent = f"{key}@{'0' * 16}"  # a pinned build this node has never seen
    facts = pinned_facts(pinned)
    other = {**facts, "freeze": [*facts["freeze"], "boltons==0.0.1"]}
    with pytest.raises(FileNotFoundError, match="different build"):
        ensure_image(absent, glom_task.package, glom_task.package_version, "default", None, other)
    assert ensure_image(absent, glom_task.package, glom_task.package_version, "default", None, facts) == pinned.ref


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
