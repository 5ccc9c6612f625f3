"""The LLM ticket judge as a report runs it on real endpoints: checked first (one request), its
verdicts cached per (ticket digest, judge model, prompt version) in each run's
``judge-cache.jsonl`` (a second report sends nothing again), and every call metered into the
run's spend ledger under the run's ceilings (:mod:`impasse.run.budget`): a reached ceiling stops
the judging, the tickets judged so far are kept and the rest are said to be unjudged.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from impasse.annotate.annotator import task_text
from impasse.run.budget import BudgetReached, Ledger, Metered, SpendLimits
from impasse.store.trajectory import read_trajectory
from impasse.tickets.judge import Judgement, llm_judge, prompt_version
from impasse.tickets.ticket import Ticket

CACHE = "judge-cache.jsonl"


@dataclass
class JudgeOutcome:
    judged: int = 0
    cached: int = 0
    unreadable: int = 0
    """Replies that held no verdict: not cached, those tickets left unjudged."""
    unjudged: list[str] = field(default_factory=list)
    paused: str | None = None


def cache_key(raw_ticket: Any, task: str, model: str) -> str:
    digest = hashlib.sha256(json.dumps({"ticket": raw_ticket, "task": task}, sort_keys=True).encode()).hexdigest()
    return hashlib.sha256(f"{digest}|{model}|{prompt_version()}".encode()).hexdigest()[:24]


def read_cache(path: Path) -> dict[str, dict[str, Any]]:
    out = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
                out[row["key"]] = row
            except (json.JSONDecodeError, KeyError):
                continue  # a torn last line
    return out


def run_of(row: dict[str, Any]) -> Path:
    """The run directory of an annotated row (its trajectory is RUN/episodes/<id>.jsonl)."""
    return Path(row["trajectory"]).resolve().parent.parent


def limits_of_run(run: Path, prices: dict[str, Any]) -> tuple[SpendLimits, Path]:
    """The run's recorded limits (its price table extended by ``prices``) and its ledger (a
    directory of trajectories without a manifest: no limits, a ledger beside them)."""
    try:
        cfg = json.loads((run / "manifest.json").read_text()).get("config", {})
    except (OSError, json.JSONDecodeError):  # trajectories gathered by hand: no limits of their own
        cfg = {}
    spend = dict(cfg.get("spend") or {})
    spend["prices"] = {**(spend.get("prices") or {}), **prices}
    ledger = Path(cfg["ledger"]) if cfg.get("ledger") else run / "usage.jsonl"
    return SpendLimits.model_validate(spend), ledger


def check_prices(rows: list[dict[str, Any]], model: str, prices: dict[str, Any]) -> None:
    """A run with a cost ceiling needs the judge's price, or its spend could not be counted."""
    for run in sorted({run_of(r) for r in rows if r.get("escalated") and r.get("trajectory")}):
        limits, _ = limits_of_run(run, prices)
        if limits.ceilings_without_prices([model]):
            raise ValueError(f"run {run} has a cost ceiling and the judge model {model!r} has no price in it; give "
                             f"--prices FILE with an entry ({model}: {{input: USD/Mtok, output: USD/Mtok}})")


def judge_metered(rows: list[dict[str, Any]], client: Any, model: str, prices: dict[str, Any]) -> JudgeOutcome:
    """Judge the escalated rows in place (as :func:`impasse.report.judging.judge_rows` does), from
    the cache where it has the verdict, else through ``client`` metered into each row's run."""
    outcome, meters, caches = JudgeOutcome(), {}, {}
    for row in rows:
        if not row.get("escalated") or not row.get("trajectory"):
            continue
        traj = read_trajectory(Path(row["trajectory"]))
        raw = traj.endings[0].get("ticket") if traj.endings else None
        if raw is None:
            continue
        run, task = run_of(row), task_text(traj)
        cache = caches.setdefault(run, read_cache(run / CACHE))
        key = cache_key(raw, task, model)
        if key in cache:
            j, outcome.cached = Judgement(**cache[key]["judgement"]), outcome.cached + 1
        elif outcome.paused:
            outcome.unjudged.append(row.get("episode_id", ""))
            row["ticket_unjudged_llm"] = outcome.paused
            continue
        else:
            if run not in meters:
                limits, ledger = limits_of_run(run, prices)
                meters[run] = Metered(client, limits, Ledger(ledger), "judge", name=model, run=run.name)
            try:
                j = llm_judge(Ticket.from_arguments(raw), meters[run], task)
            except BudgetReached as e:
                outcome.paused = row["ticket_unjudged_llm"] = str(e)
                outcome.unjudged.append(row.get("episode_id", ""))
                continue
            if not j.readable:  # not a rating: never cached (the next report asks again), never counted
                outcome.unreadable += 1
                row["ticket_unjudged_llm"] = j.note
                outcome.unjudged.append(row.get("episode_id", ""))
                continue
            cache[key] = {"key": key, "model": model, "prompt_version": prompt_version(),
                          "judgement": j.__dict__}
            with open(run / CACHE, "a") as fh:
                fh.write(json.dumps(cache[key]) + "\n")
            outcome.judged += 1
        row.update(ticket_scores_llm=j.scores, ticket_overall_llm=j.overall,
                   ticket_sufficient_llm=j.overall == "sufficient", ticket_judge_llm=j.judge,
                   ticket_judge_llm_note=j.note)
    return outcome
