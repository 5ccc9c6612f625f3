"""Task images: an sdist unpacked at /workspace/repo with its venv at /workspace/.venv.

Built once per ``NAME==VERSION`` into the image cache, inside the sandbox layout itself, then
used read-only as an overlay layer by every episode. The build records the whole suite's
per-test status on clean code (the baseline every bug is validated against).

A build is immutable: it lives in ``images/<key>/<build>/`` where ``<build>`` is a prefix of its
content digest, and ``images/<key>/current`` is a symlink to the build in use. Rebuilding
(``--force``) writes a new directory and swaps the link; it never modifies or removes a build,
because live episodes may be using it as an overlay lower layer (overlayfs leaves changes to a
lower layer under a mounted overlay undefined).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tarfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from impasse import paths
from impasse.layout import AGENT_GID, AGENT_UID
from impasse.tasks.digest import tree_digest
from impasse.tasks.pypi import PackageError, download_sdist
from impasse.tasks.pytest_log import PYTEST_FLAGS, has_summary, parse_statuses
from impasse.tasks.suite import PYTEST_PIN, PackageSpec

IMAGE_VERSION = 6  # 3: ids with ' - ' recorded whole; 4: PYTHONHASHSEED=0; 5: immutable, content-named builds;
# 6: bit-reproducible (hash-checked .pyc files)
PIP_PIN = "pip==25.3"  # Debian's venv pip is too old for PEP 660 editable installs
SOURCE_DATE_EPOCH = 1735689600
"""Set for the install: pip then byte-compiles with hash-checked ``.pyc`` files (PEP 552), which
hold the source's hash instead of its mtime (the time pip unpacked it). With it, two builds of one
spec are the same tree bit for bit, so a rebuild can be checked against a release's digest."""
_NOT_SOURCE = {"tests", "test", "testing", "docs", "doc", "examples", "example", "benchmarks", "bench",
               "scripts", "tools", "build", "dist", "ci", "tasks"}
_NOT_MODULES = {"setup.py", "conftest.py", "noxfile.py", "tasks.py", "fabfile.py", "docs.py"}

Log = Callable[[str], None]


class Image(BaseModel):
    """What an episode, the bug builder and the conditions need to know about a task image."""

    package: str
    version: str
    key: str
    build: str = ""
    """Content digest prefix of the layer: names this build's directory."""
    digest: str = ""
    """sha256 of the layer tree (see :mod:`impasse.tasks.digest`)."""
    sdist: str
    built_at: str
    spec: PackageSpec
    source_dirs: list[str]
    source_files: list[str]
    test_files: list[str]
    test_cmd: str
    runtime_deps: dict[str, list[str]]
    """Third-party runtime distributions -> their files, relative to the venv's site-packages."""
    site_packages: str
    """Sandbox path of the venv's site-packages."""
    import_breaking_deps: list[str] | None = None
    """Runtime dependencies without which ``import <package>`` fails (checked for real at build)."""
    baseline: dict[str, str]
    """Whole-suite node id -> status on the clean code."""
    suite_seconds: float
    freeze: list[str]
    image_version: int = IMAGE_VERSION

    @property
    def dir(self) -> Path:
        return paths.images_dir() / self.key / self.build

    @property
    def ref(self) -> str:
        """``<key>@<build>``: names exactly this build (instances record it)."""
        return f"{self.key}@{self.build}"

    @property
    def layer(self) -> Path:
        return self.dir / "layer"

    def passed(self) -> set[str]:
        return {n for n, s in self.baseline.items() if s == "PASSED"}


def is_test_path(rel: str) -> bool:
    parts = rel.split("/")
    name = parts[-1]
    return (any(p in ("tests", "test", "testing") for p in parts[:-1]) or name.startswith("test_")
            or name.endswith("_test.py") or name == "conftest.py" or name == "tests.py")


def load_image(ref: str) -> Image | None:
    """The image named by ``ref``: ``<key>@<build>`` for one build, or ``<key>`` for the current one."""
    key, _, build = ref.partition("@")
    meta = paths.images_dir() / key / (build or "current") / "image.json"
    if not meta.exists():
        return None
    img = Image.model_validate_json(meta.read_text())
    return img if img.image_version == IMAGE_VERSION else None


