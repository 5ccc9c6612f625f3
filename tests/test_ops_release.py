"""Frozen task releases: made here, moved elsewhere, exported and imported, verified and run;
one layer's content changes and the run refuses, naming the layer. In a private cache."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from test_ops_cache import private_cache  # noqa: F401 - fixture

pytestmark = pytest.mark.slow

IMPASSE = [sys.executable, "-m", "impasse.cli"]


def test_release_moved_verified_run_and_refused_after_a_change(glom_tasks, private_cache, tmp_path):  # noqa: F811
    env = {**os.environ, "IMPASSE_CACHE": str(private_cache)}

    def impasse(*args):
        return subprocess.run(IMPASSE + list(args), capture_output=True, text=True, env=env)

    task = glom_tasks[0]
    made = impasse("tasks", "release", "r1", "--tasks", task.instance_id, "--out", str(tmp_path / "r1"))
    assert made.returncode == 0, made.stderr[-2000:]
    doc = json.loads((tmp_path / "r1" / "release.json").read_text())
    assert doc["format"] == "impasse.release/1" and doc["instance_count"] == 1
    assert list(doc["images"]) == [task.image] and len(doc["layers"]) == 2  # the bug and its .fixed variant
    assert doc["builder"]["image_version"] and all(len(d) == 64 for d in doc["layers"].values())
    assert impasse("tasks", "release", "r1", "--tasks", task.instance_id, "--out", str(tmp_path / "r1")).returncode == 2

    moved = tmp_path / "elsewhere" / "r1"
    moved.parent.mkdir()
    shutil.move(tmp_path / "r1", moved)
    assert impasse("tasks", "release", "verify", str(moved)).returncode == 0
    run = impasse("run", "--release", str(moved), "--conditions", "clean", "--interfaces", "tool",
                  "--agent", "oracle", "--jobs", "1", "--out", str(tmp_path / "run1"))
    assert run.returncode == 0, run.stderr[-3000:]
    manifest = json.loads((tmp_path / "run1" / "manifest.json").read_text())
    assert manifest["config"]["release"]["name"] == "r1" and manifest["config"]["tasks"] == [task.instance_id]
    assert (tmp_path / "run1" / "instances.jsonl").read_bytes() == (moved / "instances.jsonl").read_bytes()

    # export / import: by name from the cache's stored releases
    archive = tmp_path / "r1.tar.gz"
    assert impasse("tasks", "release", "export", str(moved), str(archive)).returncode == 0
    imported = impasse("tasks", "release", "import", str(archive))
    assert imported.returncode == 0, imported.stderr
    assert impasse("tasks", "release", "verify", "r1").returncode == 0

    # one instance layer's content changes: the run refuses, naming it
    layer_name = next(n for n in doc["layers"] if ".fixed@" not in n)
    target = private_cache / "layers" / layer_name / "workspace" / "repo" / task.target_file
    target.write_text(target.read_text() + "\n# changed\n")
    refused = impasse("run", "--release", "r1", "--conditions", "clean", "--interfaces", "tool", "--agent", "oracle",
                      "--out", str(tmp_path / "run2"))
    assert refused.returncode == 2 and layer_name in refused.stderr and "refusing to run" in refused.stderr
    assert not (tmp_path / "run2").exists()
    assert layer_name in impasse("tasks", "release", "verify", str(moved)).stderr
