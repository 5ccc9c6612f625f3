"""Runs INSIDE an episode's container as root (privileged exec), never imported by impasse: the
OS-level half of each fault. Shipped in the base image at /.impasse/faultctl.py (root-only).
State lives in /run/impasse (a root-only tmpfs), so ``restore`` undoes exactly what was done.

    faultctl.py lock NAME MODE [--parent P]... PATH...   MODE: read_only | unreadable | private
    faultctl.py unlock NAME
    faultctl.py hide NAME DIR ENTRY...                   remove DIR/ENTRY (a dependency's files)
    faultctl.py unhide NAME                              copy them back from the image's stash
    faultctl.py fill NAME MOUNT...                       shrink each tmpfs to its current use
    faultctl.py unfill NAME                              give them their sizes back
    faultctl.py busy NAME FILE...                        a root holder keeps FILEs open for writing
    faultctl.py release NAME                             kill NAME's holder (busy)
    faultctl.py cgroup CONTROLLER FILE [VALUE]           read or write this container's v1/v2 file
"""

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

STATE = "/run/impasse"
STASH = "/.impasse"
AGENT = 2000


def _save(name, data):
    with open(f"{STATE}/{name}.json", "w") as fh:
        json.dump(data, fh)


def _load(name):
    try:
        with open(f"{STATE}/{name}.json") as fh:
            return json.load(fh)
    except FileNotFoundError:
        return None


def _walk(top):
    yield top
    if os.path.isdir(top) and not os.path.islink(top):
        for dirpath, dirnames, filenames in os.walk(top):
            for n in dirnames + filenames:
                yield os.path.join(dirpath, n)


def lock(name, mode, paths, parents):
    saved = []

    def put(p, m):
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            return
        saved.append([p, st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)])
        os.chown(p, 0, 0)
        os.chmod(p, m)

    for p in parents:
        put(p, stat.S_IMODE(os.stat(p).st_mode) & ~0o022 | 0o755)
    for top in paths:
        if mode == "private":
            put(top, 0o700)
            continue
        for p in list(_walk(top)):
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                continue
            if mode == "read_only":
                put(p, stat.S_IMODE(st.st_mode) & ~0o222)
            else:
                put(p, 0o755 if stat.S_ISDIR(st.st_mode) else 0o000)
    _save(name, saved)


def unlock(name):
    for p, uid, gid, m in reversed(_load(name) or []):
        if os.path.lexists(p):
            os.chown(p, uid, gid)
            os.chmod(p, m)
    _save(name, [])


def hide(name, directory, entries):
    for e in entries:
        p = os.path.join(directory, e)
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        elif os.path.lexists(p):
            os.unlink(p)
    _save(name, [directory, entries])


def unhide(name):
    directory, entries = _load(name) or [None, []]
    for e in entries:
        src, dst = STASH + os.path.join(directory, e), os.path.join(directory, e)
        if os.path.isdir(src):
            shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)
        elif os.path.lexists(src):
            shutil.copy2(src, dst, follow_symlinks=False)
        for p in _walk(dst):
            os.chown(p, AGENT, AGENT, follow_symlinks=False)
    _save(name, [directory, []])


def _holder(name, work):
    """Fork a detached root process that runs ``work()`` and then sleeps until killed."""
    pid = os.fork()
    if pid:
        for _ in range(500):  # wait until the holder says it is in place
            if os.path.exists(f"{STATE}/{name}.ready"):
                return
            if os.path.exists(f"{STATE}/{name}.error"):
                with open(f"{STATE}/{name}.error") as fh:
                    raise SystemExit(f"faultctl: holder {name} failed: {fh.read()}")
            time.sleep(0.01)
        raise SystemExit(f"faultctl: holder {name} did not start")
    os.setsid()
    fd = os.open("/dev/null", os.O_RDWR)
    for n in (0, 1, 2):
        os.dup2(fd, n)
    try:
        keep = work()
    except OSError as e:
        with open(f"{STATE}/{name}.error", "w") as fh:
            fh.write(f"{e.filename}: {e.strerror}")
        os._exit(1)
    with open(f"{STATE}/{name}.pid", "w") as fh:
        fh.write(str(os.getpid()))
    open(f"{STATE}/{name}.ready", "w").close()
    while keep is not None:
        signal.pause()


def fill(name, mounts):
    """Shrink each tmpfs to what it holds now: the next write finds no space (df: 100%). A tmpfs
    cannot be sized 0 (that means unlimited), so an empty one first gets one page held by a
    root process through an unlinked file: nothing to see in it, yet no byte more fits (as on
    the local backend, creating an empty file still works and writing to it fails)."""
    empty = [m for m in mounts if _used(m) == 0]
    if empty:
        _holder(f"{name}-pages", lambda: [_hidden_page(m) for m in empty])
    sizes = {}
    for m in mounts:
        vfs = os.statvfs(m)
        sizes[m] = vfs.f_blocks * vfs.f_frsize
        subprocess.run(["mount", "-o", f"remount,size={max(_used(m), PAGE)}", m], check=True)
    _save(name, sizes)


