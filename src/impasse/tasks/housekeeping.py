"""What the cache holds and what may go: ``impasse cache list`` and ``impasse cache prune``.

Kept by prune: every layer a frozen release names (``<cache>/releases/*/release.json``), every
image build that is an image's ``current`` build or that a built task instance names, every
sdist, every layer a live episode holds (see :mod:`impasse.sandbox.uselock`), and everything a
registered run that is not provably finished needs to go on (paused, interrupted or resumable:
its pinned image builds, their instance layers, and its release's layers; a live run: the same
but its instance layers, see :func:`run_needs`; states in :mod:`impasse.store.runs`). Removed: instance layers nothing keeps (they are rebuilt on first
use), superseded image builds, the directories of episodes whose owner is gone, and the
registrations of runs whose directory is gone.

Several impasse processes share one cache, so a listing takes no lock (``impasse.locks`` reads
the kernel's table) and a removal happens only under the thing's own exclusive lock, stamp
first: nothing live is ever disturbed, and only what is provably dead goes.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from impasse import locks, paths
from impasse.sandbox import uselock
from impasse.store import runs


@dataclass
class Entry:
    kind: str
    """instance-layer, image, sdist, episode, run."""
    name: str
    path: str
    size: int
    keep: str
    """Why prune keeps it ('' = prunable)."""
    in_use: bool = False
    state: str = ""
    """Episodes: live or dead (by the lease lock); runs: their :mod:`impasse.store.runs` state."""

    def to_json(self) -> dict:
        return asdict(self)


def tree_size(root: Path) -> int:
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except FileNotFoundError:
                continue
    return total


def releases_dir() -> Path:
    return paths.cache_root() / "releases"


def _release_doc(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def release_refs() -> tuple[dict[str, str], dict[str, str]]:
    """(image ref -> release, instance layer name -> release) over every stored release."""
    images: dict[str, str] = {}
    layers: dict[str, str] = {}
    for meta in sorted(releases_dir().glob("*/release.json")):
        data = _release_doc(meta)
        images.update({ref: data.get("name", meta.parent.name) for ref in data.get("images", {})})
        layers.update({name: data.get("name", meta.parent.name) for name in data.get("layers", {})})
    return images, layers


def run_needs(st: runs.RunState) -> tuple[set[str], set[str]]:
    """(image refs, instance layer names) a run needs to go on: the image builds its pinned
    instances name and their instance layers, and every layer of the release it runs, wherever
    that release is stored. A live run's own instance layers are left out: it holds each one it
    mounts (a shared lock), and one removed between its episodes is rebuilt, to the same bytes,
    when it is next needed; a run that is not going on holds nothing, so everything is kept."""
    from impasse.tasks.release import layer_names

    images: set[str] = set()
    layers: set[str] = set()
    pinned = st.path / "instances.jsonl"
    for line in pinned.read_text().splitlines() if pinned.is_file() else []:
        try:
            row = json.loads(line)
            images.add(row["image"])
            if st.state != "live":
                layers.update(layer_names(row["instance_id"], row["image"]))
        except (ValueError, KeyError, TypeError):
            continue
    release = st.config.get("release") or {}
    if release.get("path"):
        doc = _release_doc(Path(release["path"]) / "release.json")
        images.update(doc.get("images", {}))
        layers.update(doc.get("layers", {}))
    return images, layers


def run_states() -> list[tuple[Path, runs.RunState]]:
    """(register entry, state) of every registered run."""
    return [(entry, runs.state_of(d)) for entry, d in runs.registered()]


def _kept_by_runs(states: list[runs.RunState]) -> tuple[dict[str, str], dict[str, str]]:
    images: dict[str, str] = {}
    layers: dict[str, str] = {}
    for st in states:
        if st.state not in runs.KEEPING:
            continue
        why = f"{st.state} run {st.path}"
        imgs, lays = run_needs(st)
        images.update(dict.fromkeys(imgs, why))
        layers.update(dict.fromkeys(lays, why))
    return images, layers


def _instance_images() -> set[str]:
    from impasse.tasks.build import all_instances

    return {i.image for i in all_instances()}


def _visible(d: Path) -> list[Path]:
    return sorted(p for p in d.iterdir() if not p.name.startswith(".")) if d.is_dir() else []


def _layer_entries(states: list[runs.RunState], sizes: bool) -> list[Entry]:
    rel_images, rel_layers = release_refs()
    run_images, run_layers = _kept_by_runs(states)
    named = _instance_images()
    out: list[Entry] = []
    for layer in _visible(paths.layers_dir()):
        keep = (f"release {rel_layers[layer.name]}" if layer.name in rel_layers else run_layers.get(layer.name, ""))
        out.append(Entry("instance-layer", layer.name, str(layer), tree_size(layer) if sizes else 0, keep))
    for key_dir in _visible(paths.images_dir()):
        current = os.readlink(key_dir / "current") if (key_dir / "current").is_symlink() else ""
        for build in _visible(key_dir):
            if build.name in ("current", "layer") or not (build / "layer").is_dir():
                continue  # the link, and builds of the pre-content-named layout
            ref = f"{key_dir.name}@{build.name}"
            keep = (f"release {rel_images[ref]}" if ref in rel_images else run_images.get(ref) or
                    ("current" if build.name == current else "named by built instances" if ref in named else ""))
            out.append(Entry("image", ref, str(build), tree_size(build) if sizes else 0, keep))
    lock = {e.path: uselock.lock_file(Path(e.path) if e.kind == "instance-layer" else Path(e.path) / "layer")
            for e in out}
    busy = locks.held(p for p in lock.values() if p is not None)
    for e in out:
        e.in_use = lock[e.path] in busy
    return out


def _episode_entries(sizes: bool) -> list[Entry]:
    """Episode directories; live exactly when a process holds the episode's lease."""
    root = paths.episodes_dir()
    eps = [p for p in _visible(root) if p.is_dir()]
    live = locks.held(ep.with_name(ep.name + ".lock") for ep in eps)
    out = []
    for ep in eps:
        lock = ep.with_name(ep.name + ".lock")
        if lock in live:
            pid = lock.read_text(errors="replace").strip() if lock.exists() else ""
            state, keep = "live", f"live episode (lease held{', pid ' + pid if pid.isdigit() else ''})"
        else:
            state, keep = "dead", ""
        # the episode's own writes: its tmpfs upper layer (root/ is the overlay of the whole image)
        out.append(Entry("episode", ep.name, str(ep), tree_size(ep / "disk") if sizes else 0, keep,
                         in_use=state == "live", state=state))
    return out


