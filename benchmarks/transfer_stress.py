"""Agent-side file transfers under concurrent load on each backend: N writes and reads of varied
content, every read checked against what was written (tests/transfer_stress.py). Prints, per
backend, the transfers, the silent mismatches (the defect: must be 0) and the retries the backend
needed to deliver exactly (podman's attach cuts a stream now and then under load).

    python benchmarks/transfer_stress.py [N] [--docker]     # N per backend, default 2000
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
os.environ.setdefault("IMPASSE_CACHE", str(Path.home() / ".cache" / "impasse-tests"))

from transfer_stress import stress  # noqa: E402


def main() -> None:
    from impasse.sandbox.local import LocalBackend
    from impasse.tasks.build import build_package
    from impasse.tasks.episode import open_episode
    from impasse.tasks.suite import spec_for

    n = int(next((a for a in sys.argv[1:] if a.isdigit()), "2000"))
    local = LocalBackend()
    task = build_package(spec_for("glom", "25.12.0"), local, max_instances=2, seed=0).instances[0]
    backends = [("local", local)]
    if "--docker" in sys.argv:
        from impasse.sandbox.docker.sandbox import DockerBackend

        backends.append(("docker", DockerBackend()))
    for name, be in backends:
        t = time.perf_counter()
        counts = stress(lambda be=be: open_episode(be, task, "clean"), transfers=n)
        print(f"{name}: {counts} in {time.perf_counter() - t:.0f} s")


if __name__ == "__main__":
    main()
