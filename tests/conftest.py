"""Shared fixtures. Tests use their own cache (~/.cache/impasse-tests) so they never touch a
user's built suite; task images are built once from PyPI and reused on later runs."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("IMPASSE_CACHE", str(Path.home() / ".cache" / "impasse-tests"))

import pytest  # noqa: E402


def _needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("the local sandbox needs root (overlayfs, cgroups, setpriv); run the suite as root")


@pytest.fixture(scope="session")
def backend():
    _needs_root()
    from impasse.sandbox.local import LocalBackend

    return LocalBackend()


@pytest.fixture(scope="session")
def glom_tasks(backend):
    """A default-suite package with third-party runtime dependencies (boltons, face, attrs)."""
    from impasse.tasks.build import build_package
    from impasse.tasks.suite import spec_for

    report = build_package(spec_for("glom", "25.12.0"), backend, max_instances=2, seed=0)
    assert len(report.instances) == 2, report
    return report.instances


@pytest.fixture(scope="session")
def glom_task(glom_tasks):
    return glom_tasks[0]


@pytest.fixture(scope="session")
def inflection_tasks(backend):
    """A package that is not in the default suite: built with no per-package settings at all."""
    from impasse.tasks.build import build_package
    from impasse.tasks.suite import PackageSpec

    report = build_package(PackageSpec(name="inflection", version="0.5.1"), backend, max_instances=2, seed=0)
    assert report.instances, report
    return report.instances


# ----------------------------------------------------------------------------- Docker engine
@pytest.fixture(scope="session")
def docker_client():
    """A real Docker-API engine: podman's compatible service started by scripts/engine.sh (once
    per session; it is idempotent). Skips, with the script's own reason, only if it cannot start."""
    import subprocess

    script = Path(__file__).resolve().parent.parent / "scripts" / "engine.sh"
    sock = os.environ.get("IMPASSE_ENGINE_SOCK", "/run/impasse-podman.sock")
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        pytest.skip(f"no Docker-API engine on this machine: {(proc.stderr or proc.stdout).strip()[-500:]}")
    docker = pytest.importorskip("docker", reason="the docker SDK is not installed (pip install 'impasse[docker]')")
    client = docker.DockerClient(base_url=f"unix://{sock}")
    yield client
    client.close()
