"""Benchmark suites by name."""

from impasse.registry import Registry

SUITES: Registry = Registry("suite")
SUITES.add("blockers", "impasse.suites.blockers:SUITE")
SUITES.add("ask", "impasse.suites.ask:SUITE")
