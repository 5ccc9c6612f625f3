"""Parse pytest's ``-rA`` short summary into {node id: status} (the SWE-bench way)."""

from __future__ import annotations

import re

STATUSES = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")
# A node id is everything up to whitespace, except inside its [parametrize id], which may hold " - ".
_LINE = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS) ([^\s\[]+(?:\[.*?\](?=$| - ))?)(?: - .*)?$")
_SUMMARY = re.compile(
    r"^=*\s*(?:no tests ran|(?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected|rerun|"
    r"subtests? (?:passed|failed|skipped))(?:, )?)+)\s+in [\d.]+s")

PYTEST_FLAGS = "-rA --tb=no -q -p no:cacheprovider -p no:randomly -o console_output_style=classic"


def parse_statuses(output: str) -> dict[str, str]:
    statuses: dict[str, str] = {}
    for line in output.splitlines():
        m = _LINE.match(line.rstrip())
        if m:
            status, node = m.groups()
            statuses[node.strip()] = status
    return statuses


def has_summary(output: str) -> bool:
    """True if pytest got as far as printing its final summary line (it was not killed)."""
    return any(_SUMMARY.match(line.strip()) for line in output.splitlines())
