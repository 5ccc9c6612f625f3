"""A release archive's names become paths in the cache: one that would land outside (or hide
itself) is refused before anything is installed, and an empty cache is not even created. Fast:
no task is built."""

import io
import json
import os
import subprocess
import sys
import tarfile

import pytest

IMPASSE = [sys.executable, "-m", "impasse.cli"]


def archive_naming(tmp_path, images=None, layers=None, name="r9"):
    doc = {"format": "impasse.release/2", "name": name, "instances_sha256": "0" * 64,
           "images": images or {}, "image_meta": dict.fromkeys(images or {}, "0" * 64), "layers": layers or {}}
    path = tmp_path / "named.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        data = json.dumps(doc).encode()
        info = tarfile.TarInfo(f"{name}/release.json")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize("images,layers", [({"../../outside@0123456789abcdef": "0" * 64}, None),
                                           ({"glom-1.0@../../x": "0" * 64}, None),
                                           (None, {"../escape@0123456789abcdef": "0" * 64}),
                                           (None, {".hidden": "0" * 64})])
def test_a_name_that_is_not_a_plain_file_name_is_refused(tmp_path, images, layers):
    cache = tmp_path / "cache"
    r = subprocess.run(IMPASSE + ["tasks", "release", "import", str(archive_naming(tmp_path, images, layers))],
                       capture_output=True, text=True, env={**os.environ, "IMPASSE_CACHE": str(cache)})
    assert r.returncode == 2 and "not a plain file name" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not cache.exists()