def entries(sizes: bool = True) -> list[Entry]:
    states = [st for _entry, st in run_states()]
    out = _layer_entries(states, sizes)
    for sdist in _visible(paths.sdists_dir()):
        out.append(Entry("sdist", sdist.name, str(sdist), sdist.stat().st_size, "sources of images"))
    out += _episode_entries(sizes)
    for st in states:
        out.append(Entry("run", str(st.path), str(st.path), 0, f"{st.state}: {st.detail}"
                         if st.state in runs.KEEPING else "", in_use=st.state == "live", state=st.state))
    return out


def _remove_layer(e: Entry, result: dict[str, list[str]]) -> None:
    layer = Path(e.path) if e.kind == "instance-layer" else Path(e.path) / "layer"
    fd = uselock.try_exclusive(uselock.lock_file(layer))
    if fd is None:
        result["in_use"].append(e.name)
        return
    try:
        stamp = uselock.stamp_of(layer)
        if stamp is not None:
            stamp.unlink(missing_ok=True)  # first: a half-removed layer must never look complete
        shutil.rmtree(e.path)
        result["removed"].append(e.name)
    finally:
        os.close(fd)


def _sweep_staging() -> list[str]:
    """Remove the staging areas of imports and rebuilds whose process is gone (their lease is
    free): a killed import leaves a whole unpacked archive there."""
    from impasse.sandbox.lease import sweep
    from impasse.tasks.release import staging_dir

    gone: list[str] = []

    def remove(d: Path) -> None:
        shutil.rmtree(d, ignore_errors=True)
        gone.append(d.name)

    sweep(staging_dir(), remove)
    return gone


def prune(dry_run: bool = False) -> dict[str, list[str]]:
    """Remove what nothing keeps; returns removed / in_use (skipped: a live episode holds it) /
    stale_episodes / stale_staging (leftovers of killed imports) / forgotten_runs (registrations
    whose run directory is gone) / kept_runs."""
    result: dict[str, list[str]] = {"removed": [], "in_use": [], "stale_episodes": [], "stale_staging": [],
                                    "forgotten_runs": [], "kept_runs": []}
    states = run_states()
    result["kept_runs"] = [f"{st.path} ({st.state})" for _e, st in states if st.state in runs.KEEPING]
    for e in entries(sizes=False):
        if e.kind not in ("instance-layer", "image") or e.keep:
            continue
        if dry_run:
            (result["in_use"] if e.in_use else result["removed"]).append(e.name)
        else:
            _remove_layer(e, result)
    if dry_run:
        result["stale_episodes"] = [e.name for e in _episode_entries(False) if e.state == "dead"]
        result["forgotten_runs"] = [str(st.path) for _e, st in states if st.state == "gone"]
        return result
    for entry, st in states:
        if st.state == "gone":
            entry.unlink(missing_ok=True)
            result["forgotten_runs"].append(str(st.path))
    result["stale_staging"] = _sweep_staging()
    if paths.episodes_dir().is_dir():
        from impasse.sandbox.local import sweep_stale

        before = {p.name for p in _visible(paths.episodes_dir())}
        sweep_stale()
        result["stale_episodes"] = sorted(before - {p.name for p in _visible(paths.episodes_dir())})
    return result
