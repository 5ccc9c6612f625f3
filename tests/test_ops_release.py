"""Portable task releases, with two caches on this machine: a maker's (the glom task built) and
a receiver's that never ran ``tasks build``. The archive carries instances, task images and
instance layers; import checks every digest before installing anything (a refused import leaves
the receiver byte for byte as it was); a run takes tasks and layers from the release alone and
refuses a layer whose content differs, naming it; re-importing a good archive replaces it; verify
never builds; a rebuild in a third cache has the release's digests."""

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest
from test_cache_runs import copy_task_cache

pytestmark = pytest.mark.slow

IMPASSE = [sys.executable, "-m", "impasse.cli"]
ORACLE = ["--conditions", "clean", "--interfaces", "tool", "--agent", "oracle", "--jobs", "1"]


def impasse(cache, *args):
    return subprocess.run(IMPASSE + [str(a) for a in args], capture_output=True, text=True,
                          env={**os.environ, "IMPASSE_CACHE": str(cache)})


def snapshot(root: Path) -> dict:
    """Every entry below ``root``: type, mode, owner, size, mtime and content digest."""
    if not root.exists():
        return {}
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        body = (os.readlink(p) if p.is_symlink() else hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file()
                else "")
        out[str(p.relative_to(root))] = (st.st_mode, st.st_uid, st.st_gid, st.st_size, st.st_mtime_ns, body)
    return out


@pytest.fixture(scope="module")
def made(glom_tasks, tmp_path_factory):
    """The maker's cache (a copy of the test cache's glom image and tasks), release r1 of one
    task stored in it, and its exported archive. In memory where it can be: the caches here
    unpack and remove thousands of files, which a busy disk makes slow."""
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(prefix="impasse-release-", dir=shm if os.access(shm, os.W_OK) else None))
    maker = copy_task_cache(glom_tasks, root / "maker")
    task = glom_tasks[0]
    r = impasse(maker, "tasks", "release", "r1", "--tasks", task.instance_id)
    assert r.returncode == 0, r.stderr[-2000:]
    archive = root / "r1.tar.gz"
    r = impasse(maker, "tasks", "release", "export", "r1", archive)
    assert r.returncode == 0, r.stderr[-2000:]
    published = hashlib.sha256((maker / "releases" / "r1" / "release.json").read_bytes()).hexdigest()
    assert f"release.json sha256 {published}" in r.stdout
    doc = json.loads((maker / "releases" / "r1" / "release.json").read_text())
    yield {"root": root, "maker": maker, "archive": archive, "doc": doc, "task": task, "base": maker / "base"}
    shutil.rmtree(root, ignore_errors=True)


def receiver(made, name):
    """A cache that never built a task: only the sandbox's base root filesystem (hard links)."""
    cache = made["root"] / name
    cache.mkdir()
    subprocess.run(["cp", "-al", str(made["base"]), str(cache / "base")], check=True)
    return cache


def test_the_archive_is_self_contained_and_a_cache_that_never_built_runs_it(made):
    doc, task = made["doc"], made["task"]
    assert doc["format"] == "impasse.release/2" and doc["instance_count"] == 1
    assert list(doc["images"]) == list(doc["image_meta"]) == [task.image] and len(doc["layers"]) == 2
    with tarfile.open(made["archive"]) as tf:
        tops = {m.name.split("/")[0] for m in tf.getmembers()}
        names = set(tf.getnames())
    key, _, build = task.image.partition("@")
    assert tops == {"r1", "images", "layers"}
    assert f"images/{key}/{build}/image.json" in names and all(f"layers/{n}" in names for n in doc["layers"])

    cache = receiver(made, "fresh")
    r = impasse(cache, "tasks", "release", "import", made["archive"])
    assert r.returncode == 0, r.stderr[-2000:]
    assert "3 layers installed" in r.stdout and not (cache / "tasks").exists()
    assert impasse(cache, "tasks", "release", "verify", "r1").returncode == 0
    assert "glom" not in impasse(cache, "tasks", "list").stdout  # nothing built here

    run_dir = made["root"] / "run-fresh"
    run = impasse(cache, "run", "--release", "r1", *ORACLE, "--out", run_dir)
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert [(s["instance_id"], s["final_ending"], s["resolved"]) for s in summary] == [
        (task.instance_id, "completed", True)]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["config"]["release"]["name"] == "r1" and manifest["config"]["tasks"] == [task.instance_id]
    assert (run_dir / "instances.jsonl").read_bytes() == (cache / "releases" / "r1" / "instances.jsonl").read_bytes()
    assert not (cache / "tasks").exists()  # the run took its tasks from the release, and built nothing


