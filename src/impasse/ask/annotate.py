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
                 "ask_f1", "ask_f1_per_pass", "questions_per_task", "excluded")
MODE_COLUMNS = ("agent", "domain", "mode", "tasks", "episodes", "pass@3", "pass@3_unbiased", "shaped_reward")
MODES = ("baseline", "full_info", "ask_human")
BOTH = "both"
"""The combined-domain rows' domain (HiL-Bench's BOTH)."""


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
    """-> (Table 1 rows per agent and domain, a combined ``both`` row per agent run in both
    domains, the excluded episodes)."""
    keep, excluded = _included(rows)
    groups = _groups(keep)
    return [_table_row(agent, domain, rs, excluded, rows) for (agent, domain), rs in groups], excluded


def mode_table(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """pass@3 (empirical and unbiased) and the mean shaped reward per agent, domain and mode."""
    keep, _ = _included(rows)
    out = []
    for (agent, domain), rs in _groups(keep):
        for mode in MODES:
            eps = [r for r in rs if r["mode"] == mode]
            if not eps:
                continue
            e = [episode_of(r) for r in eps]
            out.append({"agent": agent, "domain": domain, "mode": mode, "tasks": len({r["instance_id"] for r in eps}),
                        "episodes": len(eps), "pass@3": scoring.pass_at_k(e, 3),
                        "pass@3_unbiased": scoring.pass_at_k_unbiased(e, 3),
                        "shaped_reward": sum(r["shaped_reward"] for r in eps) / len(eps)})
    return out


def _included(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    bad = excluded_groups(rows)
    keep = [r for r in rows if (r["agent"], r["mode"], r["instance_id"]) not in bad]
    excluded = [{"episode_id": r["episode_id"], "agent": r["agent"], "mode": r["mode"], "task": r["instance_id"],
                 "why": "invalid pass" if not r["valid"] else "another pass of this task/mode is invalid"}
                for r in rows if (r["agent"], r["mode"], r["instance_id"]) in bad]
    return keep, excluded


def _groups(keep: list[dict[str, Any]]) -> list[tuple[tuple[str, str], list[dict[str, Any]]]]:
    """(agent, domain) groups, then (agent, both) for agents with episodes in more than one domain."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in keep:
        groups[(r["agent"], r["domain"])].append(r)
    out = sorted(groups.items())
    for agent in sorted({a for a, _ in groups}):
        domains = [d for a, d in groups if a == agent]
        if len(domains) > 1:
            out.append(((agent, BOTH), [r for d in domains for r in groups[(agent, d)]]))
    return out


def _table_row(agent: str, domain: str, rs: list[dict[str, Any]], excluded: list[dict[str, Any]],
               rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_mode = {m: [episode_of(r) for r in rs if r["mode"] == m] for m in MODES}
    ask_eps = by_mode["ask_human"]
    full = scoring.pass_at_k(by_mode["full_info"], 3) if by_mode["full_info"] else None
    ask = scoring.pass_at_k(ask_eps, 3) if ask_eps else None
    s = scoring.summarize(ask_eps)
    per_pass = scoring.per_pass_f1(ask_eps)
    f1_mean, f1_std = scoring.mean_std(list(per_pass.values()))
    domains = {r["domain"] for r in rs}
    n_excl = sum(1 for x in excluded if x["agent"] == agent
                 and any(r["instance_id"] == x["task"] for r in rows if r["domain"] in domains))
    return {"agent": agent, "domain": domain, "tasks": len({r["instance_id"] for r in rs}),
            "full_info_pass@3": full, "ask_human_pass@3": ask,
            "baseline_pass@3": scoring.pass_at_k(by_mode["baseline"], 3) if by_mode["baseline"] else None,
            "gap": (full - ask) if full is not None and ask is not None else None,
            "recall": s.recall if ask_eps else None, "precision": s.precision if ask_eps else None,
            "ask_f1": s.f1 if ask_eps else None,
            "ask_f1_mean": f1_mean if ask_eps else None, "ask_f1_std": f1_std if ask_eps else None,
            "ask_f1_per_pass": per_pass if ask_eps else None,
            "questions_per_task": sum(len(e.questions) for e in ask_eps) / len(ask_eps) if ask_eps else None,
            "ask_episodes": s.episodes, "excluded": n_excl,
            "task_ids": sorted({e.task_id for e in ask_eps})}
