"""Grading: the agent's patch, applied to a clean copy of the task, judged by FAIL_TO_PASS and
PASS_TO_PASS (SWE-bench semantics: resolved iff every listed test passes; absent = failed).

Only source changes count: hunks touching test files, conftest.py or files outside the repo's
source are dropped first, so weakening or skipping tests can never resolve a task.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

from impasse.sandbox.uselock import create_rebuilding
from impasse.tasks.image import is_test_path, load_image
from impasse.tasks.layer import instance_layer
from impasse.tasks.pytest_log import parse_statuses
from impasse.tasks.schema import TaskInstance

_BLOCK = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)


def source_only(patch: str) -> tuple[str, list[str]]:
    """-> (patch without test-file hunks, dropped paths)."""
    starts = [m.start() for m in _BLOCK.finditer(patch)]
    kept, dropped = [], []
    for i, start in enumerate(starts):
        block = patch[start: starts[i + 1] if i + 1 < len(starts) else len(patch)]
        path = _BLOCK.match(block).group(2)
        if is_test_path(path) or path.endswith(".pth") or "sitecustomize" in path or not path.endswith(".py"):
            dropped.append(path)
        else:
            kept.append(block)
    return "".join(kept), dropped


def run_tests(sb, inst: TaskInstance, node_ids: list[str], timeout: float):
    """Run these node ids with the task's test command -> (exec result, {node id: status})."""
    ids = " ".join(shlex.quote(t) for t in node_ids)
    res = sb.exec(f"{inst.test_cmd} {ids}", timeout=timeout, output_limit=32 * 1024 * 1024)
    return res, parse_statuses(res.stdout, set(node_ids))


def gold_fix(inst: TaskInstance) -> str:
    """The reverse of the bug patch, shaped like an agent's patch (``git diff`` of the fixed tree)."""
    import subprocess
    import tempfile

    from impasse.tasks.layer import GIT_ENV, apply_patch, commit_tree, copy_repo

    image = load_image(inst.image)
    with tempfile.TemporaryDirectory() as tmp:
        repo = copy_repo(image, Path(tmp) / "repo")
        apply_patch(repo, inst.patch)
        commit_tree(repo, "bug")
        apply_patch(repo, inst.patch, reverse=True)
        out = subprocess.run(["git", "-c", "safe.directory=*", "-C", str(repo), "diff"], env=GIT_ENV,
                             capture_output=True, text=True, check=True)
    return out.stdout


def grade(backend, inst: TaskInstance, patch: str, timeout: float = 300.0, cache_dir: Path | None = None) -> dict[str, Any]:
    """Grade ``patch``. With ``cache_dir``, identical (instance, source patch) pairs are graded once:
    reference agents often produce the very same patch across conditions and interfaces."""
    model_patch, _ = source_only(patch)
    key = hashlib.sha256(f"{inst.instance_id}\n{model_patch}".encode()).hexdigest()[:20]
    cached = cache_dir / f"{key}.json" if cache_dir else None
    if cached and cached.exists():
        return {**json.loads(cached.read_text()), "dropped_files": source_only(patch)[1], "cached": True}
    result = _grade(backend, inst, patch, timeout)
    if cached:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(result))
        tmp.replace(cached)
    return result


def _grade(backend, inst: TaskInstance, patch: str, timeout: float) -> dict[str, Any]:
    image = load_image(inst.image)
    if image is None:
        raise FileNotFoundError(f"task image {inst.image} is not built")
    model_patch, dropped = source_only(patch)
    result: dict[str, Any] = {"resolved": False, "patch_applied": False, "dropped_files": dropped,
                              "model_patch": model_patch}
    if not model_patch.strip():
        result["reason"] = "empty patch"
        return result
    with create_rebuilding(backend, lambda: [instance_layer(inst, image), image.layer]) as sb:
        sb.write_file("/tmp/agent.patch", model_patch)
        applied = sb.exec("git apply --whitespace=nowarn /tmp/agent.patch", timeout=60)
        if applied.exit_code != 0:
            result["reason"] = f"patch does not apply: {applied.stderr.strip()[:300]}"
            return result
        result["patch_applied"] = True
        res, statuses = run_tests(sb, inst, [*inst.FAIL_TO_PASS, *inst.PASS_TO_PASS], timeout)
    f2p_failed = [t for t in inst.FAIL_TO_PASS if statuses.get(t) not in ("PASSED", "XFAIL")]
    p2p_failed = [t for t in inst.PASS_TO_PASS if statuses.get(t) not in ("PASSED", "XFAIL")]
    result.update(resolved=not f2p_failed and not p2p_failed and not res.timed_out,
                  f2p_passed=len(inst.FAIL_TO_PASS) - len(f2p_failed), f2p_total=len(inst.FAIL_TO_PASS),
                  p2p_failed=p2p_failed[:20], p2p_total=len(inst.PASS_TO_PASS), timed_out=res.timed_out)
    return result


def verify_instance(backend, inst: TaskInstance) -> dict[str, Any]:
    """Re-check an instance end to end: with the bug every FAIL_TO_PASS test fails, and the
    gold fix (the patch reversed) makes every FAIL_TO_PASS and PASS_TO_PASS test pass."""
    image = load_image(inst.image)
    if image is None:
        raise FileNotFoundError(f"task image {inst.image} is not built")
    with create_rebuilding(backend, lambda: [instance_layer(inst, image), image.layer]) as sb:
        _, statuses = run_tests(sb, inst, inst.FAIL_TO_PASS, 300)
    still_passing = [t for t in inst.FAIL_TO_PASS if statuses.get(t) != "FAILED"]
    gold = grade(backend, inst, gold_fix(inst))
    return {"instance_id": inst.instance_id, "bug_fails_f2p": not still_passing, "not_failing": still_passing[:5],
            "gold_resolves": gold["resolved"], "p2p_failed_with_gold": gold.get("p2p_failed", []),
            "ok": not still_passing and gold["resolved"]}
