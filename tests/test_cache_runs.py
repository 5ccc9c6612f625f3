"""``impasse cache``: which episodes are really live (an owner holds the lease) and what they
wrote, and prune keeping everything a paused or interrupted run needs to go on, with real runs
against a scripted OpenAI-compatible endpoint over HTTP. Fast tests first: the lock table read
without taking a lock, and run states."""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from impasse import locks
from impasse.store import runs

IMPASSE = [sys.executable, "-m", "impasse.cli"]
PRICES = {"input": 100.0, "output": 1000.0}


def test_proc_locks_lines_are_read_by_device_and_inode():
    text = textwrap.dedent("""\
        1: FLOCK  ADVISORY  WRITE 4561 fe:00:2146644 0 EOF
        1: -> FLOCK  ADVISORY  WRITE 4562 fe:00:2146644 0 EOF
        2: POSIX  ADVISORY  WRITE 99 08:01:77 0 EOF
        3: FLOCK  ADVISORY  READ  0 103:0a:12 0 EOF
        """)
    assert locks.parse_proc_locks(text) == {(0xFE, 0, 2146644), (0x103, 0x0A, 12)}


HOLD = """
import fcntl, os, sys, time
for path, mode in zip(sys.argv[1::2], sys.argv[2::2]):
    fd = os.open(path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_SH if mode == "sh" else fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)
"""


def test_held_names_the_locks_another_process_holds_and_takes_none(tmp_path):
    files = {n: tmp_path / n for n in ("shared", "exclusive", "free")}
    for p in files.values():
        p.touch()
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(files["shared"]), "sh", str(files["exclusive"]), "ex"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert locks.held([*files.values(), tmp_path / "missing"]) == {files["shared"], files["exclusive"]}
        assert not (tmp_path / "missing").exists()
    finally:
        holder.kill()
        holder.wait()
    assert locks.held(files.values()) == set()  # a killed holder's locks are free at once


def test_run_states_from_the_directory_alone(tmp_path):
    assert runs.classify(["a", "b"], {"a", "b"}, {"a": "completed", "b": "escalated"}, True) == ("finished", "2 episodes")
    assert runs.classify(["a", "b"], {"a"}, {"a": "paused"}, True)[0] == "paused"
    assert runs.classify(["a", "b"], {"a", "b"}, {"a": "completed", "b": "harness_error"}, True)[0] == "resumable"
    assert runs.classify(["a", "b"], {"a"}, {"a": "completed"}, True)[0] == "resumable"  # b never ran
    assert runs.classify(["a"], {"a"}, {"a": "completed"}, False)[0] == "interrupted"  # resumed since
    assert runs.classify(["a"], {"a"}, None, True)[0] == "interrupted"

    run = tmp_path / "run"
    owner = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from pathlib import Path
        from impasse.store.rundir import RunDir
        with RunDir(Path({str(run)!r})).own():
            print("owned", flush=True)
            time.sleep(60)
        """)], stdout=subprocess.PIPE, text=True, env={**os.environ, "IMPASSE_CACHE": str(tmp_path / "cache")})
    try:
        assert owner.stdout.readline().strip() == "owned"
        st = runs.state_of(run)  # no manifest yet, but owned: live, never "gone"
        assert st.state == "live" and f"pid {owner.pid}" in st.detail
    finally:
        owner.kill()
        owner.wait()
    assert runs.state_of(run).state == "gone"
    registered = json.loads(next((tmp_path / "cache" / "runs").glob("*.json")).read_text())
    assert registered == {"path": str(run.resolve())}  # the owner registered it in its own cache


STAGE = """
import sys, time
from impasse.tasks.release import staging_area
with staging_area("import-") as d:
    (d / "unpacked").write_bytes(b"x" * 1000)
    print(d.name, flush=True)
    time.sleep(60)
