"""The diagnostic catalogue (tests/catalogue/*.yaml, see its README): every entry run in the real
sandbox under its condition, its real output fed to the annotator (card checks) and to the monitor
(rule patterns), both held to the entry's ``reveals`` label; over each card's whole sequence the
annotator must place t* and the monitor must fire the card's rule.

``tests/catalogue/recorded.json`` keeps the outputs of the last live run so the labels are also
checked on every fast run; the slow test re-records nothing and trusts only what it just ran."""

from __future__ import annotations

import json

import pytest
from catalogue_runner import CATALOGUE, load_catalogue, run_catalogue

from impasse.annotate.annotator import annotate_steps
from impasse.conditions.cards import card, names
from impasse.monitor.monitor import Monitor, default_rules
from impasse.steps import Step, pattern_matches

RECORDED = CATALOGUE / "recorded.json"


def card_reveals(name: str, step: Step) -> list[str]:
    """Checks of the card's evidence groups (contact checks if it has none) the step satisfies
    on its own (min_steps counted as 1)."""
    c = card(name)
    names = {n for g in c.evidence for n in g} or set(c.contact)
    return sorted(n for n in names if pattern_matches(c.checks[n], step))


def monitor_reveals(rule_id: str | None, step: Step) -> list[str]:
    if rule_id is None:
        return []
    rules = default_rules()
    rule = next(r for r in rules.rules if r.id == rule_id)
    return sorted({n for g in rule.when for n in g if pattern_matches(rules.patterns[n], step)})


def evaluate(name: str, steps: list[Step]) -> dict:
    data = load_catalogue(name)
    rows = []
    for entry, step in zip(data["commands"], steps, strict=True):
        rows.append({"command": step.command, "label": bool(entry["reveals"]),
                     "monitor_label": bool(entry.get("monitor_reveals", entry["reveals"])),
                     "lookalike": bool(entry.get("lookalike")),
                     "card": card_reveals(name, step), "monitor": monitor_reveals(data.get("monitor_rule"), step)})
    core = annotate_steps(steps, card(name), "escalated", len(steps))
    mon = Monitor(escalation_available=True)
    nudges = [n for s in steps if (n := mon.observe({"name": s.tool, "arguments": s.arguments}, s.output, s.exit_code))]
    return {"rows": rows, "t_star": core["t_star"], "first_contact": core["first_contact"],
            "nudge": nudges[0].rule if nudges else None, "data": data}


def check(name: str, result: dict) -> list[str]:
    """Every disagreement, in words (empty = the card, the monitor and the labels agree)."""
    problems = []
    data = result["data"]
    for i, r in enumerate(result["rows"], 1):
        if bool(r["card"]) != r["label"]:
            problems.append(f"{name} #{i} `{r['command']}`: label {r['label']}, card checks {r['card']}")
        if data.get("monitor_rule") and bool(r["monitor"]) != r["monitor_label"]:
            problems.append(f"{name} #{i} `{r['command']}`: monitor label {r['monitor_label']}, monitor patterns "
                            f"{r['monitor']}")
    blocked = card(name).cls in ("persistent", "verification", "mismatch")
    if blocked != (result["t_star"] is not None):
        problems.append(f"{name}: t* = {result['t_star']} over the sequence")
    want = data.get("monitor_rule") if data.get("monitor_fires", True) else None
    if result["nudge"] != want:
        problems.append(f"{name}: first nudge {result['nudge']!r}, expected {want!r}")
    return problems


def recall_row(name: str, result: dict) -> dict:
    rows = result["rows"]
    pos = [r for r in rows if r["label"]]
    looks = [r for r in rows if r["lookalike"]]
    return {"card": name, "entries": len(rows), "reveals": len(pos),
            "card_recall": sum(bool(r["card"]) for r in pos) / len(pos) if pos else None,
            "monitor_recall": (sum(bool(r["monitor"]) for r in pos) / len(pos)
                               if pos and result["data"].get("monitor_rule") else None),
            "lookalikes": len(looks), "lookalikes_counted": sum(bool(r["card"] or r["monitor"]) for r in looks),
            "t_star": result["t_star"], "nudge": result["nudge"]}


def _recorded_steps(name: str) -> list[Step]:
    rows = json.loads(RECORDED.read_text())[name]
    return [Step(i, r["tool"], r["arguments"], r["output"], r["exit_code"]) for i, r in enumerate(rows, 1)]


def test_every_card_has_a_catalogue_with_several_formats_and_lookalikes():
    for name in names():
        data = load_catalogue(name)
        assert len(data["commands"]) >= 4, name
        if card(name).cls in ("persistent", "verification") and name != "exec_unavailable":
            assert any(e.get("lookalike") for e in data["commands"]), f"{name}: no look-alike"


@pytest.mark.parametrize("name", names())
def test_recorded_real_outputs_agree_with_the_labels(name):
    """The outputs recorded from the sandbox (refreshed by the slow test's sibling script)."""
    recorded = json.loads(RECORDED.read_text())
    assert [r["entry"] for r in recorded[name]] == load_catalogue(name)["commands"], \
        f"{name}: catalogue changed since recording; rerun `python tests/catalogue_runner.py --record`"
    assert check(name, evaluate(name, _recorded_steps(name))) == []


@pytest.mark.slow
def test_catalogue_in_the_real_sandbox(backend, glom_task, capsys):
    results, problems = {}, []
    for name in names():
        steps = [s for _, s in run_catalogue(backend, glom_task, name)]
        results[name] = evaluate(name, steps)
        problems += check(name, results[name])
    with capsys.disabled():
        print("\ncard | entries | reveals | card recall | monitor recall | look-alikes counted | t* | nudge")
        for name in names():
            r = recall_row(name, results[name])
            print(f"{name} | {r['entries']} | {r['reveals']} | {r['card_recall']} | {r['monitor_recall']} | "
                  f"{r['lookalikes_counted']}/{r['lookalikes']} | {r['t_star']} | {r['nudge']}")
    assert problems == []
