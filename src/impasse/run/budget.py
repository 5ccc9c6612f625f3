"""Spend and rate limits for runs against paid model endpoints.

Every model call of a run is written to one append-only **ledger**, ``RUN/usage.jsonl`` (one
line per call: episode, model, tokens, cost), by whichever worker made it. The ledger is the
run's live count across worker processes and across ``--resume``: before each model call the
episode reads it and

- refuses the call when a ceiling (``--max-cost``, ``--max-tokens``, for the run or for one
  model) is already reached: :class:`BudgetReached` is raised *between* two steps, so the
  episode's last recorded step is whole; the episode records a ``paused`` event (not a harness
  error) and ``--resume`` rebuilds it from its recorded steps and goes on;
- waits while the last minute's requests or tokens are at ``--rpm`` / ``--tpm``.

The check happens before a call whose cost is not yet known, so a run can overshoot a ceiling by
at most one call per parallel worker. Costs come from the user's price table (USD per million
input, output and cached input tokens per model) when it names the model, else from the
client's own per-call accounting; the cost written to the ledger is the one written to the
trajectory's ``usage``, so the two always add up to the same total.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from impasse.agent.endings import EndpointError
from impasse.prices import Price, PriceTable

WINDOW_S = 60.0


class Ceiling(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    max_cost: float | None = None
    max_tokens: int | None = None


class SpendLimits(BaseModel):
    """What a run may spend; recorded in the manifest (the price table too)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    max_cost: float | None = Field(None, description="USD for the whole run")
    max_tokens: int | None = Field(None, description="Prompt + completion tokens for the whole run")
    per_model: dict[str, Ceiling] = Field(default_factory=dict)
    rpm: int | None = Field(None, description="Model requests per minute, whole run")
    tpm: int | None = Field(None, description="Tokens per minute, whole run")
    prices: dict[str, Price] = Field(default_factory=dict, description="The run's price table (impasse.prices): "
                                                                      "model label -> USD per million tokens")

    @field_validator("prices", mode="before")
    @classmethod
    def _one_key_per_model(cls, v: Any) -> Any:
        """Keys as the price table spells them (``model/<name>``), whatever the file wrote."""
        return PriceTable.of(v, "--prices").prices if isinstance(v, dict) else v

    @property
    def table(self) -> PriceTable:
        return PriceTable(prices=self.prices)

    def ceilings_without_prices(self, models: list[str]) -> list[str]:
        """Models whose spend a cost ceiling limits but whose cost is unknown (no price)."""
        capped = [m for m in models if self.max_cost is not None or (self.per_model.get(m) or Ceiling()).max_cost
                  is not None]
        return self.table.unpriced(capped)

    @field_validator("max_cost", "max_tokens", "rpm", "tpm")
    @classmethod
    def _positive(cls, v: float | None) -> float | None:
        if v is not None and v < 0:
            raise ValueError("limits must be >= 0")
        return v


class BudgetReached(EndpointError):
    """A spend ceiling is reached: the run pauses (resumable), the episode is not failed."""


# ------------------------------------------------------------------------------ pure logic


