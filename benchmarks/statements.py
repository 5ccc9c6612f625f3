"""Problem statements over every built task instance: do the reproductions parse, and does any
path, frame or line of the package source leak? For each instance, "before" is the statement
stored at build time; "after" is what the current writer produces from a fresh ``--tb=short``
run of its FAIL_TO_PASS tests in the sandbox (the same input the build gives it).

Needs root and built tasks (``impasse tasks build --suite default``); uses ``$IMPASSE_CACHE``.
Prints figures and the problems found; asserts nothing.

    sudo .venv/bin/python benchmarks/statements.py [--write]   # --write: also store the new statements
"""

from __future__ import annotations

import sys
import time
from collections import Counter

from impasse.sandbox.local import LocalBackend
from impasse.tasks.build import HARNESS_OUTPUT, all_instances, package_tasks_dir
from impasse.tasks.image import load_image, test_command
from impasse.tasks.layer import instance_layer
from impasse.tasks.schema import write_jsonl
from impasse.tasks.statement import statement_problems, write_statement


def main(write: bool) -> None:
    backend = LocalBackend()
    insts = all_instances()
    before, after, per_pkg = Counter(), Counter(), Counter()
    updated: dict[str, list] = {}
    t0 = time.monotonic()
    for inst in insts:
        image = load_image(inst.image)
        if image is None:
            print(f"skip {inst.instance_id}: image {inst.image} not built")
            continue
        source = set(image.source_files) - set(image.test_files)
        with backend.create([instance_layer(inst, image), image.layer]) as sb:
            res = sb.exec(test_command(image.spec, [*inst.FAIL_TO_PASS, "--tb=short"]), timeout=image.spec.timeout,
                          output_limit=HARNESS_OUTPUT)
        new = write_statement(image.package, image.version, inst.FAIL_TO_PASS, res.output,
                              image.layer / "workspace" / "repo", set(image.test_files))
        old_p, new_p = statement_problems(inst.problem_statement, source), statement_problems(new, source)
        before["instances"] += 1
        before["ok"] += not old_p
        after["ok"] += not new_p
        before["parse_fail"] += any("parse" in p for p in old_p)
        after["parse_fail"] += any("parse" in p for p in new_p)
        before["source_leak"] += any("parse" not in p for p in old_p)
        after["source_leak"] += any("parse" not in p for p in new_p)
        per_pkg[inst.package] += 1
        for p in new_p:
            print(f"AFTER {inst.instance_id}: {p}")
        updated.setdefault(image.key, []).append(inst.model_copy(update={"problem_statement": new}))
    n = before["instances"]
    print(f"\n{n} instances from {len(per_pkg)} packages in {time.monotonic() - t0:.0f}s")
    for label, c in (("before (stored)", before), ("after (current writer)", after)):
        print(f"  {label:<24} clean {c['ok']}/{n}   reproduction does not parse {c['parse_fail']}   "
              f"package source named {c['source_leak']}")
    if write:
        for key, rows in updated.items():
            write_jsonl(rows, package_tasks_dir(key) / "instances.jsonl")
        print("statements written back to the task cache")


if __name__ == "__main__":
    main("--write" in sys.argv)
