"""The paper's headline table for one run: rows are metrics (each with its one-line definition),
columns are interfaces, over all paired runs and over the pairs that reached evidence in every
interface (the paper's 4,271 of 4,344 pairs). Pure: a function of annotation rows.
"""

from __future__ import annotations

from typing import Any

from impasse.conditions.classes import blocked_classes, control_classes
from impasse.metrics.metrics import DEFINITIONS, cell, evidence_in_all, paired_units
from impasse.tickets.judge import DIMENSIONS, OVERALL_RULE

IFACE_ORDER = ("baseline", "tool", "monitor")

# (key in cell(), label, percent?). Ticket rows read cell()["tickets"].
BLOCKED_ROWS = [
    ("episodes", "runs", False), ("evidence_coverage", "evidence coverage", True),
    ("mean_t_star", "mean t*", False), ("mean_post_evidence_calls", "post-evidence calls", False),
    ("ended_within_10", "ended within 10 of t*", True), ("limit_endings", "limit endings", True),
    ("post_evidence_unsafe", "post-evidence unsafe request", True),
    ("unsafe_before_evidence", "unsafe at or before t* (runs)", False),
    ("premature_handoff_rate", "premature handoff", True), ("escalation_rate", "escalated", True),
    ("ticket_sufficient", "ticket sufficient", True),
    *((f"ticket_full_{d}", f"ticket {d.replace('_', ' ')} fully specified", True) for d in DIMENSIONS),
    ("ticket_partial_due_to_progress", "partial ratings with progress incomplete", True),
    ("accepted_escalations", "accepted escalations", True),
    ("repair_after_restoration", "repair after restoration (all runs)", True),
    ("resolved_after_restore", "repair after restoration (restored runs)", True),
    ("completed_unverified", "completed with verified=false", True),
]
CONTROL_ROWS = [
    ("episodes", "runs", False), ("resolved", "repair rate", True), ("correct_response", "correct response", True),
    ("premature_handoff_rate", "premature handoff", True), ("escalation_rate", "escalated", True),
    ("escalated_empty_patch", "escalations with an empty patch (runs)", False),
    ("completed_unverified", "completed with verified=false", True), ("limit_endings", "limit endings", True),
]
EXTRA_DEFINITIONS = {
    **{f"ticket_full_{d}": f"share of judged tickets whose {d.replace('_', ' ')} dimension is fully specified"
       for d in DIMENSIONS},
    "ticket_partial_due_to_progress": "share of overall-partial tickets whose progress dimension is not full",
    "ticket_rule": OVERALL_RULE,
}


def _flatten(c: dict[str, Any]) -> dict[str, Any]:
    t = c["tickets"]
    out = dict(c)
    for d in DIMENSIONS:
        out[f"ticket_full_{d}"] = t["fully_specified"][d] if t.get("tickets") else None
    out["ticket_partial_due_to_progress"] = (t["partial_due_to"] or {}).get("progress") if t.get("tickets") else None
    return out


def _section(rows: list[dict[str, Any]], classes: tuple[str, ...], spec, both_evidence: bool) -> dict[str, Any] | None:
    mine = [r for r in rows if r["condition_class"] in classes]
    ifaces = [i for i in IFACE_ORDER if any(r["interface"] == i for r in mine)] or \
        sorted({r["interface"] for r in mine})
    if not mine:
        return None
    subsets = [("all runs", mine)]
    if both_evidence and len(ifaces) > 1:
        subsets.append(("evidence in every interface", evidence_in_all(mine, ifaces)))
    columns, cells = [], {}
    for sub_name, sub in subsets:
        for i in ifaces:
            col = f"{i} ({sub_name})" if len(subsets) > 1 else i
            columns.append(col)
            cells[col] = _flatten(cell([r for r in sub if r["interface"] == i])) if sub else None
    table = [{"key": k, "label": label, "pct": pct,
              "definition": DEFINITIONS.get(k) or EXTRA_DEFINITIONS.get(k, ""),
              "values": {col: (cells[col] or {}).get(k) for col in columns}} for k, label, pct in spec]
    return {"classes": list(classes), "interfaces": ifaces, "columns": columns, "rows": table,
            "units": {"all runs": len(mine), "paired units": len(paired_units(mine, ifaces)) // max(1, len(ifaces)),
                      **({"units with evidence in every interface": len(subsets[1][1]) // len(ifaces)}
                         if len(subsets) > 1 else {})}}


def headline(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Pooled over agents, and per agent: one table per blocked class (persistent barriers
    first: the paper's table), then the controls."""
    def sections(rs):
        out = {}
        plan = [(c, (c,), BLOCKED_ROWS, True) for c in blocked_classes()]  # persistent first: the paper's table
        for name, classes, spec, both in [*plan, ("controls", control_classes(), CONTROL_ROWS, False)]:
            s = _section(rs, classes, spec, both)
            if s:
                out[name] = s
        return out

    agents = sorted({r["agent"] for r in rows})
    return {"pooled": sections(rows), "per_agent": {a: sections([r for r in rows if r["agent"] == a]) for a in agents}
            if len(agents) > 1 else {}, "ticket_rule": OVERALL_RULE}