def _publish(tmp: Path, key: str, digest: str) -> str:
    """Move a finished build into place under its content name and make it current (an atomic
    symlink swap). An identical build already there is kept as it is. Returns the build name."""
    build = digest[:16]
    final = paths.images_dir() / key / build
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():
        shutil.rmtree(tmp)
    else:
        os.replace(tmp, final)
    link = final.parent / f".current.tmp{os.getpid()}"
    link.unlink(missing_ok=True)
    link.symlink_to(build)
    os.replace(link, final.parent / "current")
    return build


def test_command(spec: PackageSpec, extra: list[str] | None = None) -> str:
    args = " ".join(shlex.quote(a) for a in [*spec.pytest_args, *(extra or [])])
    return f"python -m pytest {PYTEST_FLAGS} {args}".strip()


def build_image(spec: PackageSpec, backend, *, force: bool = False, log: Log = lambda _m: None) -> Image:
    """Build (or reuse) the image for ``spec`` with ``backend``'s build environment. Raises
    PackageError with a clear reason."""
    version, archive = download_sdist(spec.name, spec.version, paths.sdists_dir())
    spec = spec.model_copy(update={"version": version})
    key = spec.key
    if not force and (img := load_image(key)) is not None and img.spec == spec:
        return img
    tmp = paths.images_dir() / f".{key}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    workspace = tmp / "layer" / "workspace"
    repo = workspace / "repo"
    try:
        log(f"{key}: unpacking {archive.name}")
        _unpack(archive, repo)
        test_files = sorted(str(p.relative_to(repo)) for p in repo.rglob("*.py")
                            if is_test_path(str(p.relative_to(repo))) and p.name != "conftest.py")
        if not any(Path(f).name.startswith("test") or f.endswith("_test.py") for f in test_files):
            raise PackageError(f"{key}: the sdist ships no tests (no test_*.py / *_test.py); "
                               "impasse needs the package's own suite to validate bugs")
        source_dirs = spec.source or _detect_sources(repo)
        if not source_dirs:
            raise PackageError(f"{key}: found no package source directory; set `source:` for it in the suite file")
        (tmp / "constraints.txt").write_text("\n".join([PYTEST_PIN, *spec.pins]) + "\n")
        shutil.copy(tmp / "constraints.txt", workspace / ".constraints.txt")
        reqs = " ".join(shlex.quote(r) for r in [PYTEST_PIN, *spec.test_deps])
        script = f"""set -e
export SOURCE_DATE_EPOCH={SOURCE_DATE_EPOCH}
python3 -m venv --copies /workspace/.venv
P=/workspace/.venv/bin/python
$P -m pip install -q {PIP_PIN}
$P -m pip install -q -c /workspace/.constraints.txt {reqs}
$P -m pip install -q -c /workspace/.constraints.txt -e /workspace/repo
$P -m pip freeze --all > /workspace/.freeze.txt
IMPASSE_PACKAGE={shlex.quote(spec.name)} $P - <<'PY' > /workspace/.deps.json
{_DEPS_PROBE}
PY
rm -f /workspace/.constraints.txt
"""
        log(f"{key}: installing into /workspace/.venv (pytest + {len(spec.test_deps)} test deps + editable package)")
        proc = backend.run_build(workspace, script, env=spec.env, pip_cache=paths.pip_cache_dir())
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            if "NewConnectionError" in tail or "Could not find a version" in tail and "network" in tail:
                raise PackageError(f"{key}: network failure while installing from PyPI:\n{tail}")
            raise PackageError(f"{key}: installing the package or its test dependencies failed:\n{tail}")
        freeze = (workspace / ".freeze.txt").read_text().split()
        deps_info = json.loads((workspace / ".deps.json").read_text())
        (workspace / ".freeze.txt").unlink()
        (workspace / ".deps.json").unlink()
        _chown_tree(workspace, AGENT_UID, AGENT_GID)
        src_files = sorted(
            str(p.relative_to(repo)) for d in source_dirs
            for p in ([repo / d] if d.endswith(".py") else (repo / d).rglob("*.py"))
            if not is_test_path(str(p.relative_to(repo))))
        img = Image(package=spec.name, version=version, key=key, sdist=archive.name,
                    built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), spec=spec,
                    source_dirs=source_dirs, source_files=src_files, test_files=test_files,
                    test_cmd=test_command(spec), runtime_deps=deps_info["deps"],
                    site_packages=deps_info["site_packages"], baseline={}, suite_seconds=0.0, freeze=freeze)
        log(f"{key}: running the whole suite once on clean code")
        t0 = time.monotonic()
        with backend.create([tmp / "layer"]) as sb:
            res = sb.exec(f"{img.test_cmd} 2>&1", timeout=spec.timeout * 3, output_limit=32 * 1024 * 1024)
        img.suite_seconds = round(time.monotonic() - t0, 2)
        statuses = parse_statuses(res.stdout)
        passed = sum(1 for s in statuses.values() if s == "PASSED")
        if res.timed_out or not has_summary(res.stdout) or passed == 0:
            tail = "\n".join(res.output.strip().splitlines()[-12:])
            raise PackageError(f"{key}: the test suite does not pass on clean code "
                               f"(exit {res.exit_code}, {passed} passed{', timed out' if res.timed_out else ''}):\n{tail}")
        img.import_breaking_deps = _import_breaking_deps(img, tmp / "layer", backend)
        failed = [n for n, s in statuses.items() if s in ("FAILED", "ERROR")]
        if failed:
            log(f"{key}: {len(failed)} tests fail on clean code; they are excluded from PASS_TO_PASS")
        img.baseline = statuses
        (tmp / "constraints.txt").unlink()
        img.digest = tree_digest(tmp / "layer")
        img.build = img.digest[:16]
        (tmp / "image.json").write_text(img.model_dump_json(indent=1))
        _publish(tmp, key, img.digest)
        log(f"{key}: image {img.ref} ready ({passed} passing tests, suite {img.suite_seconds}s)")
        return img
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


