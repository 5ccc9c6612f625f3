"""Runs INSIDE an episode's container as root (a privileged exec of ``python3 -c`` with this
file's text, so nothing is shipped in the image), never imported by impasse: the in-container
half of ``DockerSandbox.fork``. The parent packs its writable state into one tar file on its own
root filesystem, the engine's archive API carries that one file to the fork, the fork unpacks it.

    forkctl.py pack DIR TREE...   DIR/changes.json: the engine's diff of the container's own layer
    forkctl.py unpack DIR         DIR/state.tar and DIR/deleted.json, from the parent's pack
                                  (DIR is under /.impasse-fork, which goes too once empty)

The writable state is: each TREE whole (the sized tmpfs mounts the agent writes to, and
/dev/shm), the paths of the container's own layer that the engine's diff names (only those on the
root filesystem itself: the engine's bind mounts such as /etc/hosts and the kernel's filesystems
are the engine's, each fork gets its own), and the faults' recorded state (faultctl's
``/run/impasse/*.json``, what a restore undoes; their holder processes are not files and each
fault makes its own again in the fork). GNU tar rather than the engine's archive of each tree:
podman's archives give every file the container user's owner; tar with numeric owners and
extended attributes keeps owners, modes, symlinks, hard links, fifos, sparse files and xattrs.
Sockets are left out (tar cannot store them; nothing listens on one between two commands).
Paths deleted from the image are deleted in the fork before the pack is unpacked there.
"""

import json
import os
import shutil
import subprocess
import sys

HERE = "/.impasse-fork"
STATE = "/run/impasse"
TAR = ["--numeric-owner", "--xattrs", "--xattrs-include=*", "--sparse"]


def _on_root_fs(path, root_dev):
    try:
        return os.lstat(path).st_dev == root_dev
    except (FileNotFoundError, NotADirectoryError):
        return False


def _ours(path):
    """A fork's staging: HERE in a fork, HERE-<name>/ in a parent."""
    return path.startswith(HERE)


def _tar(args):
    proc = subprocess.run(["tar", "-C", "/", *args, *TAR], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"forkctl: tar {args[0]} failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")


def pack(d, trees):
    with open(f"{d}/changes.json") as fh:
        changes = json.load(fh)
    root = os.lstat("/").st_dev
    layer = sorted({p for p, _kind in changes if p != "/" and not _ours(p) and _on_root_fs(p, root)})
    states = sorted(f"{STATE}/{n}" for n in os.listdir(STATE) if n.endswith(".json")) if os.path.isdir(STATE) else []
    with open(f"{d}/layer", "wb") as fh:  # one name per entry, the directories of the layer without their content
        fh.write(b"".join(p.lstrip("/").encode() + b"\0" for p in layer + states))
    with open(f"{d}/deleted.json", "w") as fh:
        json.dump(sorted(p for p, kind in changes if kind == 2 and not _ours(p)), fh)
    _tar(["-c", "-f", f"{d}/state.tar", *[t.lstrip("/") for t in trees], "--no-recursion", "--null",
          "-T", f"{d}/layer"])


def unpack(d):
    with open(f"{d}/deleted.json") as fh:
        deleted = json.load(fh)
    root = os.lstat("/").st_dev
    for p in deleted:  # what the parent removed from the image (a path it made again is in the pack)
        if p == "/" or not _on_root_fs(p, root) or os.path.ismount(p):
            continue
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        else:
            os.unlink(p)
    _tar(["-x", "-f", f"{d}/state.tar", "--same-owner", "--same-permissions"])
    shutil.rmtree(d)
    if not os.listdir(HERE):
        os.rmdir(HERE)


def main(argv):
    cmd, d, rest = argv[0], argv[1], argv[2:]
    if cmd == "pack":
        pack(d, rest)
    elif cmd == "unpack":
        unpack(d)
    else:
        raise SystemExit(f"forkctl: unknown command {cmd!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
