"""The Docker-API backend (Docker, or podman's compatible service): see docs/docker.md."""

from impasse.sandbox.docker.sandbox import DockerBackend

__all__ = ["DockerBackend"]
