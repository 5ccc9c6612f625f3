"""The long fuzz run of the records impasse reads (trajectories, manifests, task files, tickets):
the properties of tests/test_fuzz_records.py, each with many more random examples than the suite
runs. Prints how many examples ran and every distinct failure (none is the target).

    python benchmarks/fuzz_records.py [EXAMPLES]     # default 5000 per property
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
os.environ["IMPASSE_FUZZ_EXAMPLES"] = sys.argv[1] if len(sys.argv) > 1 else "5000"

import test_fuzz_records as fuzz  # noqa: E402

PROPERTIES = [fuzz.test_a_mutated_trajectory_is_annotated_and_reported_or_refused_by_file_line_and_field,
              fuzz.test_a_mutated_manifest_resumes_or_is_refused_naming_the_field,
              fuzz.test_a_mutated_task_file_is_read_or_refused_by_line, fuzz.test_any_ticket_arguments_are_judged]


class TmpFactory:
    def __init__(self, root: Path) -> None:
        self.root, self.n = root, 0

    def mktemp(self, name: str) -> Path:
        self.n += 1
        p = self.root / f"{name}{self.n}"
        p.mkdir(parents=True)
        return p


def main() -> None:
    import tempfile

    n = int(os.environ["IMPASSE_FUZZ_EXAMPLES"])
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for prop in PROPERTIES:
            inner = prop.hypothesis.inner_test
            t = time.perf_counter()
            kwargs = {"tmp_path_factory": TmpFactory(Path(tmp))} if "tmp_path_factory" in inner.__code__.co_varnames else {}
            try:
                prop(**kwargs)
                status = "no failure"
            except Exception as e:  # noqa: BLE001 - report it and go on with the next property
                failures += 1
                status = f"FAILED: {type(e).__name__}: {str(e)[:300]}"
            print(f"{prop.__name__}: {n} examples in {time.perf_counter() - t:.1f} s: {status}")
    print(f"{failures} properties failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
