"""``impasse cache prune`` while a run is going: live episodes keep their layers (shared locks),
removed instance layers are rebuilt by the next episode, and every episode ends as it did in the
same run without pruning. Runs in a private cache (hard links to the test cache's glom image),
so pruning never touches another process's layers."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

IMPASSE = [sys.executable, "-m", "impasse.cli"]


@pytest.fixture
def private_cache(glom_tasks, tmp_path):
    src = Path(os.environ["IMPASSE_CACHE"])
    dst = tmp_path / "cache"
    key, _, build = glom_tasks[0].image.partition("@")
    (dst / "images" / key).mkdir(parents=True)
    (dst / "tasks").mkdir()
    subprocess.run(["cp", "-al", str(src / "images" / key / build), str(dst / "images" / key / build)], check=True)
    (dst / "images" / key / "current").symlink_to(build)
    subprocess.run(["cp", "-a", str(src / "tasks" / key), str(dst / "tasks" / key)], check=True)
    subprocess.run(["cp", "-al", str(src / "base"), str(dst / "base")], check=True)
    return dst


def outcomes(run_dir):
    return {r["episode_id"]: (r["final_ending"], r["resolved"])
            for r in json.loads((run_dir / "summary.json").read_text())}


def test_prune_during_a_run_changes_no_outcome(glom_tasks, private_cache, tmp_path):
    env = {**os.environ, "IMPASSE_CACHE": str(private_cache)}
    args = ["run", "--tasks", ",".join(t.instance_id for t in glom_tasks), "--conditions", "clean",
            "--interfaces", "tool,monitor", "--agent", "oracle", "--jobs", "2"]
    plain = subprocess.run(IMPASSE + args + ["--out", str(tmp_path / "plain")], capture_output=True, text=True, env=env)
    assert plain.returncode == 0, plain.stderr[-3000:]
    layers = sorted(p.name for p in (private_cache / "layers").iterdir() if not p.name.startswith("."))
    assert layers  # the run built its instance layers

    run = subprocess.Popen(IMPASSE + args + ["--out", str(tmp_path / "pruned")], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, env=env)
    prunes = []
    while run.poll() is None:
        p = subprocess.run(IMPASSE + ["cache", "prune", "--json"], capture_output=True, text=True, env=env)
        assert p.returncode == 0, p.stderr
        prunes.append(json.loads(p.stdout))
        time.sleep(0.3)
    assert run.wait() == 0, run.stderr.read()[-3000:]
    assert any(p["removed"] for p in prunes), "prune never removed anything: the test proves nothing"
    assert any(p["in_use"] for p in prunes), "prune never met a live episode: the test proves nothing"
    assert outcomes(tmp_path / "pruned") == outcomes(tmp_path / "plain")
    assert any(resolved for _, resolved in outcomes(tmp_path / "plain").values())
    # the image (current) survives; nothing else is kept without a release
    listing = json.loads(subprocess.run(IMPASSE + ["cache", "list", "--json"], capture_output=True, text=True,
                                        env=env, check=True).stdout)
    assert [e["keep"] for e in listing if e["kind"] == "image"] == ["current"]
    final = json.loads(subprocess.run(IMPASSE + ["cache", "prune", "--json"], capture_output=True, text=True,
                                      env=env, check=True).stdout)
    assert not final["in_use"] and not [p for p in (private_cache / "layers").iterdir() if not p.name.startswith(".")
                                        and not p.name.endswith(".lock")]
