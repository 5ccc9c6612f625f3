"""Parse pytest's ``-rA`` short summary into {node id: status} (the SWE-bench way)."""

from __future__ import annotations

import re
from collections.abc import Collection

STATUSES = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")
_LINE = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS) (.+)$")
_CUT = re.compile(r" - ")
_SUMMARY = re.compile(
    r"^=*\s*(?:no tests ran|(?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected|rerun|"
    r"subtests? (?:passed|failed|skipped))(?:, )?)+)\s+in [\d.]+s")

PYTEST_FLAGS = "-rA --tb=no -q -p no:cacheprovider -p no:randomly -o console_output_style=classic"



def _node_id(rest: str, status: str, known: Collection[str] | None) -> str:
    """``-rA`` appends " - <message>" to FAILED/ERROR/XFAIL lines, but a parametrize id may
    itself contain " - " (e.g. ``test_x[a - b]``). Prefer a cut that names a known node id, then
    one that leaves the brackets balanced."""
    cuts = [m.start() for m in _CUT.finditer(rest)]
    if status == "PASSED" or not cuts:
        return rest
    if known:
        if rest in known:
            return rest
        for c in cuts:
            if rest[:c] in known:
                return rest[:c]
    for c in cuts:
        if rest[:c].count("[") == rest[:c].count("]"):
            return rest[:c]
    return rest[: cuts[0]]


def parse_statuses(output: str, known: Collection[str] | None = None) -> dict[str, str]:
    """{node id: status}. ``known`` (node ids the caller expects) makes ids with " - " exact."""
    statuses: dict[str, str] = {}
    for line in output.splitlines():
        m = _LINE.match(line.rstrip())
        if m:
            status, rest = m.groups()
            statuses[_node_id(rest.strip(), status, known)] = status
    return statuses


def has_summary(output: str) -> bool:
    """True if pytest got as far as printing its final summary line (it was not killed)."""
    return any(_SUMMARY.match(line.strip()) for line in output.splitlines())