"""


def test_prune_removes_a_killed_imports_staging_area_and_only_that(tmp_path, monkeypatch):
    from impasse.tasks.housekeeping import prune

    cache = tmp_path / "cache"
    env = {**os.environ, "IMPASSE_CACHE": str(cache)}
    killed = subprocess.Popen([sys.executable, "-c", STAGE], stdout=subprocess.PIPE, text=True, env=env)
    live = subprocess.Popen([sys.executable, "-c", STAGE], stdout=subprocess.PIPE, text=True, env=env)
    try:
        dead_name, live_name = killed.stdout.readline().strip(), live.stdout.readline().strip()
        killed.kill()
        killed.wait()
        monkeypatch.setenv("IMPASSE_CACHE", str(cache))
        assert prune()["stale_staging"] == [dead_name]
        assert sorted(p.name for p in (cache / "staging").iterdir()) == [live_name, f"{live_name}.lock"]
    finally:
        live.kill()
        live.wait()


# ----------------------------------------------------------------------------- real runs
def copy_task_cache(glom_tasks, dst: Path) -> Path:
    """A cache of its own at ``dst`` (copies of the test cache's glom image, tasks and base), so
    what a test prunes or releases never touches another process's cache."""
    src = Path(os.environ["IMPASSE_CACHE"])
    key, _, build = glom_tasks[0].image.partition("@")
    (dst / "images" / key).mkdir(parents=True)
    subprocess.run(["cp", "-a", str(src / "images" / key / build), str(dst / "images" / key / build)], check=True)
    (dst / "images" / key / "current").symlink_to(build)
    (dst / "tasks").mkdir()
    subprocess.run(["cp", "-a", str(src / "tasks" / key), str(dst / "tasks" / key)], check=True)
    subprocess.run(["cp", "-a", str(src / "base"), str(dst / "base")], check=True)
    return dst


def _supersede(cache: Path, image_ref: str) -> None:
    """As after the task set was rebuilt on other versions: this build is no longer the image's
    current one, and no built task names it (only the run's pinned instances do)."""
    key = image_ref.partition("@")[0]
    (cache / "images" / key / "current").unlink()
    shutil.rmtree(cache / "tasks" / key)


def _cli(env, *args, check=True):
    r = subprocess.run(IMPASSE + [str(a) for a in args], capture_output=True, text=True, env=env)
    if check:
        assert r.returncode == 0, r.stderr[-3000:]
    return r


def _images(env) -> dict:
    return {e["name"]: e for e in json.loads(_cli(env, "cache", "list", "--json").stdout) if e["kind"] == "image"}


@pytest.mark.slow
def test_prune_keeps_what_a_paused_run_needs_until_it_has_finished(glom_tasks, tmp_path):
    from test_model_http import ScriptedServer

    task = glom_tasks[0]
    cache = copy_task_cache(glom_tasks, tmp_path / "cache")
    env = {**os.environ, "IMPASSE_CACHE": str(cache), "IMPASSE_API_KEY": "test"}
    prices = tmp_path / "prices.yaml"
    prices.write_text(f"scripted: {json.dumps(PRICES)}\n")
    server = ScriptedServer([("bash", {"command": f"echo step{k}"}) for k in range(4)]
                            + [("task_complete", {"verified": False, "summary": "done"})])
    run_dir = tmp_path / "run"
    try:
        first = _cli(env, "run", "--model", "scripted", "--base-url", server.url, "--tasks", task.instance_id,
                     "--conditions", "clean", "--interfaces", "tool", "--jobs", "1", "--out", run_dir,
                     "--prices", prices, "--max-cost", "0.3", check=False)
        assert first.returncode == 3, first.stderr[-3000:]  # paused on the ceiling
        _supersede(cache, task.image)
        assert runs.state_of(run_dir).state == "paused"
        listed = _images(env)[task.image]
        assert listed["keep"] == f"paused run {run_dir.resolve()}"
        pruned = json.loads(_cli(env, "cache", "prune", "--json").stdout)
        assert task.image not in pruned["removed"] and f"{run_dir.resolve()} (paused)" in pruned["kept_runs"]
        assert (cache / "images" / task.image.replace("@", "/")).is_dir()

        second = _cli(env, "run", "--resume", run_dir, "--max-cost", "10")  # it can go on
        assert "completed" in second.stdout + second.stderr
    finally:
        server.close()
    assert runs.state_of(run_dir).state == "finished"
    pruned = json.loads(_cli(env, "cache", "prune", "--json").stdout)
    assert task.image in pruned["removed"] and not pruned["kept_runs"]  # finished: nothing keeps it now
    shutil.rmtree(run_dir)
    assert json.loads(_cli(env, "cache", "prune", "--json").stdout)["forgotten_runs"] == [str(run_dir.resolve())]


@pytest.mark.slow
def test_list_tells_live_from_dead_episodes_and_prune_keeps_an_interrupted_runs_needs(glom_tasks, tmp_path):
    from test_model_http import ScriptedServer

    task = glom_tasks[0]
    cache = copy_task_cache(glom_tasks, tmp_path / "cache")
    env = {**os.environ, "IMPASSE_CACHE": str(cache), "IMPASSE_API_KEY": "test"}
    write_and_wait = "head -c 3000000 /dev/urandom > /workspace/repo/blob.bin && sleep 12 && echo woke"
    server = ScriptedServer([("bash", {"command": write_and_wait}),
                             ("task_complete", {"verified": False, "summary": "done"})])
    run_dir = tmp_path / "run"
    try:
        proc = subprocess.Popen(IMPASSE + ["run", "--model", "scripted", "--base-url", server.url, "--tasks",
                                           task.instance_id, "--conditions", "clean", "--interfaces", "tool",
                                           "--jobs", "1", "--out", str(run_dir)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
        live, deadline = [], time.monotonic() + 60
        while not live and time.monotonic() < deadline and proc.poll() is None:
            listing = json.loads(_cli(env, "cache", "list", "--json").stdout)
            live = [e for e in listing if e["kind"] == "episode" and e["state"] == "live" and e["size"] >= 3_000_000]
        assert live, "never saw the episode live with its 3 MB written"
        assert [e["state"] for e in listing if e["kind"] == "run"] == ["live"]
        os.killpg(proc.pid, signal.SIGKILL)  # the run, its workers and their leases
        proc.wait()

        listing = json.loads(_cli(env, "cache", "list", "--json").stdout)
        episode = next(e for e in listing if e["kind"] == "episode" and e["name"] == live[0]["name"])
        assert episode["state"] == "dead" and not episode["in_use"] and not episode["keep"]
        assert [e["state"] for e in listing if e["kind"] == "run"] == ["interrupted"]
        _supersede(cache, task.image)
        pruned = json.loads(_cli(env, "cache", "prune", "--json").stdout)
        assert live[0]["name"] in pruned["stale_episodes"] and task.image not in pruned["removed"]
        assert f"{run_dir.resolve()} (interrupted)" in pruned["kept_runs"]
        assert not [p for p in (cache / "episodes").iterdir() if not p.name.endswith(".lock")]

        _cli(env, "run", "--resume", run_dir)  # it can go on
    finally:
        server.close()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert [s["final_ending"] for s in summary] == ["completed"]
