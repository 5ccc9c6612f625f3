"""Suites by name: each knows how to make the Env of one of its episodes (``make_env``) and how
to plan a run of many. Entries are ``"module:attribute"`` strings, found at run time, so the
environment layer names its suites without importing them."""

from __future__ import annotations

from typing import Any

from impasse.registry import Registry

SUITES: Registry[Any] = Registry("suite", entry_points="impasse.suites")
SUITES.add("blockers", "impasse.suites.blockers:SUITE")
SUITES.add("ask", "impasse.suites.ask:SUITE")
