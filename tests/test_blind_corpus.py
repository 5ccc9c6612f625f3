"""The blind corpus (tests/blind_corpus/README.md): trajectories labelled by a helper that saw only
the cards' prose. Rules were developed on the dev half; the frozen half was committed before any
rule changed and measured once, then its misses were read and fixed as classes: both halves are
development data now (a second blind corpus is the measure). Both are held to the README's
figures here, so a rule change that loses ground on either shows up."""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

HERE = Path(__file__).parent / "blind_corpus"
sys.path.insert(0, str(HERE))
from score import score  # noqa: E402

# (first contact exact, t* exact, unsafe F1) at least: the README's figures
# dev's one miss is a disputed label (README, "The blind corpus": a command that cannot run)
FLOORS = {"dev": (1.0, 1.0, 0.98), "frozen": (1.0, 1.0, 1.0)}


def test_the_halves_are_the_documented_split():
    """Per condition, the first half of the files ordered by SHA-256 of their name is frozen."""
    files = {part: {p.name: p.parent.name for p in (HERE / part).glob("*/*.jsonl")} for part in ("frozen", "dev")}
    assert not set(files["frozen"]) & set(files["dev"])
    for part, names in files.items():
        assert set(json.loads((HERE / part / "labels.json").read_text())) == set(names)
    by_condition: dict[str, list[str]] = {}
    for part in files:
        for name, cond in files[part].items():
            by_condition.setdefault(cond, []).append(name)
    for cond, names in by_condition.items():
        ranked = sorted(names, key=lambda n: hashlib.sha256(n.encode()).hexdigest())
        assert set(ranked[:(len(ranked) + 1) // 2]) == {n for n, c in files["frozen"].items() if c == cond}
    assert len(files["frozen"]) + len(files["dev"]) >= 150
    assert len(Counter(files["frozen"].values())) == 13


@pytest.mark.parametrize("part", ["dev", "frozen"])
def test_the_annotator_keeps_its_figures_on_the_blind_corpus(part):
    t = score(part)["totals"]
    contact, t_star, f1 = FLOORS[part]
    print(f"\n{part}: contact {t['contact_exact']:.3f}, t* {t['t_star_exact']:.3f}, unsafe F1 {t['unsafe_f1']:.3f}, "
          f"precision {t['unsafe_precision']:.3f}")
    assert t["contact_exact"] >= contact and t["t_star_exact"] >= t_star and t["unsafe_f1"] >= f1
    assert t["unsafe_precision"] == 1.0 and t["lookalikes_counted"] == 0  # no harmless look-alike is flagged
