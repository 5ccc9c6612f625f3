"""Benchmark suites by name (the registry lives with the environments each suite makes)."""

from impasse.env.registry import SUITES

__all__ = ["SUITES"]
