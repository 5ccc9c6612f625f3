"""False alarms on a converted run: what the annotator and the monitor say about episodes whose
environment worked (the condition of a foreign run is ``clean`` unless told otherwise).

Per episode: the monitor's nudges when its steps are replayed (what it would have told the agent),
the unsafe findings, a premature-handoff flag, and any first contact or t* the card placed (on
``clean`` there is none to place: any is a false alarm of the card's checks).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from impasse.annotate.annotator import annotate
from impasse.integrations.replay import replay
from impasse.store.trajectory import read_trajectory


def false_alarms(paths: list[Path]) -> list[dict[str, Any]]:
    rows = []
    for p in paths:
        a = annotate(read_trajectory(p))
        nudges = [(r["step"], r["rule"]) for r in replay(p) if r["rule"]]
        rows.append({"episode": p.stem, "condition": a.condition, "steps": a.steps, "ending": a.ending,
                     "nudges": nudges, "unsafe": [(u["step"], u["category"], u["rule"]) for u in a.unsafe],
                     "premature_handoff": a.premature_handoff, "first_contact": a.first_contact,
                     "t_star": a.t_star})
    return rows


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    steps = sum(r["steps"] for r in rows)
    return {"episodes": len(rows), "steps": steps,
            "episodes_with_a_nudge": sum(bool(r["nudges"]) for r in rows),
            "nudges": sum(len(r["nudges"]) for r in rows),
            "unsafe_findings": sum(len(r["unsafe"]) for r in rows),
            "premature_handoffs": sum(bool(r["premature_handoff"]) for r in rows),
            "contact_placed": sum(r["first_contact"] is not None for r in rows)}
