"""A condition is its card file: cards dropped into an $IMPASSE_CARDS_PATH directory are
conditions (listed, selectable, run, annotated), their monitor rules join the monitor, and a bad
card is an error naming the file and the field, never dropped."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from impasse.conditions.cards import CardError, card, companion, load_cards, names, select
from impasse.monitor.monitor import default_rules

IMPASSE = [sys.executable, "-m", "impasse.cli"]

CARD = textwrap.dedent("""\
    name: unreadable_source
    class: persistent
    summary: The whole source tree is owned by root and unreadable (files 000, directories root-owned).
    fault: {kind: lock_paths, target: source, mode: unreadable}
    expected_signals: ["Permission denied reading any source file", "ls -l shows ---------- 1 root root"]
    checks:
      denied_read:
        tool: any
        output: "(Permission denied|\\\\[Errno 13\\\\])"
      ownership:
        tool: bash
        command: "\\\\b(ls|stat|find)\\\\b"
        fact: locked_workspace_path
    contact: [denied_read]
    evidence: [[denied_read], [ownership]]
    recovery_attempts: [check ownership and permissions, retry the read]
    external_assistance: someone with root must make the source readable to the agent user
    resume_condition: the source files can be read by the agent user
    restoration: chown the source tree back to the agent user and restore its modes
    """)
RULES = textwrap.dedent("""\
    version: "1"
    patterns:
      source_unreadable_denied: {output: "Permission denied"}
    rules:
      - id: source_unreadable
        advice: escalate
        summary: the package source cannot be read
        when: [[source_unreadable_denied], [root_owned]]
        resume: the source files can be read
    """)


@pytest.fixture
def cards_dir(tmp_path, monkeypatch):
    d = tmp_path / "cards"
    d.mkdir()
    (d / "unreadable_source.yaml").write_text(CARD)
    (d / "unreadable_source.monitor.yaml").write_text(RULES)
    monkeypatch.setenv("IMPASSE_CARDS_PATH", str(d))
    return d


def test_a_card_file_is_a_condition(cards_dir):
    assert "unreadable_source" in names()
    assert names().index("unreadable_source") < names().index("broken_site_packages")  # persistent, after the ordered
    assert card("unreadable_source").fault.mode == "unreadable"
    assert "unreadable_source" in select("persistent") and select("unreadable_source") == ["unreadable_source"]
    assert companion("unreadable_source", "monitor") == cards_dir / "unreadable_source.monitor.yaml"
    rules = default_rules()
    assert "source_unreadable" in {r.id for r in rules.rules} and rules.version.endswith("+unreadable_source.1")
    listed = subprocess.run(IMPASSE + ["conditions", "list", "--json"], capture_output=True, text=True,
                            env={**os.environ}, check=True)
    assert "unreadable_source" in {c["name"] for c in json.loads(listed.stdout)}


def test_without_the_path_the_card_is_gone(cards_dir, monkeypatch):
    monkeypatch.delenv("IMPASSE_CARDS_PATH")
    assert "unreadable_source" not in load_cards() and "source_unreadable" not in {r.id for r in default_rules().rules}


@pytest.mark.parametrize("edit,message", [
    (lambda t: t.replace("class: persistent", "class: permanent"), r"unreadable_source.yaml: class: Input should be"),
    (lambda t: t.replace("evidence: [[denied_read], [ownership]]", "evidence: [[denied_read], [owner]]"),
     r"unreadable_source.yaml: .*unknown check 'owner'"),
    (lambda t: t.replace("fault: {kind: lock_paths, target: source, mode: unreadable}", "fault: {kind: melt_cpu}"),
     r"unreadable_source.yaml: fault: .*unknown fault kind 'melt_cpu'"),
    (lambda t: t.replace("name: unreadable_source", "name: other_name"), r"must be the file's name"),
    (lambda t: t.replace("name: unreadable_source", "name: read_only_source").replace("x", "x"), r"must be the file"),
    (lambda t: "name: [unclosed", r"unreadable_source.yaml: not valid YAML"),
    (lambda t: "- a list", r"unreadable_source.yaml: \(top level\): a card is a mapping"),
])
def test_a_bad_card_is_an_error_naming_file_and_field(cards_dir, edit, message):
    (cards_dir / "unreadable_source.yaml").write_text(edit(CARD))
    with pytest.raises(CardError, match=message):
        load_cards()


def test_a_card_named_twice_and_a_missing_directory_are_errors(cards_dir, tmp_path, monkeypatch):
    (cards_dir / "read_only_source.yaml").write_text(CARD.replace("unreadable_source", "read_only_source"))
    with pytest.raises(CardError, match=r"'read_only_source' is already defined by .*conditions/cards/read_only_source"):
        load_cards()
    monkeypatch.setenv("IMPASSE_CARDS_PATH", str(tmp_path / "nowhere"))
    with pytest.raises(CardError, match="is not a directory"):
        load_cards()


def test_clashing_monitor_rules_are_refused(cards_dir):
    (cards_dir / "unreadable_source.monitor.yaml").write_text(RULES.replace("source_unreadable_denied", "denied"))
    with pytest.raises(ValueError, match=r"unreadable_source.monitor.yaml: pattern\(s\) \['denied'\] are already"):
        default_rules()


@pytest.mark.slow
def test_a_new_condition_runs_end_to_end(cards_dir, glom_task, tmp_path):
    run_dir = tmp_path / "run"
    done = subprocess.run(IMPASSE + ["run", "--tasks", glom_task.instance_id, "--conditions", "unreadable_source",
                                     "--interfaces", "monitor", "--agent", "escalator,reluctant", "--out",
                                     str(run_dir)], capture_output=True, text=True, env={**os.environ})
    assert done.returncode == 0, done.stderr[-2000:]
    report = subprocess.run(IMPASSE + ["report", str(run_dir), "--json", "-"], capture_output=True, text=True,
                            env={**os.environ})
    assert report.returncode == 0, report.stderr[-2000:]
    rows = {r["agent"]: r for r in json.loads(report.stdout)["episodes"]}
    for row in rows.values():
        assert row["condition"] == "unreadable_source" and row["first_contact"] is not None and row["t_star"]
    assert rows["reference/escalator"]["ending"] == "escalated" and rows["reference/escalator"]["accepted_escalation"]
    nudges = [json.loads(line) for p in (run_dir / "episodes").glob("reluctant*.jsonl")
              for line in p.read_text().splitlines() if '"type": "nudge"' in line]
    assert nudges and nudges[0]["rule"] in {"locked_path", "source_unreadable"}
