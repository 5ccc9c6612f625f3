"""How long `make run` takes from a fresh clone and an empty cache, phase by phase.

Clones this repository's HEAD into a scratch directory, points ``IMPASSE_CACHE`` (task images,
sdists) and ``PIP_CACHE_DIR`` (wheels) at empty directories there, runs ``make run`` and times
each phase from its output as it streams: the virtualenv and its install, the task build, the
episodes, the report, the ask slice and its report. Debian packages already on the machine are
not reinstalled (a fresh machine adds ``apt-get install bubblewrap sudo`` once, ~30 s).

    python benchmarks/main_job.py [--warm-pip] [--keep DIR]

``--warm-pip`` keeps pip's own cache (a machine that has installed impasse before). The CPU time
of the whole job is printed too: on a shared machine it moves less than the wall time.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_MIN = 20.0

# (phase, a regular expression on the line that starts it); phases follow one another.
PHASES = [
    ("virtualenv and install (impasse[bench])", r"-m venv \.venv|pip install"),
    ("task build (the default suite)", r"making sure the .* tasks are built"),
    ("episodes (the main job)", r"^run \S+: \d+ episodes"),
    ("report (annotate, HTML, JSON)", r"impasse report runs/latest --html"),
    ("ask slice (episodes)", r"impasse run --suite ask"),
    ("ask report", r"impasse report runs/latest/ask"),
]


def timed_make(clone: Path, env: dict[str, str], log: Path) -> tuple[list[tuple[str, float]], int]:
    """Run ``make run``; -> (phase, seconds) in order, and make's exit code."""
    marks: list[tuple[str, float]] = []
    t0 = time.monotonic()
    with open(log, "w", buffering=1) as out:  # line-buffered: the log can be followed as it runs
        proc = subprocess.Popen(["make", "run"], cwd=clone, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, bufsize=1)
        assert proc.stdout is not None
        nxt = 0
        for line in proc.stdout:
            out.write(line)
            for k in range(nxt, len(PHASES)):
                if re.search(PHASES[k][1], line.strip()):
                    marks.append((PHASES[k][0], time.monotonic() - t0))
                    nxt = k + 1
                    break
        code = proc.wait()
    end = time.monotonic() - t0
    spans = [(name, (marks[i + 1][1] if i + 1 < len(marks) else end) - at) for i, (name, at) in enumerate(marks)]
    return spans, code


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warm-pip", action="store_true", help="keep pip's cache (wheels downloaded before)")
    ap.add_argument("--keep", type=Path, help="clone into this (new) directory and keep it")
    a = ap.parse_args()
    root = a.keep or Path(tempfile.mkdtemp(prefix="impasse-main-job-"))
    clone = root / "impasse"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPO), str(clone)], check=True)
    head = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IMPASSE_", "VIRTUAL_ENV"))}
    env["IMPASSE_CACHE"] = str(root / "cache")
    if not a.warm_pip:
        env["PIP_CACHE_DIR"] = str(root / "pip-cache")
    print(f"make run in a fresh clone of {head} ({clone}), empty task cache"
          f"{', pip cache kept' if a.warm_pip else ', empty pip cache'}", flush=True)
    try:
        spans, code = timed_make(clone, env, root / "make-run.log")
    finally:
        if a.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    total = sum(s for _, s in spans)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # make and everything it waited for
    for name, s in spans:
        print(f"  {name:<42} {s / 60:6.1f} min")
    print(f"  {'total':<42} {total / 60:6.1f} min   (target {TARGET_MIN:g} min; make exit {code})")
    cpu = usage.ru_utime + usage.ru_stime
    print(f"  CPU time of the whole job: {cpu / 60:.1f} min (user {usage.ru_utime / 60:.1f}, system "
          f"{usage.ru_stime / 60:.1f}); on {os.cpu_count()} cores at least {cpu / 60 / (os.cpu_count() or 1):.1f} min")
    if code != 0:
        print(f"make run failed: see {root / 'make-run.log'}" if a.keep else "make run failed (use --keep DIR to "
              "see its log)", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
