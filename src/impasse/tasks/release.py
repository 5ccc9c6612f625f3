"""Frozen task releases: a versioned, self-describing dataset a run can be held to.

A release directory holds::

    release.json        name, format, builder versions, and the sha256 content digest
                        (:func:`impasse.tasks.digest.tree_digest`) of every layer its tasks use:
                        each task image build and each instance layer (and its .fixed variant)
    instances.jsonl     the task instances, SWE-bench JSONL (sha256 in release.json)
    ask/                the ask suite's blocker registries, when this impasse has them

``impasse run --release NAME|PATH`` recomputes every digest first and refuses to run, naming the
layer, if one differs: two machines (or one machine a month apart) run the same tasks or none.
Instance layers carry git's index (stat data), so they are not bit-reproducible by a rebuild;
``export`` therefore ships them inside the archive (a few MB), and ``import`` puts them back.
Task images are not shipped (hundreds of MB); they must be built and match their digests.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from impasse import paths
from impasse.tasks.digest import file_digest, tree_digest

FORMAT = "impasse.release/1"


class ReleaseError(ValueError):
    pass


def releases_dir() -> Path:
    return paths.cache_root() / "releases"


def ask_data_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "ask" / "data"


def resolve(name_or_path: str) -> Path:
    """A release directory by path, or by name among the stored releases."""
    p = Path(name_or_path)
    for cand in (p, releases_dir() / name_or_path):
        if (cand / "release.json").is_file():
            return cand
    raise ReleaseError(f"no release {name_or_path!r}: neither a directory with release.json nor a stored release "
                       f"in {releases_dir()}; make one with `impasse tasks release NAME` or import its archive")


def _layers_of(insts: list[Any]) -> tuple[dict[str, Path], dict[str, Path]]:
    """(image ref -> image layer, instance layer name -> layer), building missing instance layers."""
    from impasse.tasks.episode import task_image
    from impasse.tasks.layer import instance_layer

    images: dict[str, Path] = {}
    layers: dict[str, Path] = {}
    for inst in insts:
        image = task_image(inst)
        images[image.ref] = image.layer
        for fixed in (False, True):
            layer = instance_layer(inst, image, fixed=fixed)
            layers[layer.name] = layer
    return images, layers


def make_release(name: str, insts: list[Any], out: Path | None, packages: str) -> Path:
    """Write a release of ``insts``; refuses to overwrite an existing one (releases are frozen)."""
    import impasse
    from impasse.tasks.image import IMAGE_VERSION
    from impasse.tasks.schema import write_jsonl

    if not insts:
        raise ReleaseError(f"release {name!r}: no built task instances to freeze; run `impasse tasks build` first")
    dest = out or releases_dir() / name
    if dest.exists():
        raise ReleaseError(f"{dest} already exists; releases are frozen: pick another name or --out")
    images, layers = _layers_of(insts)
    dest.mkdir(parents=True)
    write_jsonl(insts, dest / "instances.jsonl")
    doc: dict[str, Any] = {
        "format": FORMAT, "name": name, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "packages": packages, "instance_count": len(insts),
        "builder": {"impasse_version": impasse.__version__, "impasse_commit": impasse.git_commit(),
                    "image_version": IMAGE_VERSION, "python": platform.python_version()},
        "instances_sha256": file_digest(dest / "instances.jsonl"),
        "images": {ref: tree_digest(p) for ref, p in sorted(images.items())},
        "layers": {n: tree_digest(p) for n, p in sorted(layers.items())},
    }
    if ask_data_dir().is_dir():
        shutil.copytree(ask_data_dir(), dest / "ask")
        doc["ask"] = {str(p.relative_to(dest / "ask")): file_digest(p) for p in sorted((dest / "ask").rglob("*"))
                      if p.is_file()}
    (dest / "release.json").write_text(json.dumps(doc, indent=1) + "\n")
    return dest


@dataclass(frozen=True)
class Mismatch:
    kind: str
    name: str
    expected: str
    found: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}: release has sha256 {self.expected[:16]}, found {self.found[:16] or 'nothing'}"


def load(release: Path) -> dict[str, Any]:
    doc = json.loads((release / "release.json").read_text())
    if doc.get("format") != FORMAT:
        raise ReleaseError(f"{release}: format {doc.get('format')!r} is not {FORMAT}; use a matching impasse")
    return doc


def instances(release: Path) -> list[Any]:
    from impasse.tasks.schema import read_instances

    return read_instances(release / "instances.jsonl")


def verify(release: Path) -> list[Mismatch]:
    """Every difference between the release and this machine's cache (empty: identical)."""
    doc = load(release)
    bad = []
    if (found := file_digest(release / "instances.jsonl")) != doc["instances_sha256"]:
        bad.append(Mismatch("instances file", "instances.jsonl", doc["instances_sha256"], found))
    for rel, digest in doc.get("ask", {}).items():
        p = release / "ask" / rel
        if (found := file_digest(p) if p.is_file() else "") != digest:
            bad.append(Mismatch("ask registry", rel, digest, found))
    if bad:
        return bad
    try:
        images, layers = _layers_of(instances(release))
    except FileNotFoundError as e:
        return [Mismatch("task image", str(e), "?", "")]
    for kind, wanted, have in (("task image layer", doc["images"], images), ("instance layer", doc["layers"], layers)):
        for n, digest in wanted.items():
            found = tree_digest(have[n]) if n in have and have[n].is_dir() else ""
            if found != digest:
                bad.append(Mismatch(kind, n, digest, found))
    return bad


def sha256_of(release: Path) -> str:
    return hashlib.sha256((release / "release.json").read_bytes()).hexdigest()


def export(release: Path, archive: Path) -> None:
    """``NAME/`` (the release) and ``layers/`` (its instance layers) in one .tar.gz."""
    doc = load(release)
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(release, arcname=doc["name"])
        for n in doc["layers"]:
            layer = paths.layers_dir() / n
            if not layer.is_dir():
                raise ReleaseError(f"instance layer {n} is not in the cache; `impasse run --release {doc['name']}` "
                                   "(or verify) rebuilds it, then export again")
            tf.add(layer, arcname=f"layers/{n}")


def import_archive(archive: Path) -> Path:
    """Unpack an exported release into the stored releases, and its instance layers into the cache
    (existing layers are kept: verification tells whether they match)."""
    staging = releases_dir() / f".import-{time.time_ns()}"
    staging.mkdir(parents=True)
    try:
        try:
            with tarfile.open(archive) as tf:
                tf.extractall(staging, filter=lambda m, p: m)  # layers keep owner and mode (the digest covers them)
        except tarfile.TarError as e:
            raise ReleaseError(f"{archive}: not an impasse release archive (not a readable tar file: "
                               f"{str(e).splitlines()[0]})") from e
        (rel,) = [p for p in staging.iterdir() if p.name != "layers"] or [None]
        if rel is None or not (rel / "release.json").is_file():
            raise ReleaseError(f"{archive}: not an impasse release archive (no <name>/release.json)")
        name = load(rel)["name"]
        dest = releases_dir() / name
        if dest.exists():
            raise ReleaseError(f"release {name!r} is already stored at {dest}")
        paths.layers_dir().mkdir(parents=True, exist_ok=True)
        for layer in sorted((staging / "layers").iterdir()) if (staging / "layers").is_dir() else []:
            target = paths.layers_dir() / layer.name
            if not target.exists():
                shutil.move(str(layer), target)
                (paths.layers_dir() / f".{layer.name}.complete").touch()
        shutil.move(str(rel), dest)
        return dest
    finally:
        shutil.rmtree(staging, ignore_errors=True)
