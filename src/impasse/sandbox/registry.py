"""Backends by name. ``local`` (namespaces + overlay, root, no daemon) is the default; ``plain``
runs in a plain directory with no isolation (tests, trusted containers); ``docker`` talks to any
Docker-API engine."""

from __future__ import annotations

from functools import cache

from impasse.registry import Registry
from impasse.sandbox.base import Backend

BACKENDS: Registry[type[Backend]] = Registry("backend")
BACKENDS.add("local", "impasse.sandbox.local:LocalBackend")
BACKENDS.add("plain", "impasse.sandbox.plain:PlainBackend")
BACKENDS.add("docker", "impasse.sandbox.docker:DockerBackend")


@cache
def get_backend(name: str = "local") -> Backend:
    """One backend per process and name (creating one sweeps stale episodes)."""
    return BACKENDS.get(name)()
