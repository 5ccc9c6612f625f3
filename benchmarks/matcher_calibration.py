"""How well the offline ask_human matcher judges questions it has not seen.

1. HiL-Bench's public blocker registries, **even-numbered tasks only** (the odd ones are never read):
   each example question asked with itself removed from its blocker's examples (leave-one-out:
   recall and wrong-blocker rate), every task's questions asked against a task on another database
   or repository (accepted = wrong), and generic questions naming nothing task-specific
   (``ask/data/matcher_generic_questions.yaml``; accepted = wrong). Targets: leave-one-out recall
   >= 0.85 with wrong-blocker <= 2%; foreign and generic acceptance <= 1%.
   For the hybrid matcher (fitted weights) the headline is **cross-validated**: fitted on one half
   of the even tasks and of the generic questions, measured on the other, both ways
   (``impasse.ask.hybrid_fit``); the figures of the shipped weights on all of it are in-sample.
2. Our own labelled questions on the built-in tasks (TUNE and HELD-OUT parts, per rule).
3. What a question costs (CPU time per judged question; a task's blocker texts are embedded once).

HiL-Bench's LLM judge vs humans: precision 0.97, recall 0.91. Nothing is downloaded: give a
checkout of the release (``git clone`` of hilbenchauthors/hil-bench, or any copy with its
harbor_sql/ and harbor_swe/ folders)::

    .venv/bin/python benchmarks/matcher_calibration.py --hilbench PATH [--matcher offline|lexical|hybrid]
        [--no-cv] [--fit] [--json FILE] [--verbose]

``--fit`` refits the hybrid matcher's weights on all even-numbered tasks and writes them into
``src/impasse/ask/data/matcher_hybrid.yaml`` (then measures them).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from impasse.ask.calibration import (
    TUNE,
    generic_questions,
    load_questions,
    release_cases,
    release_registries,
    report,
    run,
    split_of,
    tally_cases,
    tally_lines,
    tally_numbers,
)
from impasse.ask.judge import make_matcher, matcher_engine

DATA = Path(__file__).resolve().parents[1] / "src" / "impasse" / "ask" / "data" / "matcher_hybrid.yaml"


def hilbench(matcher: Any, root: Path, cv: bool, refit: bool) -> dict[str, Any]:
    tasks = release_registries(root)
    generic = generic_questions()
    figures: dict[str, Any] = {}
    print(f"HiL-Bench release, even-numbered registries: {sum(t.domain == 'sql' for t in tasks)} SQL + "
          f"{sum(t.domain == 'swe' for t in tasks)} SWE tasks; {len(generic)} generic questions")
    hybrid = hasattr(matcher, "with_model")
    if hybrid:
        matcher.memo = {}  # the same questions are asked under several weights
        if refit:
            from impasse.ask import hybrid_fit

            model = hybrid_fit.fit(matcher, hybrid_fit.training_cases(tasks, generic))
            hybrid_fit.write_model(model, DATA)
            matcher = matcher.with_model(model)
            print(f"refitted on all even-numbered tasks, written to {DATA}: {model.as_data()}")
        if cv:
            figures |= cross_validated(matcher, tasks, generic)
    t = tally_cases(matcher, release_cases(tasks, generic))
    print("the shipped weights on all even-numbered tasks (in-sample):" if hybrid else "all even-numbered tasks:")
    print("\n".join(tally_lines(t)))
    figures["all_even"] = tally_numbers(t)
    return figures


def cross_validated(matcher: Any, tasks: list[Any], generic: list[str]) -> dict[str, Any]:
    from impasse.ask import hybrid_fit

    out = hybrid_fit.cross_validate(matcher, tasks, generic)
    print("cross-validated (fitted on one half of the tasks and generic questions, measured on the other):")
    for f in out["folds"]:
        print(f"  fitted on half {f['fitted_on_half']}: weights {f['weights']}, reject {f['reject']}, "
              f"accept {f['accept']}")
    print("\n".join(tally_lines(out["pooled"])))
    print("  curve (each half's weights, one acceptance threshold for both):")
    for accept, t in out["curve"].items():
        print(f"    accept {accept:.2f}: recall {t['loo']['sql'].recall:.3f} sql / {t['loo']['swe'].recall:.3f} "
              f"swe / {t['loo']['both'].recall:.3f} both, wrong {t['loo']['both'].wrong_rate:.3f}, "
              f"foreign {t['foreign']['both'].wrong_rate:.4f}, generic {t['generic']['both'].wrong_rate:.4f}")
    return {"cross_validated": tally_numbers(out["pooled"]), "folds": out["folds"],
            "curve": {str(a): tally_numbers(t) for a, t in out["curve"].items()}}


def cost(kind: str, root: Path) -> dict[str, float]:
    """CPU time of a judge built afresh: loading it, a task's first question (its blocker texts are
    embedded then) and every later question (only the question is new)."""
    from impasse.ask.judge import resolve_kind
    from impasse.ask.matcher import OfflineMatcher

    t0 = time.process_time()
    if resolve_kind(kind) == "hybrid":
        from impasse.ask.embedding import load_embedder
        from impasse.ask.hybrid import HybridMatcher

        fresh: Any = HybridMatcher(embedder=load_embedder())
    else:
        fresh = OfflineMatcher()
    load = time.process_time() - t0
    first = later = 0.0
    n_tasks = n_later = 0
    for t in release_registries(root)[:20]:
        questions = [q for b in t.blockers for q in b.example_questions]
        t0 = time.process_time()
        fresh.match(questions[0], list(t.blockers))
        first += time.process_time() - t0
        t0 = time.process_time()
        for q in questions[1:]:
            fresh.match(q, list(t.blockers))
        later += time.process_time() - t0
        n_tasks, n_later = n_tasks + 1, n_later + len(questions) - 1
    return {"cpu_ms_load": 1000 * load, "cpu_ms_first_question_of_a_task": 1000 * first / n_tasks,
            "cpu_ms_per_question": 1000 * later / n_later}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hilbench", type=Path, help="A checkout of HiL-Bench's public release")
    ap.add_argument("--matcher", default="offline", choices=["offline", "lexical", "hybrid"],
                    help="offline: the default (hybrid when impasse[match] is installed, else lexical)")
    ap.add_argument("--no-cv", action="store_true", help="Skip the cross-validation of the hybrid matcher")
    ap.add_argument("--fit", action="store_true", help="Refit the hybrid matcher's weights and write them")
    ap.add_argument("--json", type=Path, help="Also write the figures here")
    ap.add_argument("--verbose", action="store_true", help="List the misses on our TUNE questions")
    a = ap.parse_args()
    matcher = make_matcher(a.matcher)
    print(f"matcher: {matcher_engine(matcher)}")
    figures: dict[str, Any] = {"matcher": matcher_engine(matcher)}
    if a.hilbench:
        figures |= hilbench(matcher, a.hilbench, cv=not a.no_cv, refit=a.fit)
        if a.fit:
            from impasse.ask.hybrid import model_data

            model_data.cache_clear()
            matcher = make_matcher(a.matcher)  # the written weights
        figures["cost"] = cost(a.matcher, a.hilbench)
        c = figures["cost"]
        print(f"cost (CPU): {c['cpu_ms_per_question']:.1f} ms per question; {c['cpu_ms_first_question_of_a_task']:.0f} "
              f"ms for a task's first (its blocker texts embedded then); {c['cpu_ms_load']:.0f} ms to load the judge")
    else:
        print("(no --hilbench checkout given: HiL-Bench's registries not measured)")
    print(report(matcher))
    if a.json:
        a.json.write_text(json.dumps(figures, indent=1))
    if a.verbose:  # the misses of TUNE only: tuning must not look at HELD-OUT
        for o in run(matcher, [i for i in load_questions() if split_of(i.task_id) == TUNE]):
            if o.got != o.item.expected:
                print(f"MISS {o.item.task_id}: {o.item.question!r} want {o.item.expected} ({o.item.rule}), "
                      f"got {o.got} ({o.rule})")


if __name__ == "__main__":
    main()
