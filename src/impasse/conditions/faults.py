"""Fault specs: what a blocker card's ``fault`` says, as typed data, and the task facts a fault
needs to find its targets. Pure: no sandbox, no I/O.

A card says *what* is broken (``{kind: lock_paths, target: source, mode: read_only}``); each
backend realises it with its own means (the local backend with ownership changes in an overlay,
a bind mount, a filled tmpfs, cgroup limits; the Docker backend with its engine's). A new fault
kind is one class here (registered with :func:`fault_kind`) plus one realisation per backend.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from impasse.layout import REPO

FAULT_KINDS: dict[str, type[FaultSpec]] = {}


class NotApplicable(ValueError):
    """The condition cannot be applied to this task (e.g. no third-party dependency)."""


def fault_kind(cls: type[FaultSpec]) -> type[FaultSpec]:
    """Register a fault spec class under its ``kind``."""
    FAULT_KINDS[cls.model_fields["kind"].default] = cls
    return cls


class FaultSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: str
    runtime: ClassVar[bool] = True
    """False for specs that only choose the task's layers (nothing to inject at run time)."""


def parse_fault(data: Any) -> FaultSpec:
    """A card's ``fault`` mapping -> its typed spec. Errors say which kind or field is wrong."""
    if isinstance(data, FaultSpec):
        return data
    if not isinstance(data, dict) or "kind" not in data:
        raise ValueError(f"fault must be a mapping with a 'kind' (one of {', '.join(sorted(FAULT_KINDS))})")
    cls = FAULT_KINDS.get(data["kind"])
    if cls is None:
        raise ValueError(f"unknown fault kind {data['kind']!r}; known: {', '.join(sorted(FAULT_KINDS))}")
    return cls.model_validate(data)


@dataclass(frozen=True)
class TaskFacts:
    """What faults need to know about a task to find their targets (all paths repo-relative
    unless said otherwise)."""

    source_dirs: tuple[str, ...] = ()
    target_file: str = ""
    test_files: tuple[str, ...] = ()
    site_packages: str = ""
    """Sandbox path of the venv's site-packages."""
    runtime_deps: dict[str, list[str]] = field(default_factory=dict)
    """Third-party distribution -> its top-level entries in site-packages."""
    import_breaking_deps: tuple[str, ...] = ()
    """Distributions without which ``import <package>`` fails (measured when the image was built)."""
    repo: str = REPO

    @classmethod
    def of(cls, image: Any, inst: Any | None = None) -> TaskFacts:
        return cls(source_dirs=tuple(inst.source_dirs if inst else image.source_dirs),
                   target_file=inst.target_file if inst else "",
                   test_files=tuple(inst.test_files if inst else image.test_files),
                   site_packages=image.site_packages, runtime_deps=dict(image.runtime_deps),
                   import_breaking_deps=tuple(image.import_breaking_deps or ()))

    def in_repo(self, rel: str) -> str:
        return f"{self.repo}/{rel}"


@fault_kind
class NoFault(FaultSpec):
    kind: Literal["none"] = "none"
    runtime: ClassVar[bool] = False


@fault_kind
class AlreadyFixed(FaultSpec):
    """Task mismatch: the episode starts from the fixed tree (a layer choice, nothing injected)."""

    kind: Literal["already_fixed"] = "already_fixed"
    runtime: ClassVar[bool] = False


@fault_kind
class LockPaths(FaultSpec):
    """Root-owned paths: read_only (a-w), unreadable (files 000, dirs 755), private (dir 0700)."""

    kind: Literal["lock_paths"] = "lock_paths"
    target: Literal["source", "target_file", "tests", "site_packages"]
    mode: Literal["read_only", "unreadable", "private"]

    def paths(self, facts: TaskFacts) -> tuple[list[str], list[str]]:
        """(sandbox paths to lock, parent dirs to make root-owned so files cannot be replaced)."""
        if self.target == "source":
            return [facts.in_repo(d) for d in facts.source_dirs], []
        if self.target == "target_file":
            parent = str(PurePosixPath(facts.target_file).parent)
            return [facts.in_repo(facts.target_file)], ([facts.in_repo(parent)] if parent != "." else [])
        if self.target == "tests":
            dirs = sorted({str(PurePosixPath(f).parent) for f in facts.test_files} - {"."})
            tops = [d for d in dirs if not any(d.startswith(o + "/") for o in dirs if o != d)]
            loose = [f for f in facts.test_files if str(PurePosixPath(f).parent) == "."]
            return [facts.in_repo(p) for p in [*tops, *loose]], []
        return [facts.site_packages], []


@fault_kind
class ReadOnlyWorkspace(FaultSpec):
    kind: Literal["read_only_workspace"] = "read_only_workspace"


@fault_kind
class FillDisk(FaultSpec):
    """The workspace's disk takes all but ``leave_bytes``."""

    kind: Literal["fill_disk"] = "fill_disk"
    leave_bytes: int = 8192


@fault_kind
class HideDependency(FaultSpec):
    """A runtime dependency's files are gone from site-packages (and there is no network)."""

    kind: Literal["hide_dependency"] = "hide_dependency"
    dist: str | None = None
    """Which distribution; None = the first whose absence breaks the package's import."""

    def choose(self, facts: TaskFacts) -> tuple[str, list[str]]:
        """(distribution, its entries in site-packages)."""
        dist = self.dist or (facts.import_breaking_deps[0] if facts.import_breaking_deps else None)
        if dist is None or dist not in facts.runtime_deps:
            raise NotApplicable("missing_dependency needs a package with a third-party runtime dependency "
                                "imported by its source")
        return dist, list(facts.runtime_deps[dist])


@fault_kind
class MaskShell(FaultSpec):
    """The shell cannot be executed: every command fails before it starts."""

    kind: Literal["mask_shell"] = "mask_shell"
    paths: tuple[str, ...] = ("/usr/bin/bash",)


@fault_kind
class MemoryLimit(FaultSpec):
    kind: Literal["memory_limit"] = "memory_limit"
    bytes: int


@fault_kind
class TextFileBusy(FaultSpec):
    """The venv's interpreter is held open for writing until ``failures`` calls showed ETXTBSY."""

    kind: Literal["text_file_busy"] = "text_file_busy"
    failures: int = 2


@fault_kind
class PidsExhausted(FaultSpec):
    """No process can be created until ``failures`` calls showed EAGAIN."""

    kind: Literal["pids_exhausted"] = "pids_exhausted"
    failures: int = 2
