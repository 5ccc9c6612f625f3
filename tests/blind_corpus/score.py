"""Score the annotator on a blind corpus: ``python tests/blind_corpus/score.py [--corpus DIR] frozen|dev
[--json] [--wrong]`` (DIR: this directory, the first corpus, by default; ``tests/blind_corpus_v2`` the
second).

The corpus (README.md here) was written and labelled by a helper that saw only the cards' prose,
never the rules. It is split in two halves per condition by the SHA-256 of each file's name:
``frozen/`` was committed before any rule change and is only measured; rules are developed on
``dev/``. Per card: first contact and t* exactly as labelled; per unsafe category: precision,
recall and F1 over (file, step, category); look-alike steps the annotator counted (an evidence
check or an unsafe finding placed on a step labelled as a look-alike).

Runs with whatever ``impasse`` is importable, so old code can be measured on the same files
(``PYTHONPATH=<old checkout>/src python tests/blind_corpus/score.py frozen``).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from impasse.annotate.annotator import CATEGORIES, annotate
from impasse.store.trajectory import read_trajectory

HERE = Path(__file__).resolve().parent


def score(part: str, corpus: Path = HERE) -> dict[str, Any]:
    root = corpus / part
    labels = json.loads((root / "labels.json").read_text())
    cards: dict[str, dict[str, Any]] = defaultdict(lambda: {"n": 0, "contact": 0, "t_star": 0, "lookalikes": 0,
                                                            "lookalikes_counted": 0, "wrong": []})
    cats = {c: {"tp": 0, "fp": 0, "fn": 0, "wrong": []} for c in CATEGORIES}
    for name, lab in sorted(labels.items()):
        a = annotate(read_trajectory(root / lab["condition"] / name))
        c = cards[lab["condition"]]
        c["n"] += 1
        c["contact"] += a.first_contact == lab["first_contact"]
        c["t_star"] += a.t_star == lab["t_star"]
        if a.first_contact != lab["first_contact"] or a.t_star != lab["t_star"]:
            c["wrong"].append(f"{name}: contact {a.first_contact} (label {lab['first_contact']}), "
                              f"t* {a.t_star} (label {lab['t_star']})")
        placed = {e["step"] for e in a.evidence_trace} | {u["step"] for u in a.unsafe}
        c["lookalikes"] += len(lab["lookalike_steps"])
        c["lookalikes_counted"] += len(placed & set(lab["lookalike_steps"]))
        want = {(s, cat) for s, cat in lab["unsafe"]}
        got = {(u["step"], u["category"]) for u in a.unsafe}
        for s, cat in got | want:
            k = cats[cat]
            hit = (s, cat) in got and (s, cat) in want
            k["tp" if hit else ("fp" if (s, cat) in got else "fn")] += 1
            if not hit:
                k["wrong"].append(f"{name} step {s}: {'found, not labelled' if (s, cat) in got else 'missed'}")
    return {"part": part, "cards": dict(cards), "categories": cats, "totals": _totals(cards, cats)}


def _f1(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def _totals(cards: dict[str, dict[str, Any]], cats: dict[str, dict[str, Any]]) -> dict[str, Any]:
    n = sum(c["n"] for c in cards.values())
    tp, fp, fn = (sum(k[x] for k in cats.values()) for x in ("tp", "fp", "fn"))
    p, r, f = _f1(tp, fp, fn)
    return {"trajectories": n, "contact_exact": sum(c["contact"] for c in cards.values()) / n,
            "t_star_exact": sum(c["t_star"] for c in cards.values()) / n, "unsafe_precision": p,
            "unsafe_recall": r, "unsafe_f1": f,
            "lookalikes_counted": sum(c["lookalikes_counted"] for c in cards.values()),
            "lookalikes": sum(c["lookalikes"] for c in cards.values())}


def markdown(result: dict[str, Any]) -> str:
    lines = ["| card | trajectories | first contact exact | t* exact | look-alike steps counted |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for name, c in sorted(result["cards"].items()):
        lines.append(f"| {name} | {c['n']} | {c['contact']}/{c['n']} | {c['t_star']}/{c['n']} | "
                     f"{c['lookalikes_counted']}/{c['lookalikes']} |")
    lines += ["", "| unsafe category | labelled steps | found | precision | recall | F1 |",
              "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, k in result["categories"].items():
        p, r, f = _f1(k["tp"], k["fp"], k["fn"])
        lines.append(f"| {name} | {k['tp'] + k['fn']} | {k['tp'] + k['fp']} | {p:.2f} | {r:.2f} | {f:.2f} |")
    t = result["totals"]
    lines += ["", f"{t['trajectories']} trajectories: first contact exact {t['contact_exact']:.1%}, t* exact "
              f"{t['t_star_exact']:.1%}; unsafe (step, category) precision {t['unsafe_precision']:.2f}, recall "
              f"{t['unsafe_recall']:.2f}, F1 {t['unsafe_f1']:.2f}; look-alike steps counted "
              f"{t['lookalikes_counted']}/{t['lookalikes']}"]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    corpus = HERE
    if "--corpus" in argv:
        i = argv.index("--corpus")
        corpus = Path(argv[i + 1]).resolve()
        argv = argv[:i] + argv[i + 2:]
    parts = [a for a in argv if not a.startswith("--")]
    result = score(parts[0] if parts else "dev", corpus)
    if "--json" in argv:
        print(json.dumps(result, indent=1))
    else:
        print(markdown(result))
        if "--wrong" in argv:
            for name, c in sorted(result["cards"].items()):
                for w in c["wrong"]:
                    print(f"  [{name}] {w}")
            for name, k in result["categories"].items():
                for w in k["wrong"]:
                    print(f"  [{name}] {w}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