_DEPS_PROBE = r'''
import json, os, sysconfig, importlib.metadata as md
from pip._vendor.packaging.requirements import Requirement
from pip._vendor.packaging.utils import canonicalize_name
site = sysconfig.get_paths()["purelib"]
dists = {canonicalize_name(d.metadata["Name"]): d for d in md.distributions()}
root = dists.get(canonicalize_name(os.environ["IMPASSE_PACKAGE"]))
deps = {}
for r in (root.requires or []) if root else []:
    req = Requirement(r)
    if req.marker and not req.marker.evaluate({"extra": ""}):
        continue
    d = dists.get(canonicalize_name(req.name))
    if d is None:
        continue
    files = sorted({str(f).split("/")[0] for f in (d.files or []) if not str(f).startswith("..")})
    deps[d.metadata["Name"]] = files
print(json.dumps({"deps": deps, "site_packages": site}))
'''


def import_names(source_dirs: list[str]) -> list[str]:
    return [Path(d).name.removesuffix(".py") for d in source_dirs]


def _import_breaking_deps(img: Image, layer: Path, backend) -> list[str]:
    """Hide each runtime dependency in turn (as the missing_dependency condition does) and try
    to import the package: the ones whose absence breaks the import qualify for that condition."""
    from impasse.conditions.faults import HideDependency, TaskFacts

    probe = "python -c " + shlex.quote("; ".join(f"import {m}" for m in import_names(img.source_dirs)))
    facts = TaskFacts.of(img)
    breaking = []
    for dist in sorted(img.runtime_deps):
        with backend.create([layer], [HideDependency(dist=dist)], facts) as sb:
            res = sb.exec(probe, timeout=60)
        if res.exit_code != 0 and "No module named" in res.stderr:
            breaking.append(dist)
    return breaking


def _unpack(archive: Path, dest: Path) -> None:
    staging = dest.parent / ".unpack"
    staging.mkdir(parents=True)
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(staging)
    else:
        with tarfile.open(archive) as tf:
            tf.extractall(staging, filter="data")
    entries = list(staging.iterdir())
    top = entries[0] if len(entries) == 1 and entries[0].is_dir() else staging
    shutil.move(str(top), dest)
    shutil.rmtree(staging, ignore_errors=True)


def _detect_sources(repo: Path) -> list[str]:
    roots = [repo / "src"] if (repo / "src").is_dir() else [repo]
    found = []
    for root in roots:
        for p in sorted(root.iterdir()):
            rel = str(p.relative_to(repo))
            if p.is_dir() and (p / "__init__.py").exists() and p.name not in _NOT_SOURCE and not p.name.startswith((".", "_")) or (p.suffix == ".py" and p.name not in _NOT_MODULES and not is_test_path(rel)
                  and not p.name.startswith(("_", "."))):
                found.append(rel)
    return found


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    os.chown(root, uid, gid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.chown(os.path.join(dirpath, name), uid, gid, follow_symlinks=False)
