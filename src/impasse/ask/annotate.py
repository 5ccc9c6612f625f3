"""Ask trajectories -> report rows, and rows -> HiL-Bench's Table 1 (pure: no I/O but the
trajectory object handed in).

A row holds the episode's questions and verdicts (recorded on its ``ask_human`` steps), its
precision / recall / Ask-F1 and shaped reward computed by :mod:`impasse.ask.scoring`, whether it
resolved the task and whether it is valid. A (task, mode, agent) counts only when all of its
passes are valid; the others are listed as excluded.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from impasse.ask import scoring

TABLE_COLUMNS = ("agent", "domain", "tasks", "full_info_pass@3", "ask_human_pass@3", "gap", "recall", "precision",
                 "ask_f1", "questions_per_task", "excluded")


def asks(trajectory: Any) -> list[dict[str, Any]]:
    return [e["ask"] for e in trajectory.events if e["type"] == "step" and "ask" in e]


def is_invalid(trajectory: Any) -> bool:
    return any(e.get("invalid") for e in trajectory.events if e["type"] == "step")


def episode_of(row: dict[str, Any]) -> scoring.Episode:
    return scoring.Episode(task_id=row["instance_id"], pass_index=row["pass"], n_blockers=row["n_blockers"],
                           questions=[scoring.Question(status=q["status"], blocker_id=q.get("blocker_id"))
                                      for q in row["questions"]],
                           resolved=row["resolved"], valid=row["valid"])


def annotate(trajectory: Any) -> dict[str, Any]:
    h = trajectory.header
    verdicts = asks(trajectory)
    endings = trajectory.endings
    row = {"episode_id": h["episode_id"], "instance_id": h["instance_id"], "agent": h["agent"],
           "interface": h["interface"], "mode": h["interface"], "domain": h.get("domain", ""),
           "pass": h.get("pass", 1), "n_blockers": h["n_blockers"], "condition": h["condition"],
           "condition_class": "ask", "ending": endings[0]["ending"] if endings else None,
           "steps": max([s.index for s in trajectory.steps], default=0),
           "resolved": bool((trajectory.grade or {}).get("resolved")), "valid": not is_invalid(trajectory),
           "questions": [{"question": v["question"], "status": v["status"], "blocker_id": v.get("blocker_id")}
                         for v in verdicts]}
    ep = episode_of(row)
    m = scoring.episode_metrics(ep)
    row.update(precision=m.precision, recall=m.recall, ask_f1=m.f1, n_questions=m.n_questions,
               discovered=sorted(scoring.discovered(ep)),
               shaped_reward=scoring.shaped_reward(ep.questions, ep.n_blockers))
    return row


def excluded_groups(rows: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """(agent, mode, task) groups with at least one invalid pass: none of their passes count."""
    return {(r["agent"], r["mode"], r["instance_id"]) for r in rows if not r["valid"]}


def table(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """-> (Table 1 rows per agent and domain, the excluded episodes)."""
    bad = excluded_groups(rows)
    keep = [r for r in rows if (r["agent"], r["mode"], r["instance_id"]) not in bad]
    excluded = [{"episode_id": r["episode_id"], "agent": r["agent"], "mode": r["mode"], "task": r["instance_id"],
                 "why": "invalid pass" if not r["valid"] else "another pass of this task/mode is invalid"}
                for r in rows if (r["agent"], r["mode"], r["instance_id"]) in bad]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in keep:
        groups[(r["agent"], r["domain"])].append(r)
    out = []
    for (agent, domain), rs in sorted(groups.items()):
        by_mode = {m: [episode_of(r) for r in rs if r["mode"] == m] for m in ("full_info", "ask_human", "baseline")}
        full = scoring.pass_at_k(by_mode["full_info"], 3) if by_mode["full_info"] else None
        ask = scoring.pass_at_k(by_mode["ask_human"], 3) if by_mode["ask_human"] else None
        s = scoring.summarize(by_mode["ask_human"])
        tasks = {e.task_id for e in by_mode["ask_human"]}
        n_excl = sum(1 for x in excluded if x["agent"] == agent
                     and any(r["instance_id"] == x["task"] for r in rows if r["domain"] == domain))
        out.append({"agent": agent, "domain": domain, "tasks": len({r["instance_id"] for r in rs}),
                    "full_info_pass@3": full, "ask_human_pass@3": ask,
                    "baseline_pass@3": scoring.pass_at_k(by_mode["baseline"], 3) if by_mode["baseline"] else None,
                    "gap": (full - ask) if full is not None and ask is not None else None,
                    "recall": s.recall if by_mode["ask_human"] else None,
                    "precision": s.precision if by_mode["ask_human"] else None,
                    "ask_f1": s.f1 if by_mode["ask_human"] else None,
                    "questions_per_task": (sum(len(e.questions) for e in by_mode["ask_human"]) / len(by_mode["ask_human"])
                                           if by_mode["ask_human"] else None),
                    "ask_episodes": s.episodes, "excluded": n_excl, "task_ids": sorted(tasks)})
    return out, excluded
