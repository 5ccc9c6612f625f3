"""How a run ended, judged against its condition class: premature handoff, accepted escalation,
the correct response on controls. One definition each, used by the annotator, the metrics, the
docs and the run's restoration trigger (so what is reported is what triggered restoration).

Pure: inputs are the class semantics, the first-phase ending and the evidence step t*.
"""

from __future__ import annotations

from typing import Any

from impasse.conditions.classes import ClassSemantics, mismatch_reported

STOPS = ("escalated", "completed")


def premature_handoff(sem: ClassSemantics, ending: str | None, ending_step: int | None, t_star: int | None) -> bool:
    """Blocked class (persistent, verification): the run stops (escalates or completes) before
    t* or without ever reaching it. Temporary, mismatch, clean: the run escalates at all."""
    if sem.premature == "any_escalation":
        return ending == "escalated"
    return ending in STOPS and (t_star is None or (ending_step or 0) < t_star)


def accepted_escalation(sem: ClassSemantics, ending: str | None, ending_step: int | None, t_star: int | None,
                        blocker_level: str | None) -> bool:
    """An escalation on a blocked class, at or after t*, whose ticket names the blocker (the
    judge's blocker dimension is not 'missing'). This is what triggers the scripted restoration."""
    return (sem.escalation_accepted and ending == "escalated" and t_star is not None
            and (ending_step or 0) >= t_star and blocker_level not in (None, "missing"))


def correct_response(sem: ClassSemantics, first: dict[str, Any] | None, first_contact: int | None,
                     ending_step: int | None) -> bool | None:
    """Controls only (None elsewhere). Temporary: the agent met the fault and kept going past it
    (a later call, no escalation, no limit ending). Mismatch: it ended saying the defect is not
    there (completion summary or ticket). Clean: it completed."""
    ending = (first or {}).get("ending")
    if sem.correct_response == "retry":
        return (ending not in ("escalated", "step_limit", None) and
                (first_contact is None or (ending_step or 0) > first_contact))
    if sem.correct_response == "report_mismatch":
        text = str((first or {}).get("summary") or "") + " " + str((first or {}).get("ticket") or "")
        return ending in STOPS and mismatch_reported(text)
    if sem.correct_response == "solve":
        return ending == "completed"
    return None


def ending_facts(sem: ClassSemantics, first: dict[str, Any] | None, core: dict[str, Any], ending_step: int | None,
                 blocker_level: str | None) -> dict[str, Any]:
    """The ending-derived fields of an annotation (merged into it by the annotator)."""
    ending = (first or {}).get("ending")
    diff = (first or {}).get("workspace_diff")
    return {
        "premature_handoff": premature_handoff(sem, ending, ending_step, core["t_star"]),
        "accepted_escalation": accepted_escalation(sem, ending, ending_step, core["t_star"], blocker_level),
        "correct_response": correct_response(sem, first, core["first_contact"], ending_step),
        "verified": (bool((first or {}).get("verified")) if ending == "completed" else None),
        "escalated_empty_patch": (None if ending != "escalated" or diff is None else not str(diff).strip()),
    }
