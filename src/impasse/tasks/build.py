"""Turn packages into validated task instances (SWE-smith's pipeline, without Docker).

For each package: image -> candidate mutations (deterministic for a seed, balanced over
operators) -> validation in a sandbox with a timeout -> problem statement -> instance.
Validation rule (SWE-smith's): the run did not time out, >= 1 test went PASSED -> FAILED
(FAIL_TO_PASS) and >= 1 test stayed PASSED (PASS_TO_PASS). ERROR/SKIPPED never count as F2P.
Candidates first run only the test files that mention the mutated function (cheap rejection of
survivors); a candidate that fails there is re-run on the whole suite to record full F2P/P2P.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from impasse import paths
from impasse.layout import AGENT_GID, AGENT_UID
from impasse.tasks.image import Image, build_image, load_image, test_command
from impasse.tasks.layer import commit_tree, copy_repo
from impasse.tasks.pytest_log import has_summary, parse_statuses
from impasse.tasks.schema import TaskInstance, read_instances, write_jsonl
from impasse.tasks.statement import STATEMENT_VERSION, write_statement
from impasse.tasks.suite import PackageSpec

if TYPE_CHECKING:  # libcst takes a second to import: only builds need it
    from impasse.tasks.mutate import Mutation

Log = Callable[[str], None]
HARNESS_OUTPUT = 32 * 1024 * 1024  # a whole suite's -rA report


@dataclass
class BuildReport:
    package: str
    version: str = ""
    instances: list[TaskInstance] = field(default_factory=list)
    candidates: int = 0
    image_seconds: float = 0.0
    validate_seconds: float = 0.0
    error: str = ""
    reused: bool = False


@dataclass(frozen=True)
class Verdict:
    valid: bool
    reason: str
    f2p: list[str] = field(default_factory=list)
    p2p: list[str] = field(default_factory=list)
    fail_seconds: float | None = None
    """How long the FAIL_TO_PASS tests alone took: what an agent's test run of the task costs."""


RECORD_VERSION = 2
"""Bump when an instance row gains a field the build measures (2: fail_seconds): cached instances
are then validated again."""


def judge(baseline: dict[str, str], after: dict[str, str], timed_out: bool) -> Verdict:
    """The validation rule, as a pure function of two status maps."""
    if timed_out:
        return Verdict(False, "timed out")
    f2p = sorted(n for n, s in after.items() if s == "FAILED" and baseline.get(n) == "PASSED")
    p2p = sorted(n for n, s in after.items() if s == "PASSED" and baseline.get(n) == "PASSED")
    if not f2p:
        return Verdict(False, "no test went from PASSED to FAILED", f2p, p2p)
    if not p2p:
        return Verdict(False, "no test stayed PASSED", f2p, p2p)
    return Verdict(True, "valid", f2p, p2p)


def _candidate_layer(mutation: Mutation, image: Image, root: Path) -> Path:
    repo = root / "workspace" / "repo"
    target = repo / mutation.file
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(mutation.mutated)
    shutil.copymode(image.layer / "workspace" / "repo" / mutation.file, target)
    for p in [root / "workspace", *(repo / d for d in target.relative_to(repo).parents), target]:
        os.chown(p, AGENT_UID, AGENT_GID)
    return root


@cache
def _test_texts(key: str) -> dict[str, str]:
    """The image's test files, read once per process (every candidate consults them)."""
    image = load_image(key)
    repo = image.layer / "workspace" / "repo"
    return {f: (repo / f).read_text(errors="replace") for f in image.test_files}


def relevant_tests(image: Image, function: str) -> list[str]:
    """Test files whose text mentions the mutated function (by name)."""
    if not function or function.startswith("__"):
        return []
    return [f for f, text in _test_texts(image.ref).items() if function in text]


def validate(mutation: Mutation, image: Image, backend, *, log: Log = lambda _m: None) -> tuple[Verdict, str]:
    """-> (verdict, pytest --tb=short output of the first F2P tests, for the statement)."""
    # A mutation can loop forever; judge it against the clean suite's own time, not a fixed minute.
    timeout = min(image.spec.timeout, max(15.0, 4 * image.suite_seconds))
    with tempfile.TemporaryDirectory(dir=paths.cache_root()) as tmp:
        layer = _candidate_layer(mutation, image, Path(tmp))
        with backend.create([layer, image.layer]) as sb:
            files = relevant_tests(image, mutation.function)
            if files:
                quick = test_command(image.spec, files)
                res = sb.exec(quick, timeout=timeout, output_limit=HARNESS_OUTPUT)
                if res.timed_out:
                    return Verdict(False, "timed out"), ""
                verdict = judge(image.baseline, parse_statuses(res.stdout, image.baseline), False)
                if not verdict.f2p:
                    return Verdict(False, "no test in the relevant files went from PASSED to FAILED"), ""
            res = sb.exec(image.test_cmd, timeout=timeout, output_limit=HARNESS_OUTPUT)
            if not res.timed_out and not has_summary(res.stdout):
                return Verdict(False, f"the test run did not finish (exit {res.exit_code})"), ""
            verdict = judge(image.baseline, parse_statuses(res.stdout, image.baseline), res.timed_out)
            if not verdict.valid:
                return verdict, ""
            # The FAIL_TO_PASS tests alone: they must fail in isolation too (an agent reproduces the
            # report that way), and their tracebacks feed the problem statement.
            alone = sb.exec(test_command(image.spec, [*verdict.f2p, "--tb=short"]), timeout=timeout,
                            output_limit=HARNESS_OUTPUT)
            statuses = parse_statuses(alone.stdout, set(verdict.f2p))
            if any(statuses.get(t) != "FAILED" for t in verdict.f2p):
                return Verdict(False, "a FAIL_TO_PASS test does not fail when run alone (order-dependent)"), ""
            # Timed twice, the faster kept: one run on a busy machine can take several times longer.
            again = sb.exec(test_command(image.spec, verdict.f2p), timeout=timeout, output_limit=HARNESS_OUTPUT)
            took = min(alone.duration_s, again.duration_s)
            return dataclasses.replace(verdict, fail_seconds=round(took, 3)), alone.output