PAGE = os.sysconf("SC_PAGE_SIZE")


def _used(mount):
    vfs = os.statvfs(mount)
    return (vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize


def _hidden_page(mount):
    path = os.path.join(mount, f".impasse-fill-{os.getpid()}")
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.write(fd, b"\0" * PAGE)
    os.unlink(path)
    return fd


def unfill(name):
    for m, size in (_load(name) or {}).items():
        subprocess.run(["mount", "-o", f"remount,size={size}", m], check=True)
    release(f"{name}-pages")
    _save(name, {})


def freeze(name, mount):
    """Put an overlay over ``mount`` whose upper layer is full, as the local backend's episode
    overlay is: changing any file already there needs a copy-up, which fails with ENOSPC (a
    plain shrunk tmpfs would let a file be rewritten within its own pages)."""
    vfs = os.statvfs(mount)
    upper = f"{STATE}/{name}-upper"
    os.makedirs(upper, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={PAGE},mode=755", "none", upper], check=True)
    os.makedirs(f"{upper}/u", mode=0o755)
    os.makedirs(f"{upper}/w", mode=0o755)
    _holder(f"{name}-upper", lambda: [_hidden_page(upper)])
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                    f"lowerdir={mount},upperdir={upper}/u,workdir={upper}/w", mount], check=True)
    _save(f"{name}-upper", [upper, vfs.f_blocks * vfs.f_frsize])


def unfreeze(name):
    """Give the overlay's upper layer the workspace's own size: writes work again, and what the
    agent changes from now on lands there (the patch is read through the overlay)."""
    upper, size = _load(f"{name}-upper") or [None, 0]
    if upper:
        subprocess.run(["mount", "-o", f"remount,size={size}", upper], check=True)
        release(f"{name}-upper")
    _save(f"{name}-upper", [None, 0])


def busy(name, files):
    _holder(name, lambda: [os.open(f, os.O_WRONLY) for f in files])


def release(name):
    try:
        with open(f"{STATE}/{name}.pid") as fh:
            pid = int(fh.read())
    except FileNotFoundError:
        return
    os.kill(pid, signal.SIGKILL)
    for _ in range(500):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.01)
    for suffix in ("pid", "ready"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{STATE}/{name}.{suffix}")


def cgroup(controller, filename, value=None):
    """This container's cgroup file, through a private mount of the hierarchy (unmounted after)."""
    with open("/proc/self/cgroup") as fh:
        own = fh.read().splitlines()
    v1 = [ln.split(":", 2)[2] for ln in own if controller in ln.split(":")[1].split(",")]
    rel, fstype, opts = (v1[0], "cgroup", controller) if v1 else (own[0].split(":", 2)[2], "cgroup2", "")
    mnt = tempfile.mkdtemp(dir=STATE)
    args = ["mount", "-t", fstype] + (["-o", opts] if opts else []) + ["none", mnt]
    subprocess.run(args, check=True)
    try:
        path = mnt + rel + "/" + filename
        if value is None:
            with open(path) as fh:
                sys.stdout.write(fh.read())
        else:
            with open(path, "w") as fh:
                fh.write(value)
    finally:
        subprocess.run(["umount", mnt], check=True)
        os.rmdir(mnt)


def main(argv):
    os.makedirs(STATE, mode=0o700, exist_ok=True)
    cmd, rest = argv[0], argv[1:]
    if cmd == "lock":
        name, mode, rest = rest[0], rest[1], rest[2:]
        parents = [rest[i + 1] for i, a in enumerate(rest) if a == "--parent"]
        paths = [a for i, a in enumerate(rest) if a != "--parent" and (i == 0 or rest[i - 1] != "--parent")]
        lock(name, mode, paths, parents)
    elif cmd == "unlock":
        unlock(rest[0])
    elif cmd == "hide":
        hide(rest[0], rest[1], rest[2:])
    elif cmd == "unhide":
        unhide(rest[0])
    elif cmd == "fill":
        fill(rest[0], rest[1:])
    elif cmd == "unfill":
        unfill(rest[0])
    elif cmd == "freeze":
        freeze(rest[0], rest[1])
    elif cmd == "unfreeze":
        unfreeze(rest[0])
    elif cmd == "busy":
        busy(rest[0], rest[1:])
    elif cmd == "release":
        release(rest[0])
    elif cmd == "cgroup":
        cgroup(*rest)
    else:
        raise SystemExit(f"faultctl: unknown command {cmd!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