def _tampered(made, name, edit, source=None):
    """A copy of the archive (uncompressed: import reads any tar) in which each regular file's
    bytes go through ``edit(member_name, data) -> data``; streamed, never unpacked."""
    out = made["root"] / f"{name}.tar"
    with tarfile.open(source or made["archive"]) as src, tarfile.open(out, "w") as dst:
        for m in src:
            if not m.isfile():
                dst.addfile(m)
                continue
            data = edit(m.name, src.extractfile(m).read())
            m.size = len(data)
            dst.addfile(m, io.BytesIO(data))
    return out


def _only(member, change):
    """An edit that changes the member named ``member`` and nothing else."""
    return lambda name, data: change(data) if name == member else data


def test_a_tampered_archive_is_refused_and_leaves_the_cache_byte_identical(made):
    doc, task = made["doc"], made["task"]
    bug_layer = next(n for n in doc["layers"] if ".fixed@" not in n)
    key, _, build = task.image.partition("@")

    layer_file = f"layers/{bug_layer}/workspace/repo/{task.target_file}"
    with tarfile.open(made["archive"]) as tf:
        site_file = next(n for n in tf.getnames() if n.startswith(f"images/{key}/{build}/layer/")
                         and "/site-packages/" in n and n.endswith(".py"))
    edit_instance_layer = _only(layer_file, lambda b: b.replace(b"return", b"return  ", 1))
    edit_image = _only(site_file, lambda b: b + b"\n")
    edit_image_json = _only(f"images/{key}/{build}/image.json", lambda b: b.replace(b'"PASSED"', b'"FAILED"', 1))

    installed = receiver(made, "holder")
    assert impasse(installed, "tasks", "release", "import", made["archive"]).returncode == 0
    for name, change, named in (("layer", edit_instance_layer, bug_layer), ("image", edit_image, task.image),
                                ("meta", edit_image_json, f"{task.image} (image.json)")):
        bad = _tampered(made, name, change)
        empty = made["root"] / f"never-{name}"  # not even created by a refused import
        for cache in (installed, empty) if name == "layer" else (installed,):
            before = snapshot(cache)
            r = impasse(cache, "tasks", "release", "import", bad)
            assert r.returncode == 2 and "nothing was installed" in r.stderr and named in r.stderr, r.stderr
            assert "Traceback" not in r.stderr
            assert snapshot(cache) == before
        assert not empty.exists()
        bad.unlink()

    # rewritten whole, its release.json made to agree: consistent, but not the release published
    def consistent(name, data):
        """The changed layer's digest written into release.json (as a forger would)."""
        if name != "r1/release.json":
            return data
        from impasse.tasks.digest import tree_digest

        unpacked = made["root"] / "forged-layer"
        with tarfile.open(changed) as tf:
            tf.extractall(unpacked, members=[m for m in tf if m.name.startswith(f"layers/{bug_layer}/")],
                          filter=lambda m, p: m, numeric_owner=True)
        doc = json.loads(data)
        doc["layers"][bug_layer] = tree_digest(unpacked / "layers" / bug_layer)
        return (json.dumps(doc, indent=1) + "\n").encode()

    published = hashlib.sha256((made["maker"] / "releases" / "r1" / "release.json").read_bytes()).hexdigest()
    changed = _tampered(made, "changed", edit_instance_layer)
    forged = _tampered(made, "forged", consistent, source=changed)
    empty = made["root"] / "never-forged"
    r = impasse(empty, "tasks", "release", "import", forged, "--sha256", published[:16])
    assert r.returncode == 2 and "not the release you were given" in r.stderr and not empty.exists(), r.stderr
    r = impasse(empty, "tasks", "release", "import", made["archive"], "--sha256", published)
    assert r.returncode == 0, r.stderr  # the published one is
    shutil.rmtree(empty)

    # a member that would land outside the cache: refused, nothing written anywhere
    evil = made["root"] / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tf:
        info = tarfile.TarInfo("../escaped.txt")
        info.size = 3
        tf.addfile(info, io.BytesIO(b"bad"))
    before = snapshot(installed)
    r = impasse(installed, "tasks", "release", "import", evil)
    assert r.returncode == 2 and "not an impasse release archive" in r.stderr, r.stderr
    assert snapshot(installed) == before and not (installed.parent / "escaped.txt").exists()