def package_tasks_dir(key: str) -> Path:
    return paths.tasks_dir() / key


def load_instances(key: str) -> list[TaskInstance]:
    path = package_tasks_dir(key) / "instances.jsonl"
    return read_instances(path) if path.exists() else []


def all_instances() -> list[TaskInstance]:
    root = paths.tasks_dir()
    if not root.is_dir():
        return []
    return [inst for d in sorted(root.iterdir()) if d.is_dir() for inst in load_instances(d.name)]


def build_package(spec: PackageSpec, backend, *, max_instances: int = 5, seed: int = 0, force: bool = False,
                  max_attempts: int | None = None, log: Log = lambda _m: None) -> BuildReport:
    """Build (or reuse) one package's image and instances. Serialised per package with a file
    lock, so parallel builds (or test workers) never race on the same cache entries."""
    paths.tasks_dir().mkdir(parents=True, exist_ok=True)
    with open(paths.tasks_dir() / f".{spec.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build_package(spec, backend, max_instances=max_instances, seed=seed, force=force,
                              max_attempts=max_attempts, log=log)


def _build_package(spec: PackageSpec, backend, *, max_instances: int, seed: int, force: bool,
                   max_attempts: int | None, log: Log) -> BuildReport:
    report = BuildReport(spec.name, spec.version or "")
    t0 = time.monotonic()
    image = build_image(spec, backend, force=force, log=log)
    report.version = image.version
    report.image_seconds = round(time.monotonic() - t0, 2)
    out_dir = package_tasks_dir(image.key)
    stamp = out_dir / "build.json"
    settings = {"seed": seed, "max_instances": max_instances, "image": image.ref, "statement": STATEMENT_VERSION,
                "record": RECORD_VERSION}
    if not force and stamp.exists() and json.loads(stamp.read_text()) == settings:
        report.instances = load_instances(image.key)
        report.reused = True
        return report
    repo = image.layer / "workspace" / "repo"
    sources = {f: (repo / f).read_text(errors="replace") for f in image.source_files}
    from impasse.tasks.mutate import candidate_order, enumerate_sites, mutate

    order = candidate_order(enumerate_sites(sources), seed)
    with tempfile.TemporaryDirectory(dir=paths.cache_root()) as tmp:
        base_commit = commit_tree(copy_repo(image, Path(tmp) / "clean"), f"{image.package} {image.version}")
    used_functions: set[tuple[str, str]] = set()
    attempts = max_attempts or max_instances * 12
    t1 = time.monotonic()
    for file, op, site in order:
        if len(report.instances) >= max_instances or report.candidates >= attempts:
            break
        m = mutate(sources[file], file, op, site, seed)
        if m is None or (file, m.function) in used_functions:
            continue
        report.candidates += 1
        verdict, detail = validate(m, image, backend, log=log)
        log(f"{image.key}: candidate {report.candidates} {op} in {file}:{m.function} -> {verdict.reason}")
        if not verdict.valid:
            continue
        used_functions.add((file, m.function))
        statement = write_statement(image.package, image.version, verdict.f2p, detail, repo, set(image.test_files))
        report.instances.append(TaskInstance(
            instance_id=f"{_slug(image.package)}__{image.version}.{op}__{m.digest}", repo=f"pypi/{image.package}",
            base_commit=base_commit, patch=m.diff(), problem_statement=statement, FAIL_TO_PASS=verdict.f2p,
            PASS_TO_PASS=verdict.p2p, version=image.version,
            created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), package=image.package,
            package_version=image.version, operator=op, target_file=file, target_function=m.function,
            test_cmd=image.test_cmd, image=image.ref, runtime_deps=sorted(image.runtime_deps),
            source_dirs=image.source_dirs, test_files=image.test_files, fail_seconds=verdict.fail_seconds))
    report.validate_seconds = round(time.monotonic() - t1, 2)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(report.instances, out_dir / "instances.jsonl")
    stamp.write_text(json.dumps(settings))
    return report


def _slug(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")
