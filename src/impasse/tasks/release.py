"""Frozen task releases: a versioned, self-describing dataset a run can be held to.

A release directory holds::

    release.json        name, format, builder versions, and the sha256 content digest
                        (:func:`impasse.tasks.digest.tree_digest`) of every layer its tasks use:
                        each task image build (and its image.json) and each instance layer (and
                        its .fixed variant)
    instances.jsonl     the task instances, SWE-bench JSONL (sha256 in release.json)
    ask/                the ask suite's blocker registries, when this impasse has them

Its archive (``export``) is self-contained: the release, every task image build it names
(``images/<key>/<build>/``: image.json and the layer) and every instance layer
(``layers/<name>/``), so a machine that never built a task can run it. ``import`` unpacks the
archive beside the cache, checks every digest there, and installs only when all match: a refused
import leaves the cache as it was. An installed layer whose content differs from the release is
replaced by a good archive's copy (unless a live episode holds it: then the import is refused).

``impasse run --release NAME|PATH`` takes its tasks from the release's instances and runs on the
layers it names, after recomputing every digest; it refuses to run, naming the layer, if one
differs or is missing. Nothing here builds a layer into a release it verifies: builds are
reproducible (the same versions give the same digests), so a rebuild can be *checked* against a
release (``verify --rebuild``, in a scratch cache), but the release's own layers are what runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import shutil
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from impasse import locks, paths
from impasse.tasks.digest import file_digest, tree_digest

FORMAT = "impasse.release/2"
"""2: archives carry the task image builds; release.json records each image.json's sha256."""


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


# ---------------------------------------------------------------------- where a release's parts live
@dataclass(frozen=True)
class Roots:
    """Where image builds and instance layers are looked for: the cache, or an unpacked archive."""

    images: Path
    layers: Path

    @classmethod
    def cache(cls) -> Roots:
        return cls(paths.images_dir(), paths.layers_dir())

    def image(self, ref: str) -> Path:
        key, _, build = ref.partition("@")
        return self.images / key / build

    def layer(self, name: str) -> Path:
        return self.layers / name


def layer_names(instance_id: str, image_ref: str) -> list[str]:
    """The instance layers a task uses (the bug, and the ``.fixed`` variant), named as
    :func:`impasse.tasks.layer.instance_layer` names them, without building either."""
    build = image_ref.partition("@")[2]
    return [f"{instance_id}@{build}", f"{instance_id}.fixed@{build}"]