def test_a_wrong_installed_layer_is_refused_by_name_and_a_good_archive_replaces_it(made):
    doc, task = made["doc"], made["task"]
    cache = receiver(made, "damaged")
    assert impasse(cache, "tasks", "release", "import", made["archive"]).returncode == 0
    key, _, build = task.image.partition("@")
    bug_layer = next(n for n in doc["layers"] if ".fixed@" not in n)
    target = cache / "layers" / bug_layer / "workspace" / "repo" / task.target_file
    target.write_text(target.read_text() + "\n# poisoned\n")
    site = next((cache / "images" / key / build / "layer" / "workspace" / ".venv" / "lib").glob("python*"))
    (site / "site-packages" / "poison.pth").write_text("import os\n")

    for run_name in ("refused-1", "refused-2"):
        r = impasse(cache, "run", "--release", "r1", *ORACLE, "--out", made["root"] / run_name)
        assert r.returncode == 2 and "refusing to run" in r.stderr, r.stderr[-2000:]
        assert bug_layer in r.stderr and task.image in r.stderr and "Traceback" not in r.stderr
        assert not (made["root"] / run_name).exists()
    v = impasse(cache, "tasks", "release", "verify", "r1")
    assert v.returncode == 1 and bug_layer in v.stderr and task.image in v.stderr

    again = impasse(cache, "tasks", "release", "import", made["archive"])
    assert again.returncode == 0 and "2 replaced" in again.stdout and "1 already here" in again.stdout, again.stdout
    assert "# poisoned" not in target.read_text() and not (site / "site-packages" / "poison.pth").exists()
    assert impasse(cache, "tasks", "release", "verify", "r1").returncode == 0
    run = impasse(cache, "run", "--release", "r1", *ORACLE, "--out", made["root"] / "repaired")
    assert run.returncode == 0, run.stderr[-3000:]


def test_verify_and_run_never_build_a_missing_layer(made):
    doc = made["doc"]
    cache = receiver(made, "missing")
    assert impasse(cache, "tasks", "release", "import", made["archive"]).returncode == 0
    fixed = next(n for n in doc["layers"] if ".fixed@" in n)
    shutil.rmtree(cache / "layers" / fixed)
    (cache / "layers" / f".{fixed}.complete").unlink()
    v = impasse(cache, "tasks", "release", "verify", "r1")
    assert v.returncode == 1 and fixed in v.stderr and "found nothing" in v.stderr
    r = impasse(cache, "run", "--release", "r1", *ORACLE, "--out", made["root"] / "no-layer")
    assert r.returncode == 2 and fixed in r.stderr
    assert not (cache / "layers" / fixed).exists()  # neither built it back


def test_import_does_not_replace_a_layer_a_live_episode_holds(made, backend, monkeypatch):
    from impasse.sandbox.local import LocalBackend
    from impasse.tasks.episode import open_episode

    doc, task = made["doc"], made["task"]
    cache = receiver(made, "busy")
    assert impasse(cache, "tasks", "release", "import", made["archive"]).returncode == 0
    bug_layer = next(n for n in doc["layers"] if ".fixed@" not in n)
    target = cache / "layers" / bug_layer / "workspace" / "repo" / task.target_file
    target.write_text(target.read_text() + "\n# poisoned\n")
    monkeypatch.setenv("IMPASSE_CACHE", str(cache))
    seen = f"tail -n 1 /workspace/repo/{task.target_file}"
    with open_episode(LocalBackend(), task, "clean") as sb:  # a real episode holds the layer
        assert "# poisoned" in sb.exec(seen).stdout
        before = {k: v for k, v in snapshot(cache).items() if not k.startswith("episodes")}
        r = impasse(cache, "tasks", "release", "import", made["archive"])
        assert r.returncode == 2 and bug_layer in r.stderr and "live episode" in r.stderr, r.stderr
        assert {k: v for k, v in snapshot(cache).items() if not k.startswith("episodes")} == before
        assert "# poisoned" in sb.exec(seen).stdout  # undisturbed
    r = impasse(cache, "tasks", "release", "import", made["archive"])
    assert r.returncode == 0 and "1 replaced" in r.stdout
    assert "# poisoned" not in target.read_text()


def test_a_rebuild_from_pypi_has_the_release_digests_and_installs_nothing(made):
    """Builds are bit-reproducible: ``verify --rebuild`` builds the glom image and the task's
    instance layers again from PyPI in a scratch cache, and each tree is the release's to the
    byte (the digests decide); the receiver's cache is left exactly as it was."""
    cache = receiver(made, "rebuild")
    assert impasse(cache, "tasks", "release", "import", made["archive"]).returncode == 0
    before = snapshot(cache)
    r = impasse(cache, "tasks", "release", "verify", "r1", "--rebuild")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "rebuilt 1 task images and 2 instance layers from PyPI: every digest is the release's" in r.stdout
    after = {k: v for k, v in snapshot(cache).items() if not k.startswith("seccomp-")}  # the sandbox's filter,
    assert after == before  # compiled on its first use; nothing else changed, nothing was installed
