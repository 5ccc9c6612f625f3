"""Compare two ``impasse.report/1`` JSON files episode by episode on every contract field.

Used to show that a change kept behaviour: the main job's report before and after, on the same
run plan, must agree on every contract field of every episode (timings are not contract fields).

    python benchmarks/compare_reports.py BEFORE.json AFTER.json [--fields f1,f2]

Exit 0 when they agree; 1 with a list of differences otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from impasse.report.report import CONTRACT  # noqa: E402


def differences(before: dict[str, Any], after: dict[str, Any], fields: tuple[str, ...] = CONTRACT,
                common_only: bool = False) -> list[str]:
    a = {e["episode_id"]: e for e in before["episodes"]}
    b = {e["episode_id"]: e for e in after["episodes"]}
    out = [] if common_only else [f"only in before: {eid}" for eid in sorted(set(a) - set(b))]
    out += [] if common_only else [f"only in after: {eid}" for eid in sorted(set(b) - set(a))]
    for eid in sorted(set(a) & set(b)):
        for f in fields:
            if a[eid].get(f) != b[eid].get(f):
                out.append(f"{eid}: {f}: {change(a[eid].get(f), b[eid].get(f))}")
    return out


def change(old: Any, new: Any) -> str:
    """``old -> new``; for two lists (e.g. unsafe actions) only what one has and the other lacks."""
    if isinstance(old, list) and isinstance(new, list):
        gone = [x for x in old if x not in new]
        added = [x for x in new if x not in old]
        return f"only before {gone!r}; only after {added!r}"
    return f"{old!r} -> {new!r}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--fields", default=",".join(CONTRACT), help="contract fields to compare")
    ap.add_argument("--common", action="store_true", help="compare only the episodes both reports hold "
                                                          "(two runs of one plan stopped at different points)")
    args = ap.parse_args()
    before, after = (json.loads(p.read_text()) for p in (args.before, args.after))
    diffs = differences(before, after, tuple(args.fields.split(",")), args.common)
    n = len({e["episode_id"] for e in before["episodes"]} & {e["episode_id"] for e in after["episodes"]})
    print(f"{n} episodes in both; {len(diffs)} differences on {len(args.fields.split(','))} contract fields")
    for d in diffs[:50]:
        print("  " + d)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