def make_release(name: str, insts: list[Any], out: Path | None, packages: str) -> Path:
    """Write a release of ``insts``; refuses to overwrite an existing one (releases are frozen).
    The maker's cache builds instance layers not built yet (a receiver never builds)."""
    import impasse
    from impasse.tasks.episode import task_image
    from impasse.tasks.image import IMAGE_VERSION
    from impasse.tasks.layer import instance_layer
    from impasse.tasks.schema import write_jsonl

    if not insts:
        raise ReleaseError(f"release {name!r}: no built task instances to freeze; run `impasse tasks build` first")
    dest = out or releases_dir() / name
    if dest.exists():
        raise ReleaseError(f"{dest} already exists; releases are frozen: pick another name or --out")
    images: dict[str, Path] = {}
    layers: dict[str, Path] = {}
    for inst in insts:
        image = task_image(inst)
        images[image.ref] = image.dir
        for fixed in (False, True):
            layer = instance_layer(inst, image, fixed=fixed)
            layers[layer.name] = layer
    dest.mkdir(parents=True)
    write_jsonl(insts, dest / "instances.jsonl")
    doc: dict[str, Any] = {
        "format": FORMAT, "name": name, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "packages": packages, "instance_count": len(insts),
        "builder": {"impasse_version": impasse.__version__, "impasse_commit": impasse.git_commit(),
                    "image_version": IMAGE_VERSION, "python": platform.python_version()},
        "instances_sha256": file_digest(dest / "instances.jsonl"),
        "images": {ref: tree_digest(p / "layer") for ref, p in sorted(images.items())},
        "image_meta": {ref: file_digest(p / "image.json") for ref, p in sorted(images.items())},
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
    try:
        doc = json.loads((release / "release.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ReleaseError(f"{release}/release.json: cannot read it ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else doc
        raise ReleaseError(f"{release}: format {found!r} is not {FORMAT}; make the release (or its archive) again "
                           "with this impasse, or use the impasse that made it")
    missing = [k for k in ("name", "instances_sha256", "images", "image_meta", "layers") if k not in doc]
    if missing:
        raise ReleaseError(f"{release}/release.json lacks {', '.join(missing)}; it is not a complete release")
    parts = [doc["name"], *(p for ref in doc["images"] for p in ref.partition("@")[::2]), *doc["layers"]]
    if bad := [p for p in parts if not _plain_name(p)]:
        raise ReleaseError(f"{release}/release.json names {bad[0]!r}, which is not a plain file name; names "
                           "become paths in the cache, so this release is refused")
    return doc


def _plain_name(name: Any) -> bool:
    """One path component that stays where it is put: no separator, not hidden, not ``..``."""
    return isinstance(name, str) and bool(name) and "/" not in name and "\0" not in name and not name.startswith(".")


def instances(release: Path) -> list[Any]:
    from impasse.tasks.schema import read_instances

    return read_instances(release / "instances.jsonl")


def _own_files(release: Path, doc: dict[str, Any]) -> list[Mismatch]:
    """The release directory's own files against release.json (instances, ask registries)."""
    bad = []
    p = release / "instances.jsonl"
    if (found := file_digest(p) if p.is_file() else "") != doc["instances_sha256"]:
        bad.append(Mismatch("instances file", "instances.jsonl", doc["instances_sha256"], found))
    for rel, digest in doc.get("ask", {}).items():
        p = release / "ask" / rel
        if (found := file_digest(p) if p.is_file() else "") != digest:
            bad.append(Mismatch("ask registry", rel, digest, found))
    return bad


def image_mismatches(ref: str, doc: dict[str, Any], roots: Roots) -> list[Mismatch]:
    """One task image build under ``roots`` against the release (its layer and its image.json)."""
    d = roots.image(ref)
    bad = []
    meta = d / "image.json"
    if (found := file_digest(meta) if meta.is_file() else "") != doc["image_meta"].get(ref):
        bad.append(Mismatch("task image metadata", f"{ref} (image.json)", doc["image_meta"].get(ref, ""), found))
    if (found := tree_digest(d / "layer") if (d / "layer").is_dir() else "") != doc["images"][ref]:
        bad.append(Mismatch("task image layer", ref, doc["images"][ref], found))
    return bad


def layer_mismatch(name: str, doc: dict[str, Any], roots: Roots, stamped: bool) -> Mismatch | None:
    """One instance layer under ``roots`` against the release. ``stamped``: the cache's layers
    count only once their completion stamp exists (a half-built or half-pruned one is not there)."""
    layer = roots.layer(name)
    present = layer.is_dir() and (not stamped or (layer.parent / f".{name}.complete").exists())
    found = tree_digest(layer) if present else ""
    return None if found == doc["layers"][name] else Mismatch("instance layer", name, doc["layers"][name], found)


def check(release: Path, roots: Roots, *, stamped: bool) -> list[Mismatch]:
    """Every difference between the release and the layers under ``roots`` (empty: identical).
    Reads only; builds nothing."""
    doc = load(release)
    if bad := _own_files(release, doc):
        return bad
    try:
        insts = instances(release)
    except (OSError, ValueError) as e:
        return [Mismatch("instances file", f"instances.jsonl ({e})", doc["instances_sha256"], "")]
    named_images = {i.image for i in insts}
    named_layers = {n for i in insts for n in layer_names(i.instance_id, i.image)}
    if named_images - set(doc["images"]) or named_layers - set(doc["layers"]):
        unlisted = sorted((named_images - set(doc["images"])) | (named_layers - set(doc["layers"])))
        return [Mismatch("release.json", f"omits layers its instances use: {', '.join(unlisted)}", "?", "")]
    for ref in doc["images"]:
        bad += image_mismatches(ref, doc, roots)
    bad += [m for n in doc["layers"] if (m := layer_mismatch(n, doc, roots, stamped)) is not None]
    return bad


def verify(release: Path) -> list[Mismatch]:
    """Every difference between the release and this machine's cache (empty: identical)."""
    return check(release, Roots.cache(), stamped=True)


def rebuilt_digests(insts: list[Any], specs: dict[str, Any], backend: Any, log: Any = lambda _m: None
                    ) -> tuple[dict[str, str], dict[str, str]]:
    """Build every task image (``specs``: image ref -> PackageSpec) and instance layer of
    ``insts`` again, in the cache ``impasse.paths`` names now (the caller points it at a scratch
    cache), and return their digests keyed by the release's names: (image ref -> digest, layer
    name -> digest). A rebuild that differs gets other build names; it is still compared with
    the layer the release names."""
    from impasse.tasks.image import build_image
    from impasse.tasks.layer import instance_layer

    images: dict[str, str] = {}
    layers: dict[str, str] = {}
    for ref, spec in sorted(specs.items()):
        image = build_image(spec, backend, force=True, log=log)
        images[ref] = tree_digest(image.layer)
        for inst in (i for i in insts if i.image == ref):
            for fixed, name in zip((False, True), layer_names(inst.instance_id, ref), strict=True):
                layers[name] = tree_digest(instance_layer(inst, image, fixed=fixed))
    return images, layers


def compare(doc: dict[str, Any], images: dict[str, str], layers: dict[str, str]) -> list[Mismatch]:
    """The release's layer digests against ``images`` and ``layers`` (pure)."""
    return ([Mismatch("rebuilt task image layer", r, d, images.get(r, "")) for r, d in doc["images"].items()
             if images.get(r) != d]
            + [Mismatch("rebuilt instance layer", n, d, layers.get(n, "")) for n, d in doc["layers"].items()
               if layers.get(n) != d])


def sha256_of(release: Path) -> str:
    return hashlib.sha256((release / "release.json").read_bytes()).hexdigest()


# ---------------------------------------------------------------------- export
def export(release: Path, archive: Path) -> None:
    """``NAME/`` (the release), ``images/`` (its task image builds) and ``layers/`` (its instance
    layers) in one .tar.gz. Refuses unless this cache holds every part exactly as released."""
    doc = load(release)
    if bad := verify(release):
        raise ReleaseError(f"release {doc['name']} does not match this cache, so its archive would not either: "
                           + "; ".join(map(str, bad)) + ". Export it from a cache where `impasse tasks release "
                           "verify` passes (or import a good archive here first).")
    roots = Roots.cache()
    tmp = archive.with_name(f".{archive.name}.tmp{os.getpid()}")
    try:
        with tarfile.open(tmp, "w:gz", compresslevel=6) as tf:  # gzip's default: 9 takes 3x longer for 1% less
            tf.add(release, arcname=doc["name"])
            for ref in doc["images"]:
                key, _, build = ref.partition("@")
                tf.add(roots.image(ref), arcname=f"images/{key}/{build}")
            for n in doc["layers"]:
                tf.add(roots.layer(n), arcname=f"layers/{n}")
        os.replace(tmp, archive)
    finally:
        tmp.unlink(missing_ok=True)


# ---------------------------------------------------------------------- import
@dataclass
class ImportPlan:
    """What an import installs, decided before anything is installed."""

    name: str
    staged: Path
    """The unpacked archive (its release directory is ``staged/<name>``)."""
    store_release: bool
    install: list[tuple[str, str]] = field(default_factory=list)
    """(kind, name) absent from the cache: 'image' ref or 'layer' name."""
    replace: list[tuple[str, str]] = field(default_factory=list)
    """(kind, name) present in the cache with the wrong content."""
    kept: int = 0


def _safe_member(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo:
    """tarfile's 'tar' checks (no absolute names, nothing outside ``dest``, no links out of
    it) without its changes: layers keep their exact modes, which their digests cover."""
    tarfile.tar_filter(member, dest)
    return member


def _unpack(archive: Path, staging: Path) -> Path:
    if not archive.is_file():
        raise ReleaseError(f"{archive}: no such file; give the .tar.gz that `impasse tasks release export` wrote")
    try:
        with tarfile.open(archive) as tf:
            # numeric_owner: uids as recorded (a user name may map to another uid here)
            tf.extractall(staging, filter=_safe_member, numeric_owner=True)
    except (tarfile.TarError, OSError, EOFError) as e:
        raise ReleaseError(f"{archive}: not an impasse release archive (not a readable tar file: "
                           f"{str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    rels = [p for p in staging.iterdir() if p.name not in ("images", "layers")]
    if len(rels) != 1 or not (rels[0] / "release.json").is_file():
        raise ReleaseError(f"{archive}: not an impasse release archive (expected one <name>/release.json beside "
                           f"images/ and layers/, found {sorted(p.name for p in staging.iterdir())})")
    return rels[0]


def _in_use(items: list[tuple[str, str]], roots: Roots) -> list[str]:
    """The items a live episode holds now (their usage lock is held; see sandbox.uselock)."""
    from impasse.sandbox import uselock

    lock = {(kind, name): uselock.lock_file(roots.image(name) / "layer" if kind == "image" else roots.layer(name))
            for kind, name in items}
    busy = locks.held(p for p in lock.values() if p is not None)
    return [f"{kind} {name}" for (kind, name), p in lock.items() if p in busy]


def _against_cache(doc: dict[str, Any], plan: ImportPlan, cache: Roots) -> None:
    """Sort every layer of the release: absent here (install), here with other content
    (replace), or here and identical (kept)."""
    for ref in doc["images"]:
        if not cache.image(ref).exists():
            plan.install.append(("image", ref))
        elif image_mismatches(ref, doc, cache):
            plan.replace.append(("image", ref))
        else:
            plan.kept += 1
    for n in doc["layers"]:
        if not cache.layer(n).exists():
            plan.install.append(("layer", n))
        elif layer_mismatch(n, doc, cache, stamped=True) is not None:
            plan.replace.append(("layer", n))
        else:
            plan.kept += 1


def plan_import(archive: Path, staging: Path, expect_sha256: str | None = None) -> ImportPlan:
    """Unpack ``archive`` into ``staging`` and decide what to install; raises ReleaseError (the
    cache untouched) if its release.json is not the one expected (``expect_sha256``, a prefix of
    the hex digest the maker published), if any digest of the archive differs from its
    release.json, if another release of that name is stored, or if a layer to replace is in use."""
    if expect_sha256 is not None and len(expect_sha256) < 16:
        raise ReleaseError(f"--sha256 {expect_sha256!r}: give at least 16 hex digits of the release.json sha256 "
                           "that `impasse tasks release export` printed")
    rel = _unpack(archive, staging)
    doc = load(rel)
    if expect_sha256 is not None and not sha256_of(rel).startswith(expect_sha256.lower()):
        raise ReleaseError(f"{archive}: refused, nothing was installed: its release.json has sha256 "
                           f"{sha256_of(rel)}, not {expect_sha256!r} as expected; this is not the release you were "
                           "given (or the archive was rebuilt with other digests)")
    if rel.name != doc["name"]:
        raise ReleaseError(f"{archive}: the release directory {rel.name!r} is not the release's name {doc['name']!r}")
    if bad := check(rel, Roots(staging / "images", staging / "layers"), stamped=False):
        raise ReleaseError(f"{archive}: refused, nothing was installed: the archive's content differs from its "
                           "release.json: " + "; ".join(map(str, bad)) + ". The archive is damaged or was "
                           "changed; export it again from a cache where `impasse tasks release verify` passes.")
    dest = releases_dir() / doc["name"]
    stored = (dest / "release.json").is_file()
    if stored and sha256_of(dest) != sha256_of(rel):
        raise ReleaseError(f"refused, nothing was installed: another release named {doc['name']!r} is stored at "
                           f"{dest} (release.json sha256 {sha256_of(dest)[:16]}, the archive's "
                           f"{sha256_of(rel)[:16]}); releases are frozen: remove that one or rename this one")
    plan = ImportPlan(doc["name"], staging, store_release=not stored)
    cache = Roots.cache()
    _against_cache(doc, plan, cache)
    if busy := _in_use(plan.replace, cache):
        raise ReleaseError(f"refused, nothing was installed: {', '.join(busy)} here differ(s) from the release and "
                           "a live episode is using it; import again once that episode has ended")
    return plan


def _lock_all(items: list[tuple[str, str]]) -> list[int]:
    """Exclusive usage locks on every target (an episode cannot start on a layer being swapped,
    and ``cache prune`` cannot remove one before the release that keeps it is stored)."""
    from impasse.sandbox import uselock

    cache = Roots.cache()
    fds: list[int] = []
    try:
        for kind, name in items:
            lock = uselock.lock_file(cache.image(name) / "layer" if kind == "image" else cache.layer(name))
            lock.parent.mkdir(parents=True, exist_ok=True)
            fd = uselock.try_exclusive(lock)
            if fd is None:
                raise ReleaseError(f"{kind} {name} is locked by another process (a live episode, a build, or "
                                   "another import of this release); nothing was installed; import again once it "
                                   "has finished")
            fds.append(fd)
    except BaseException:
        uselock.release(fds)
        raise
    return fds


def _swap_in(staged: Path, target: Path, stamp: Path | None) -> None:
    """Put a verified tree in place of ``target`` (absent or bad), stamp last (held exclusively)."""
    if stamp is not None:
        stamp.unlink(missing_ok=True)  # first: a half-replaced layer must never look complete
    if target.exists():
        old = target.with_name(f".{target.name}.bad{os.getpid()}")
        os.replace(target, old)
        shutil.rmtree(old)
    os.replace(staged, target)
    if stamp is not None:
        stamp.touch()


def install(plan: ImportPlan) -> Path:
    """Install what ``plan`` says, under the targets' exclusive locks; the release last."""
    from impasse.sandbox import uselock

    cache, staged = Roots.cache(), Roots(plan.staged / "images", plan.staged / "layers")
    fds = _lock_all(plan.install + plan.replace)
    try:
        for kind, name in plan.install + plan.replace:
            if kind == "image":
                _swap_in(staged.image(name), cache.image(name), None)
            else:
                _swap_in(staged.layer(name), cache.layer(name), cache.layers / f".{name}.complete")
        dest = releases_dir() / plan.name
        if plan.store_release:
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.replace(plan.staged / plan.name, dest)
            except OSError:  # stored meanwhile (another import of it): fine only if it is this release
                if not (dest / "release.json").is_file() or sha256_of(dest) != sha256_of(plan.staged / plan.name):
                    raise ReleaseError(f"another release named {plan.name!r} was stored at {dest} during this "
                                       "import; its layers were left as they are, verify it") from None
        return dest
    finally:
        uselock.release(fds)


def staging_dir() -> Path:
    """Scratch space of imports and rebuilds, inside the cache (one filesystem: installing is a
    rename). Each holds a lease (:mod:`impasse.sandbox.lease`), so ``cache prune`` removes the
    leftovers of a killed import, and only those."""
    return paths.cache_root() / "staging"


@contextlib.contextmanager
def staging_area(prefix: str) -> Iterator[Path]:
    """A fresh leased directory under :func:`staging_dir`; afterwards it is gone, and so is every
    directory this made on the way (the cache root included) if nothing else is in it."""
    from impasse.sandbox.lease import Lease

    root = staging_dir()
    made = [d for d in (*reversed(root.parents), root) if not d.exists()]
    lease = Lease.acquire_new(root, prefix=prefix)
    try:
        lease.dir.mkdir()
        yield lease.dir
    finally:
        shutil.rmtree(lease.dir, ignore_errors=True)
        lease.release()
        for d in reversed(made):
            try:
                d.rmdir()
            except OSError:
                break


def import_archive(archive: Path, expect_sha256: str | None = None) -> tuple[Path, ImportPlan]:
    """Unpack, verify every digest, then install (see :func:`plan_import`). On refusal nothing
    of the cache has changed: the staging area and every directory made for it are gone."""
    with staging_area("import-") as staging:
        plan = plan_import(archive, staging, expect_sha256)
        return install(plan), plan
