"""OCI images for the Docker backend, built through the engine's API from the same layers as the
local backend: a Debian bookworm rootfs (mmdebstrap, cached by a digest of the package list) with
the local base layer's users, decoys and /etc on top; then the task image layer and the instance
layer. Task layers go under ``/.impasse/`` (root-only): at episode start they are copied into the
size-limited tmpfs at /workspace, at the very paths the venv's absolute shebangs name.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

from impasse import paths
from impasse.sandbox.base import SandboxError
from impasse.sandbox.rootfs import AGENT_HOME, AGENT_UID, REPO, VENV, ensure_base

PACKAGES = Path(__file__).with_name("base_packages.txt")
SUITE = "bookworm"
MIRRORS = ["deb http://deb.debian.org/debian bookworm main",
           "deb http://deb.debian.org/debian bookworm-updates main",
           "deb http://deb.debian.org/debian-security bookworm-security main"]
IMAGE_VERSION = "1"  # bump when the layout below changes
STASH = "/.impasse"
# What the base image takes from the local backend's base layer (users, decoys, git and PAM setup).
_FROM_LOCAL_BASE = ["etc/passwd", "etc/group", "etc/shadow", "etc/gshadow", "etc/gitconfig", "etc/sudoers",
                    "etc/pam.d/common-auth", AGENT_HOME[1:], "root", "opt/deploy"]


def packages() -> list[str]:
    return [ln.strip() for ln in PACKAGES.read_text().splitlines() if ln.strip() and not ln.startswith("#")]


FAULTCTL = Path(__file__).with_name("faultctl.py")


def rootfs_digest() -> str:
    """Names the mmdebstrap tarball: changes only with the suite, mirrors or package list."""
    return hashlib.sha256("\n".join([SUITE, *MIRRORS, *packages()]).encode()).hexdigest()[:12]


def base_digest() -> str:
    """Names the base image: the rootfs plus our layout version and the in-container fault tool."""
    h = hashlib.sha256("\n".join([rootfs_digest(), IMAGE_VERSION, FAULTCTL.read_text()]).encode())
    return h.hexdigest()[:12]


def _cache() -> Path:
    d = paths.cache_root() / "docker"
    d.mkdir(parents=True, exist_ok=True)
    return d


def rootfs_tar(log=print) -> Path:
    """The bookworm rootfs tarball (built once with mmdebstrap, ~3 min, under a lock)."""
    out = _cache() / f"rootfs-{rootfs_digest()}.tar"
    if out.exists():
        return out
    if not shutil.which("mmdebstrap"):
        raise SandboxError("building the Docker base image needs mmdebstrap: `apt-get install -y mmdebstrap` "
                           "(or run scripts/engine.sh)")
    with open(_cache() / ".rootfs.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if out.exists():
            return out
        tmp = out.with_suffix(f".tmp{os.getpid()}")
        log(f"docker: mmdebstrap {SUITE} ({len(packages())} packages) -> {out.name}")
        proc = subprocess.run(["mmdebstrap", "--variant=minbase", "--include=" + ",".join(packages()),
                               "--format=tar", SUITE, str(tmp), *MIRRORS], capture_output=True, text=True)
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise SandboxError(f"mmdebstrap failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
        os.replace(tmp, out)
    return out


def _add_tree(tar: tarfile.TarFile, src: Path, arcname: str) -> None:
    """Add ``src`` recursively, keeping owners and modes (tarfile does), refusing overlay whiteouts."""
    for path in [src, *sorted(src.rglob("*"))]:
        st = path.lstat()
        if (st.st_mode & 0o170000) == 0o020000:
            raise SandboxError(f"{path}: an overlay whiteout in a task layer; the Docker backend cannot ship it")
        rel = path.relative_to(src)
        tar.add(path, arcname=f"{arcname}/{rel}" if str(rel) != "." else arcname, recursive=False)


def _context(dockerfile: str, trees: dict[str, Path]) -> io.BytesIO:
    """A build context: the Dockerfile plus one uncompressed tar per tree (ADD extracts them)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as ctx:
        data = dockerfile.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        ctx.addfile(info, io.BytesIO(data))
        for name, tree in trees.items():
            inner = io.BytesIO()
            with tarfile.open(fileobj=inner, mode="w", format=tarfile.PAX_FORMAT) as t:
                _add_tree(t, tree, ".")
            info = tarfile.TarInfo(name)
            info.size = inner.tell()
            inner.seek(0)
            ctx.addfile(info, inner)
    buf.seek(0)
    return buf