def totals(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Ledger rows -> per model (and ``"*"`` for all) calls, tokens and cost."""
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        for key in ("*", r.get("model", "")):
            t = out.setdefault(key, {"calls": 0, "tokens": 0, "cost_usd": 0.0})
            t["calls"] += 1
            t["tokens"] += r.get("prompt_tokens", 0) + r.get("completion_tokens", 0)
            t["cost_usd"] += r.get("cost_usd", 0.0)
    return out


def ceiling_reached(limits: SpendLimits, model: str, spent: dict[str, dict[str, float]]) -> str | None:
    """Why no further call of ``model`` may be made, or None."""
    checks = [("the run", Ceiling(max_cost=limits.max_cost, max_tokens=limits.max_tokens), spent.get("*"))]
    if model in limits.per_model:
        checks.append((f"model {model!r}", limits.per_model[model], spent.get(model)))
    for who, ceiling, t in checks:
        t = t or {"tokens": 0, "cost_usd": 0.0}
        if ceiling.max_cost is not None and t["cost_usd"] >= ceiling.max_cost:
            return f"{who} has spent ${t['cost_usd']:.4f} of its --max-cost ${ceiling.max_cost:g}"
        if ceiling.max_tokens is not None and t["tokens"] >= ceiling.max_tokens:
            return f"{who} has used {int(t['tokens'])} of its --max-tokens {ceiling.max_tokens}"
    return None


def rate_wait(limits: SpendLimits, rows: list[dict[str, Any]], now: float) -> float:
    """Seconds to wait before the next request keeps the last minute under --rpm / --tpm."""
    recent = sorted((r for r in rows if now - r["t"] < WINDOW_S), key=lambda r: r["t"])
    waits = [0.0]
    if limits.rpm and len(recent) >= limits.rpm:
        waits.append(recent[len(recent) - limits.rpm]["t"] + WINDOW_S - now)
    if limits.tpm:
        used = 0
        for r in reversed(recent):  # newest first: the oldest that must leave the window
            used += r.get("prompt_tokens", 0) + r.get("completion_tokens", 0)
            if used >= limits.tpm:
                waits.append(r["t"] + WINDOW_S - now)
                break
    return max(waits)


def parse_ceilings(text: str | None, kind: type = float) -> tuple[Any, dict[str, Any]]:
    """``"5"`` -> run ceiling 5; ``"5,gpt-4o=2"`` -> run 5 and model gpt-4o 2."""
    run, per = None, {}
    for part in (p.strip() for p in (text or "").split(",") if p.strip()):
        name, sep, value = part.rpartition("=")
        try:
            number = kind(value)
        except ValueError:
            raise ValueError(f"{part!r}: expected a number or MODEL=NUMBER") from None
        if sep:
            per[name] = number
        else:
            run = number
    return run, per


# ------------------------------------------------------------------------------ the ledger (I/O)


class Ledger:
    """``RUN/usage.jsonl``: one line per model call, appended under an exclusive lock."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def rows(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        rows = []
        for line in self.path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a torn last line of a killed writer
        return rows

    def append(self, row: dict[str, Any]) -> None:
        with open(self.path, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            os.fsync(fh.fileno())


class Metered:
    """A model client that checks the run's limits before each call and books each call after."""

    def __init__(self, inner: Any, limits: SpendLimits, ledger: Ledger, episode_id: str,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.inner, self.limits, self.ledger, self.episode_id, self.sleep = inner, limits, ledger, episode_id, sleep
        self.kind = getattr(inner, "kind", "model")
        self.name = getattr(inner, "name", "")

    def __getattr__(self, item: str) -> Any:
        return getattr(self.inner, item)

    def query(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        while True:
            rows = self.ledger.rows()
            if reason := ceiling_reached(self.limits, self.name, totals(rows)):
                raise BudgetReached(f"spend ceiling reached: {reason}")
            wait = rate_wait(self.limits, rows, time.time())
            if wait <= 0:
                break
            self.sleep(min(wait, 5.0))
        response = self.inner.query(messages, tools)
        usage = response.usage = response.usage or {}
        p, c = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
        cost = self.limits.table.cost(usage, self.name)
        if cost is not None:
            usage["cost_usd"] = round(cost, 6)
        self.ledger.append({"t": time.time(), "episode_id": self.episode_id, "model": self.name,
                            "prompt_tokens": p, "completion_tokens": c, "cached_tokens": usage.get("cached_tokens", 0),
                            "cost_usd": usage.get("cost_usd", 0.0), **({} if cost is not None else {"priced": False})})
        return response


def meter(model: Any, limits: SpendLimits, ledger_path: Path, episode_id: str) -> Any:
    """Wrap a model client of a run (reference agents and replays cost nothing and are not)."""
    if getattr(model, "kind", "") != "model":
        return model
    return Metered(model, limits, Ledger(ledger_path), episode_id)
