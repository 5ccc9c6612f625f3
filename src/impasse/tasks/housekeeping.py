"""What the cache holds and what may go: ``impasse cache list`` and ``impasse cache prune``.

Kept by prune: every layer a frozen release names (``<cache>/releases/*/release.json``), every
image build that is an image's ``current`` build or that a built task instance names, every
sdist, and every layer a live episode holds (see :mod:`impasse.sandbox.uselock`). Removed:
instance layers nobody uses (they are rebuilt on first use), superseded image builds, and the
directories of episodes whose owner is gone. Safe while runs are going: a layer is removed only
under its exclusive lock, stamp first.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from impasse import paths
from impasse.sandbox import uselock


@dataclass
class Entry:
    kind: str
    """instance-layer, image, sdist, episode."""
    name: str
    path: str
    size: int
    keep: str
    """Why prune keeps it ('' = prunable)."""
    in_use: bool = False

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


def release_refs() -> tuple[dict[str, str], dict[str, str]]:
    """(image ref -> release, instance layer name -> release) over every stored release."""
    images: dict[str, str] = {}
    layers: dict[str, str] = {}
    for meta in sorted(releases_dir().glob("*/release.json")):
        data = json.loads(meta.read_text())
        images.update({ref: data["name"] for ref in data.get("images", {})})
        layers.update({name: data["name"] for name in data.get("layers", {})})
    return images, layers


def _instance_images() -> set[str]:
    from impasse.tasks.build import all_instances

    return {i.image for i in all_instances()}


def _busy(lock: Path | None) -> bool:
    if lock is None or not lock.parent.is_dir():
        return False
    fd = uselock.try_exclusive(lock)
    if fd is None:
        return True
    os.close(fd)
    return False


def _visible(d: Path) -> list[Path]:
    return sorted(p for p in d.iterdir() if not p.name.startswith(".")) if d.is_dir() else []


def entries(sizes: bool = True) -> list[Entry]:
    rel_images, rel_layers = release_refs()
    named = _instance_images()
    out: list[Entry] = []
    for layer in _visible(paths.layers_dir()):
        out.append(Entry("instance-layer", layer.name, str(layer), tree_size(layer) if sizes else 0,
                         f"release {rel_layers[layer.name]}" if layer.name in rel_layers else "",
                         _busy(uselock.lock_file(layer))))
    for key_dir in _visible(paths.images_dir()):
        current = os.readlink(key_dir / "current") if (key_dir / "current").is_symlink() else ""
        for build in _visible(key_dir):
            if build.name in ("current", "layer") or not (build / "layer").is_dir():
                continue  # the link, and builds of the pre-content-named layout
            ref = f"{key_dir.name}@{build.name}"
            keep = (f"release {rel_images[ref]}" if ref in rel_images else "current" if build.name == current
                    else "named by built instances" if ref in named else "")
            out.append(Entry("image", ref, str(build), tree_size(build) if sizes else 0, keep,
                             _busy(uselock.lock_file(build / "layer"))))
    for sdist in _visible(paths.sdists_dir()):
        out.append(Entry("sdist", sdist.name, str(sdist), sdist.stat().st_size, "sources of images"))
    for ep in _visible(paths.episodes_dir()):
        if ep.is_dir():
            out.append(Entry("episode", ep.name, str(ep), 0, "live", _busy(ep.with_name(ep.name + ".lock"))))
    return out


def prune(dry_run: bool = False) -> dict[str, list[str]]:
    """Remove what nothing keeps; returns removed / in_use (skipped: a live episode holds it) /
    stale_episodes."""
    result: dict[str, list[str]] = {"removed": [], "in_use": [], "stale_episodes": []}
    for e in entries(sizes=False):
        if e.kind not in ("instance-layer", "image") or e.keep:
            continue
        layer = Path(e.path) if e.kind == "instance-layer" else Path(e.path) / "layer"
        if dry_run:
            (result["in_use"] if e.in_use else result["removed"]).append(e.name)
            continue
        fd = uselock.try_exclusive(uselock.lock_file(layer))
        if fd is None:
            result["in_use"].append(e.name)
            continue
        try:
            stamp = uselock.stamp_of(layer)
            if stamp is not None:
                stamp.unlink(missing_ok=True)  # first: a half-removed layer must never look complete
            shutil.rmtree(e.path)
            result["removed"].append(e.name)
        finally:
            os.close(fd)
    if not dry_run and paths.episodes_dir().is_dir():
        from impasse.sandbox.local import sweep_stale

        before = {p.name for p in _visible(paths.episodes_dir())}
        sweep_stale()
        result["stale_episodes"] = sorted(before - {p.name for p in _visible(paths.episodes_dir())})
    return result
