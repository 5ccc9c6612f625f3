"""Episode setup+teardown and per-command overhead of the local sandbox.

Baselines measured in the same run: host `bash -c true` (no sandbox at all) and a naive
"copy the repo" episode (cp -a of the task image into a fresh directory, then rm -rf).
Targets (issue #3): setup+teardown <= 5 ms median; command overhead <= 25 ms median.
Needs root and one built task (`impasse tasks build parse`).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import percentiles, show, timed  # noqa: E402

from impasse.sandbox.local import LocalBackend  # noqa: E402
from impasse.tasks.build import all_instances  # noqa: E402
from impasse.tasks.image import load_image  # noqa: E402
from impasse.tasks.layer import instance_layer  # noqa: E402


def main() -> None:
    insts = all_instances()
    if not insts:
        sys.exit("no built tasks: run `impasse tasks build parse` first")
    inst = insts[0]
    image = load_image(inst.image)
    layers = [instance_layer(inst, image), image.layer]
    backend = LocalBackend()

    def episode():
        backend.create(layers).close()

    def naive():
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["cp", "-a", str(image.layer / "workspace"), tmp], check=True)

    for _ in range(5):
        episode()
    setup = timed(episode, 200)
    copy = timed(naive, 20)
    host = timed(lambda: subprocess.run(["bash", "-c", "true"], check=True), 200)
    with backend.create(layers) as sb:
        for _ in range(5):
            sb.exec("true")
        cmd = timed(lambda: sb.exec("true"), 200)
        py = timed(lambda: sb.exec("python -c pass"), 50)
    host_py = timed(lambda: subprocess.run([str(shutil.which("python3")), "-c", "pass"], check=True), 50)
    print(f"task image {image.key}: {sum(f.stat().st_size for f in (image.layer / 'workspace').rglob('*') if f.is_file()) / 1e6:.0f} MB")
    show("episode lifecycle", [("sandbox setup+teardown (tmpfs+overlay+cgroup)", percentiles(setup)),
                               ("baseline: naive copy-the-repo episode", percentiles(copy))])
    show("per command", [("sandbox exec('true')", percentiles(cmd)), ("baseline: host bash -c true", percentiles(host)),
                         ("sandbox exec('python -c pass')", percentiles(py)),
                         ("baseline: host python -c pass", percentiles(host_py))])
    s, c, h = percentiles(setup)["median"], percentiles(copy)["median"], percentiles(host)["median"]
    overhead = percentiles(cmd)["median"] - h
    print(f"\nsetup+teardown {s:.2f} ms (target <= 5 ms): {c / s:.0f}x faster than copying the repo")
    print(f"command overhead {overhead:.2f} ms over host bash (target <= 25 ms)")


if __name__ == "__main__":
    main()
