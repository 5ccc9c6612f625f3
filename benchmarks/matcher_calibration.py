"""How well the default (offline) ask_human matcher judges questions it has not seen.

1. HiL-Bench's public blocker registries, **even-numbered tasks only** (the odd ones are never read):
   each example question asked with itself removed from its blocker's examples (leave-one-out:
   recall and wrong-blocker rate), every task's questions asked against a task on another database
   or repository (accepted = wrong), and generic questions naming nothing task-specific
   (``ask/data/matcher_generic_questions.yaml``; accepted = wrong). Targets: leave-one-out recall
   >= 0.85 with wrong-blocker <= 2%; foreign and generic acceptance <= 1%.
2. Our own labelled questions on the built-in tasks (TUNE and HELD-OUT parts, per rule).

HiL-Bench's LLM judge vs humans: precision 0.97, recall 0.91. Nothing is downloaded: give a
checkout of the release (``git clone`` of hilbenchauthors/hil-bench, or any copy with its
harbor_sql/ and harbor_swe/ folders)::

    .venv/bin/python benchmarks/matcher_calibration.py --hilbench PATH [--verbose] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from impasse.ask.calibration import TUNE, load_questions, release_report, report, run, split_of
from impasse.ask.matcher import OfflineMatcher


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hilbench", type=Path, help="A checkout of HiL-Bench's public release")
    ap.add_argument("--json", type=Path, help="Also write the figures here")
    ap.add_argument("--verbose", action="store_true", help="List the misses on our TUNE questions")
    a = ap.parse_args()
    matcher = OfflineMatcher()
    figures = {}
    if a.hilbench:
        text, figures = release_report(matcher, a.hilbench)
        print(text)
    else:
        print("(no --hilbench checkout given: HiL-Bench's registries not measured)")
    print(report(matcher))
    if a.json:
        a.json.write_text(json.dumps(figures, indent=1))
    if a.verbose:  # the misses of TUNE only: tuning must not look at HELD-OUT
        for o in run(matcher, [i for i in load_questions() if split_of(i.task_id) == TUNE]):
            if o.got != o.item.expected:
                print(f"MISS {o.item.task_id}: {o.item.question!r} want {o.item.expected} ({o.item.rule}), "
                      f"got {o.got} ({o.rule})")


if __name__ == "__main__":
    main()