def _exists(client, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def _build(client, tag: str, ctx: io.BytesIO) -> None:
    import docker.errors

    try:
        client.images.build(fileobj=ctx, custom_context=True, tag=tag, rm=True, network_mode="none", pull=False)
    except docker.errors.BuildError as e:
        raise SandboxError(f"building {tag} failed: {e.msg}") from e


def base_image(client, log=print) -> str:
    """Tag of the base image in ``client``'s engine, imported and built on first use."""
    tag = f"localhost/impasse-base:{base_digest()}"
    if _exists(client, tag):
        return tag
    rootfs_tag = f"localhost/impasse-rootfs:{rootfs_digest()}"
    if not _exists(client, rootfs_tag):
        log(f"docker: importing {rootfs_tag}")
        with open(rootfs_tar(log), "rb") as fh:
            answer = client.api.import_image_from_data(fh)
        image_id = json.loads(answer.strip().splitlines()[-1])["id"]  # engines differ on tagging an import
        client.images.get(image_id).tag(rootfs_tag.split(":")[0], rootfs_digest())
    local_base = ensure_base(paths.base_dir())
    overlay = _cache() / f".overlay-{os.getpid()}"
    shutil.rmtree(overlay, ignore_errors=True)
    try:
        for rel in _FROM_LOCAL_BASE:
            src, dst = local_base / rel, overlay / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dst, symlinks=True)
            else:
                shutil.copy2(src, dst)
            st = src.stat()
            os.chown(dst, st.st_uid, st.st_gid)
        stash_home = overlay / STASH[1:] / "home"
        stash_home.parent.mkdir(parents=True)
        shutil.copytree(overlay / AGENT_HOME[1:], stash_home, symlinks=True)
        for p in [stash_home, *stash_home.rglob("*")]:
            os.chown(p, AGENT_UID, AGENT_UID, follow_symlinks=False)
        shutil.copy2(FAULTCTL, overlay / STASH[1:] / "faultctl.py")
        os.chmod(overlay / STASH[1:], 0o700)
        (overlay / "workspace").mkdir()
        dockerfile = (f"FROM {rootfs_tag}\nADD overlay.tar /\n"
                      "RUN chmod 0700 /root /root/.ssh /root/.aws && chmod 0755 /opt/deploy\n"
                      f"ENV PATH={VENV}/bin:/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8\n")
        log(f"docker: building {tag}")
        _build(client, tag, _context(dockerfile, {"overlay.tar": overlay}))
    finally:
        shutil.rmtree(overlay, ignore_errors=True)
    return tag


def task_image(client, layers: list[Path], log=print) -> str:
    """Tag of the image for ``layers`` (top first, as the local backend takes them): each layer
    becomes one ADD under /.impasse, bottom first. Cached by the layers' paths and base."""
    key = hashlib.sha256("\n".join([base_digest(), *map(str, layers)]).encode()).hexdigest()[:16]
    tag = f"localhost/impasse-task:{key}"
    if not layers or _exists(client, tag):
        return tag if layers else base_image(client, log)
    base = base_image(client, log)
    with open(_cache() / f".task-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _exists(client, tag):
            return tag
        trees = {f"layer{i}.tar": layer for i, layer in enumerate(reversed(layers))}
        adds = "".join(f"ADD {name} {STASH}/\n" for name in trees)
        log(f"docker: building {tag} from {len(layers)} layer(s)")
        _build(client, tag, _context(f"FROM {base}\n{adds}", trees))
    return tag


__all__ = ["REPO", "STASH", "base_image", "task_image"]
