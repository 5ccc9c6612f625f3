"""Content digests of layer trees: what a layer *is*, independent of where or when it was built.

The digest covers every entry's relative path, type, mode, owner and content (a symlink's
target), in a fixed order, and nothing else (not times). Image builds are named by it, and
releases record it so that two machines can prove they run the same tasks.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

_CHUNK = 1 << 20


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def tree_digest(root: Path) -> str:
    """sha256 over (path, type, mode, uid, gid, content) of every entry below ``root``."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted([*dirnames, *filenames]):
            full = Path(dirpath) / name
            st = full.lstat()
            rel = str(full.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                body = "L:" + os.readlink(full)
            elif stat.S_ISREG(st.st_mode):
                body = "F:" + file_digest(full)
            elif stat.S_ISDIR(st.st_mode):
                body = "D"
            else:  # overlay whiteouts (char 0/0) and anything else: type and device only
                body = f"O:{stat.S_IFMT(st.st_mode)}:{st.st_rdev}"
            h.update(f"{rel}\0{stat.S_IMODE(st.st_mode):o}\0{st.st_uid}\0{st.st_gid}\0{body}\n".encode())
    return h.hexdigest()
