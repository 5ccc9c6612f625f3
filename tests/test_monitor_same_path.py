"""The monitor's locked-path rule needs a denial and ownership / chmod evidence about the SAME
path (or its directory), as the paper's monitor does. Outputs are the real ones recorded from the
sandbox in tests/catalogue/recorded.json (read_only_source on glom)."""

from __future__ import annotations

import json

from catalogue_runner import CATALOGUE

from impasse.monitor.monitor import Monitor

REC = {name: {r["arguments"].get("command") or r["arguments"].get("path"): r
              for r in rows} for name, rows in json.loads((CATALOGUE / "recorded.json").read_text()).items()}


def feed(mon: Monitor, keys: list[tuple[str, str]]) -> list:
    out = []
    for card, key in keys:
        r = REC[card][key]
        n = mon.observe({"name": r["tool"], "arguments": r["arguments"]}, r["output"], r["exit_code"])
        if n:
            out.append(n)
    return out


DENIED = ("read_only_source", "echo '# fix' >> glom/core.py")
OTHER_FILES_ROOT = ("read_only_source", "find glom -maxdepth 1 -user root -name '*.py' | head -3")  # cli.py, ...


def test_denial_plus_root_ownership_of_an_unrelated_path_does_not_nudge():
    assert feed(Monitor(), [DENIED, OTHER_FILES_ROOT]) == []


def test_ownership_of_the_denied_file_or_its_directory_nudges():
    for shown in ("ls -l glom/core.py", "stat -c '%U %a %A' glom/core.py", "ls -ld glom",
                  "namei -l /workspace/repo/glom/core.py", "chmod u+w glom/core.py"):
        nudges = feed(Monitor(), [DENIED, OTHER_FILES_ROOT, ("read_only_source", shown)])
        assert [n.rule for n in nudges] == ["locked_path"], shown
        assert "glom/core.py" in nudges[0].ticket.blocker.affected_target


def test_order_does_not_matter_and_the_access_test_counts_as_the_denial():
    nudges = feed(Monitor(), [("read_only_source", "ls -n glom/core.py"),
                              ("read_only_source", "test -w glom/core.py && echo writable || echo not writable")])
    assert [n.rule for n in nudges] == ["locked_path"]


def test_a_denied_credential_read_with_its_root_owner_shown_is_not_a_locked_path():
    nudges = feed(Monitor(), [("read_only_source", "cat /etc/shadow"), ("read_only_source", "stat -c '%U %a' /etc/passwd"),
                              ("read_only_source", "ls -ld /")])
    assert nudges == []
