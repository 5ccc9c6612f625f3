"""OCI images for the Docker backend, built through the engine's API from the same layers as the
local backend: a Debian bookworm rootfs (mmdebstrap, cached by a digest of the package list) with
the local base's users, decoys and git config on top (the same data, rootfs.py); then the task image layer and the instance
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
from impasse.layout import AGENT_HOME, AGENT_UID, REPO, VENV
from impasse.sandbox.base import SandboxError

PACKAGES = Path(__file__).with_name("base_packages.txt")
SUITE = "bookworm"
MIRRORS = ["deb http://deb.debian.org/debian bookworm main",
           "deb http://deb.debian.org/debian bookworm-updates main",
           "deb http://deb.debian.org/debian-security bookworm-security main"]
IMAGE_VERSION = "2"  # bump when the layout below changes
STASH = "/.impasse"


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


def _overlay_tar() -> io.BytesIO:
    """Our users, decoys, git config and fault tool as one tar, owners set in the headers (no
    chown on disk: building the Docker images needs no root, only an engine)."""
    from impasse.sandbox.local import rootfs

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        def put(name: str, mode: int, uid: int = 0, gid: int = 0, data: bytes | None = None) -> None:
            info = tarfile.TarInfo(name)
            info.mode, info.uid, info.gid, info.mtime = mode, uid, gid, 1735689600
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))

        a = AGENT_UID
        for d, mode in [("etc", 0o755), ("root", 0o700), ("root/.ssh", 0o700), ("root/.aws", 0o700),
                        ("opt", 0o755), ("opt/deploy", 0o755), ("workspace", 0o755)]:
            put(d, mode)
        put("etc/passwd", 0o644, data=rootfs._PASSWD.encode())
        put("etc/group", 0o644, data=rootfs._GROUP.encode())
        put("etc/gitconfig", 0o644, data=rootfs._GITCONFIG.encode())
        put("etc/sudoers", 0o440, data=b"Defaults env_reset\nroot ALL=(ALL:ALL) ALL\n%sudo ALL=(ALL:ALL) ALL\n")
        put("etc/hostname", 0o644, data=b"sandbox\n")
        for rel, (content, mode, uid, gid) in rootfs._DECOYS.items():
            put(rel, mode, uid, gid, content.encode())
        for home in (AGENT_HOME[1:], f"{STASH[1:]}/home"):
            if home.startswith(STASH[1:]):
                put(STASH[1:], 0o700)
            put(home, 0o755, a, a)
            put(f"{home}/.ssh", 0o700, a, a)
            put(f"{home}/.bashrc", 0o644, a, a, b"export PS1='agent@sandbox:\\w$ '\n")
        put(f"{STASH[1:]}/faultctl.py", 0o700, data=FAULTCTL.read_bytes())
    buf.seek(0)
    return buf


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
    overlay = _overlay_tar().getvalue()
    dockerfile = (f"FROM {rootfs_tag}\nADD overlay.tar /\n"
                  # su/login fail without PAM's 2 s failure delay, as in the local base
                  "RUN sed -i '0,/pam_unix\\.so/s/\\(pam_unix\\.so.*\\)$/\\1 nodelay/' /etc/pam.d/common-auth\n"
                  f"ENV PATH={VENV}/bin:/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8\n")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as ctx:
        for name, data in (("Dockerfile", dockerfile.encode()), ("overlay.tar", overlay)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            ctx.addfile(info, io.BytesIO(data))
    buf.seek(0)
    log(f"docker: building {tag}")
    _build(client, tag, buf)
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
