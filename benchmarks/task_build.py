"""Time to build and validate tasks per package, and valid instances per minute, from an empty
cache (downloads from PyPI). Default: three packages; `--suite default` builds the whole suite.

Baseline in the same run: the package's own clean test-suite time, since validation is mostly
running the suite on each candidate.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

PACKAGES = ["parse", "isodate", "glom"]


def main() -> None:
    tmp = tempfile.mkdtemp(prefix="impasse-bench-cache-")
    os.environ["IMPASSE_CACHE"] = tmp
    from impasse.sandbox.local import LocalBackend
    from impasse.tasks.build import build_package
    from impasse.tasks.image import load_image
    from impasse.tasks.suite import load_suite, spec_for

    specs = (load_suite("default").packages if "--suite" in sys.argv else [spec_for(p, None) for p in PACKAGES])
    backend = LocalBackend()
    total_valid, t_all = 0, time.perf_counter()
    print(f"{'package':<22}{'image s':>9}{'validate s':>12}{'candidates':>12}{'valid':>7}{'suite s':>9}")
    for spec in specs:
        r = build_package(spec, backend, max_instances=5)
        img = load_image(f"{r.package}-{r.version}")
        total_valid += len(r.instances)
        print(f"{r.package:<22}{r.image_seconds:>9.1f}{r.validate_seconds:>12.1f}{r.candidates:>12}"
              f"{len(r.instances):>7}{img.suite_seconds:>9.1f}")
    minutes = (time.perf_counter() - t_all) / 60
    print(f"\n{total_valid} valid instances in {minutes:.1f} min: {total_valid / minutes:.1f} valid instances/minute")
    import shutil

    from impasse.sandbox.local import sweep_stale

    sweep_stale()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
