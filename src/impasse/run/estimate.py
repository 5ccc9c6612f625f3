"""The plan of a run or sweep before it starts: episodes per model x suite x condition x
interface, and the tokens, cost and wall time it should take: measured per episode in a prior run
(``--estimate-from RUN``), else the assumptions in ``estimate.yaml`` (printed with the plan).
Pure functions over planned episodes and ledger rows; nothing here calls a network or writes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from importlib import resources
from typing import Any

import yaml

from impasse.prices import PriceTable

FIELDS = ("calls_per_episode", "prompt_tokens_per_call", "completion_tokens_per_call", "seconds_per_episode")


def assumptions() -> dict[str, float]:
    data = yaml.safe_load(resources.files("impasse.run").joinpath("estimate.yaml").read_text())
    return {k: float(data[k]) for k in FIELDS}


def measured(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Ledger rows of a prior run -> per model (and ``"*"``) the per-episode figures; an
    episode's wall time is from its first call to its last (tools after the last are not seen)."""
    by: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        for key in ("*", r.get("model", "")):
            by[key][r.get("episode_id", "")].append(r)
    out = {}
    for model, episodes in by.items():
        calls = [r for rs in episodes.values() for r in rs]
        out[model] = {
            "calls_per_episode": len(calls) / len(episodes),
            "prompt_tokens_per_call": sum(r.get("prompt_tokens", 0) for r in calls) / len(calls),
            "completion_tokens_per_call": sum(r.get("completion_tokens", 0) for r in calls) / len(calls),
            "seconds_per_episode": sum(max(r["t"] for r in rs) - min(r["t"] for r in rs) + r_latency(rs)
                                       for rs in episodes.values()) / len(episodes)}
    return out


def r_latency(rs: list[dict[str, Any]]) -> float:
    """The first call's own latency (the span between calls misses it)."""
    first = min(rs, key=lambda r: r["t"])
    return float(first.get("latency_s", 0.0))


def plan_counts(planned: list[tuple[str, list[Any]]]) -> Counter:
    """(model, suite, condition, interface) -> episodes, over each suite's planned episodes."""
    c: Counter = Counter()
    for suite, specs in planned:
        for s in specs:
            c[(s.agent.split("/", 1)[-1], suite, s.condition, s.interface)] += 1
    return c


def per_episode(model: str, prior: dict[str, dict[str, float]] | None, step_limit: int | None = None,
                max_tokens: int | None = None) -> tuple[dict[str, float], str]:
    """The figures for one of ``model``'s episodes and where they come from. Assumed figures are
    capped by what the run allows: calls at the step limit (one call per step at most), each
    completion at the model's ``max_tokens`` (the endpoint stops it there)."""
    if prior and model in prior:
        return prior[model], "measured (this model)"
    if prior and "*" in prior:
        return prior["*"], "measured (all models of the prior run)"
    fig = assumptions()
    if step_limit:
        fig["calls_per_episode"] = min(fig["calls_per_episode"], float(step_limit))
    if max_tokens and max_tokens < fig["completion_tokens_per_call"]:
        fig["completion_tokens_per_call"] = float(max_tokens)
        return fig, f"assumed (estimate.yaml; completions capped at its max_tokens {max_tokens})"
    return fig, "assumed (estimate.yaml)"


def completion_caps(models: dict[str, dict[str, Any]], single: dict[str, Any] | None) -> dict[str, int]:
    """Each model's ``max_tokens`` by its name in the plan (a sweep's label, ``--agent openai:NAME``
    or ``--model NAME``), where one is set."""
    settings = {**models, **({single["model"]: single} if single and single.get("model") else {})}
    return {name: int(s["max_tokens"]) for name, s in settings.items() if s.get("max_tokens")}


def estimate_plan(counts: Counter, prices: PriceTable, prior: dict[str, dict[str, float]] | None, jobs: int,
                  rpm: int | None = None, step_limit: int | None = None, caps: dict[str, int] | None = None
                  ) -> dict[str, Any]:
    """Per model: episodes, calls, tokens, cost (None when unpriced), episode-seconds; and the
    wall time of the whole plan on ``jobs`` workers (at least what ``rpm`` allows). ``caps``: each
    model's ``max_tokens`` (:func:`completion_caps`)."""
    episodes: Counter = Counter()
    for (model, *_rest), n in counts.items():
        episodes[model] += n
    models = {}
    for model, n in sorted(episodes.items()):
        fig, source = per_episode(model, prior, step_limit, (caps or {}).get(model))
        calls = n * fig["calls_per_episode"]
        prompt, completion = calls * fig["prompt_tokens_per_call"], calls * fig["completion_tokens_per_call"]
        price = prices.get(model)
        models[model] = {"episodes": n, "calls": round(calls), "prompt_tokens": round(prompt),
                         "completion_tokens": round(completion),
                         "cost_usd": price.cost(int(prompt), int(completion)) if price else None,
                         "episode_seconds": n * fig["seconds_per_episode"], "source": source}
    calls = sum(m["calls"] for m in models.values())
    wall = sum(m["episode_seconds"] for m in models.values()) / max(jobs, 1)
    if rpm:
        wall = max(wall, calls / rpm * 60)
    priced = [m["cost_usd"] for m in models.values()]
    return {"models": models, "episodes": sum(episodes.values()), "calls": calls,
            "tokens": sum(m["prompt_tokens"] + m["completion_tokens"] for m in models.values()),
            "cost_usd": sum(priced) if priced and None not in priced else None, "wall_seconds": wall,
            "assumptions": per_episode("", None, step_limit)[0]
            if any(m["source"].startswith("assumed") for m in models.values()) else None}


def eta_seconds(done: int, total: int, elapsed: float) -> float | None:
    """Time left at the pace so far (None before the first episode ends)."""
    if done <= 0 or total <= done:
        return None if done <= 0 else 0.0
    return elapsed / done * (total - done)


def spend_lines(limits: Any, spent: dict[str, dict[str, float]], models: list[str], whole: str = "run"
                ) -> list[str]:
    """``run: $0.12 of $5``, ``m1: $0.05 of $1`` (and tokens) for each ceiling set; ``whole``
    names what the first ceiling covers (``sweep`` for a sweep's runs)."""
    out = []
    scopes = [(whole, "*", limits.max_cost, limits.max_tokens)]
    for m in models:
        c = limits.ceiling_of(m)
        if c is not None:
            scopes.append((m, m, c.max_cost, c.max_tokens))
    for who, key, cost, tokens in scopes:
        t = spent.get(key) or {"cost_usd": 0.0, "tokens": 0}
        parts = [f"${t['cost_usd']:.4f}" + (f" of ${cost:g}" if cost is not None else "")]
        if tokens is not None:
            parts.append(f"{int(t['tokens'])} of {tokens} tokens")
        if cost is not None or tokens is not None or key == "*":
            out.append(f"{who}: {', '.join(parts)}")
    return out


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(round(seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"
