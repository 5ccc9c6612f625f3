"""Spend and rate limits for runs against paid model endpoints.

Every model call of a run is written to one append-only **ledger**, ``RUN/usage.jsonl`` (one
line per call: episode, model, tokens, cost, retries), by whichever worker made it. Beside it,
``RUN/usage.state.json`` holds the running totals, the calls in flight (reservations), the rate
buckets and the pauses, read and rewritten under one lock (``RUN/usage.lock``) by every worker:
a check costs the same at the first call and at the millionth (the state is rebuilt from the
ledger only when the two disagree, after a crash). Before each call the worker

- **reserves** the call's cost before making it: its prompt (estimated from the request's
  characters, conservatively) plus the model's *max output* at the model's price. A call whose
  reservation does not fit under a ceiling (``--max-cost``, ``--max-tokens``, for the run or for
  one model) beside what is spent and what other workers hold is not made: when it would not fit
  even alone the ceiling is reached and that scope **pauses** (:class:`BudgetReached` between two
  steps, so the episode's last recorded step is whole; ``--resume`` continues it); otherwise it
  waits for the others' calls to be booked. So spend never crosses a ceiling by more than the
  error of the estimate (the output part is an upper bound; only the prompt estimate can be low);
- takes one request and its reserved tokens from the ``--rpm`` / ``--tpm`` token buckets
  (:mod:`impasse.run.buckets`), waiting when they are empty.

A pause is sticky for what it covers: every later call of the run (or of that model) is refused
and no new episode of it starts (:func:`paused_reason`); the next ``--resume`` clears it. Costs
come from the price table (:mod:`impasse.prices`); a cost ceiling on a model without a price is
refused before the run starts (:func:`impasse.run.plan.check`). The cost written to the ledger is
the one written to the trajectory's ``usage``, so the two always add up to the same total.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from impasse.agent.endings import EndpointError
from impasse.prices import Price, PriceTable, label
from impasse.run import buckets

CHARS_PER_TOKEN = 3.0
"""Prompt estimate: characters of the request's JSON per token. Tokenizers give ~4 for English
and ~3-3.5 for code and JSON; 3 errs on the high side (a reservation too large waits, one too
small can overshoot)."""
DEFAULT_MAX_OUTPUT = 16384
"""A model config without ``max_tokens`` may answer this much (reserved as such)."""
WAIT_FOR_OTHERS_S = 0.25


class Ceiling(BaseModel):
    """One model's own limits (a sweep's model at its own endpoint has its own rate limits)."""

    model_config = ConfigDict(strict=True, extra="forbid")
    max_cost: float | None = None
    max_tokens: int | None = None
    rpm: int | None = Field(None, ge=1)
    tpm: int | None = Field(None, ge=1)


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

    def ceiling_of(self, model: str) -> Ceiling | None:
        """The model's own ceiling, however either side spells it (``gpt-4o``, ``model/gpt-4o``)."""
        for key, ceiling in self.per_model.items():
            if label(key) == label(model):
                return ceiling
        return None

    def ceilings_without_prices(self, models: list[str]) -> list[str]:
        """Models whose spend a cost ceiling limits but whose cost is unknown (no price)."""
        capped = [m for m in models if self.max_cost is not None or (self.ceiling_of(m) or Ceiling()).max_cost
                  is not None]
        return self.table.unpriced(capped)

    def unknown_ceilings(self, models: list[str]) -> list[str]:
        """Per-model ceilings naming no model of the run (a typo would otherwise limit nothing)."""
        known = {label(m) for m in models}
        return [k for k in self.per_model if label(k) not in known]

    @field_validator("max_cost", "max_tokens", "rpm", "tpm")
    @classmethod
    def _positive(cls, v: float | None) -> float | None:
        if v is not None and v < 0:
            raise ValueError("limits must be >= 0")
        return v


class BudgetReached(EndpointError):
    """A spend ceiling is reached: what it covers pauses (resumable), the episode is not failed.
    ``scope``: ``"*"`` (the run's ceiling) or the model whose own ceiling it is."""

    def __init__(self, message: str, scope: str = "*") -> None:
        super().__init__(message)
        self.scope = scope


@dataclass(frozen=True)
class Estimate:
    """What one call is reserved at before it is made."""

    tokens: int
    cost_usd: float


def estimate(messages: list[dict[str, Any]], tools: list[dict[str, Any]], max_output: int | None,
             price: Price | None) -> Estimate:
    """The call's prompt (from the request's size) plus the model's whole max output."""
    chars = len(json.dumps(messages, default=str)) + len(json.dumps(tools, default=str))
    prompt = math.ceil(chars / CHARS_PER_TOKEN)
    output = max_output or DEFAULT_MAX_OUTPUT
    return Estimate(prompt + output, price.cost(prompt, output) if price is not None else 0.0)


# ------------------------------------------------------------------------------ pure logic


def totals(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Ledger rows -> per model (and ``"*"`` for all) calls, tokens, cost and retries."""
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        add(out, r)
    return out


def add(spent: dict[str, dict[str, float]], row: dict[str, Any]) -> None:
    """Book one ledger row into running totals (in place)."""
    for key in ("*", row.get("model", "")):
        t = spent.setdefault(key, {"calls": 0, "tokens": 0, "cost_usd": 0.0, "retries": 0,
                                   "prompt_tokens": 0, "completion_tokens": 0})
        t["calls"] += 1
        t["prompt_tokens"] = t.get("prompt_tokens", 0) + row.get("prompt_tokens", 0)
        t["completion_tokens"] = t.get("completion_tokens", 0) + row.get("completion_tokens", 0)
        t["tokens"] += row.get("prompt_tokens", 0) + row.get("completion_tokens", 0)
        t["cost_usd"] += row.get("cost_usd", 0.0)
        t["retries"] = t.get("retries", 0) + row.get("retries", 0)


def ceiling_reached(limits: SpendLimits, model: str, spent: dict[str, dict[str, float]]) -> str | None:
    """Why no further call of ``model`` may be made, or None."""
    for _scope, who, ceiling, t in _scopes(limits, model, spent):
        t = t or {"tokens": 0, "cost_usd": 0.0}
        if ceiling.max_cost is not None and t["cost_usd"] >= ceiling.max_cost:
            return f"{who} has spent ${t['cost_usd']:.4f} of its --max-cost ${ceiling.max_cost:g}"
        if ceiling.max_tokens is not None and t["tokens"] >= ceiling.max_tokens:
            return f"{who} has used {int(t['tokens'])} of its --max-tokens {ceiling.max_tokens}"
    return None


def _scopes(limits: SpendLimits, model: str, spent: dict[str, dict[str, float]]
            ) -> list[tuple[str, str, Ceiling, dict[str, float] | None]]:
    """(scope, who, ceiling, spent) for the run's ceiling and the model's own."""
    out = [("*", "the run", Ceiling(max_cost=limits.max_cost, max_tokens=limits.max_tokens), spent.get("*"))]
    if (own := limits.ceiling_of(model)) is not None:
        out.append((model, f"model {model!r}", own, spent.get(model)))
    return out


def held(state: dict[str, Any], scope: str) -> tuple[float, float]:
    """(cost, tokens) reserved by calls in flight, for the run (``"*"``) or one model."""
    rs = [r for r in state.get("reserved", {}).values() if scope == "*" or r["model"] == scope]
    return sum(r["cost_usd"] for r in rs), sum(r["tokens"] for r in rs)


def admit(state: dict[str, Any], limits: SpendLimits, model: str, est: Estimate, now: float
          ) -> tuple[str, Any]:
    """May a call of ``model`` reserved at ``est`` start now? ``("go", None)``, ``("wait",
    seconds)`` or ``("refuse", (scope, reason))``. Pure: the caller holds the lock and applies
    :func:`reserve` on "go"."""
    for scope in ("*", model):
        if reason := state.get("paused", {}).get(scope):
            return "refuse", (scope, reason)
    waits = [0.0]
    for scope, who, ceiling, t in _scopes(limits, model, state.get("spent", {})):
        t = t or {"tokens": 0, "cost_usd": 0.0}
        cost_held, tokens_held = held(state, scope)
        for kind, cap, spent, hold, need, flag in (
                ("cost", ceiling.max_cost, t["cost_usd"], cost_held, est.cost_usd, "--max-cost"),
                ("tokens", ceiling.max_tokens, t["tokens"], tokens_held, est.tokens, "--max-tokens")):
            if cap is None:
                continue
            if spent + need > cap:
                shown = f"${spent:.4f} of its {flag} ${cap:g}" if kind == "cost" else f"{int(spent)} of its {flag} {cap}"
                return "refuse", (scope, f"{who} has spent {shown}; the next call may cost up to "
                                         + (f"${need:.4f}" if kind == "cost" else f"{need} tokens")
                                         + " (its prompt + the model's max_tokens)")
            if spent + hold + need > cap:
                waits.append(WAIT_FOR_OTHERS_S)  # fits once the calls in flight are booked
    for key, (kind, (capacity, rate)) in buckets.limits_of(limits, model).items():
        need = 1 if kind == "rpm" else est.tokens
        waits.append(buckets.wait_for(state.get("buckets", {}).get(key), capacity, rate, need, now))
    wait = max(waits)
    return ("wait", wait) if wait > 0 else ("go", None)


def reserve(state: dict[str, Any], limits: SpendLimits, model: str, est: Estimate, now: float,
            owner: dict[str, Any]) -> str:
    """Take the call's request and tokens from the buckets and hold its estimate; its id."""
    for key, (kind, (capacity, rate)) in buckets.limits_of(limits, model).items():
        amount = 1 if kind == "rpm" else est.tokens  # a call above the capacity goes into debt
        state.setdefault("buckets", {})[key] = buckets.take(state.get("buckets", {}).get(key), capacity, rate,
                                                            amount, now)
    rid = uuid.uuid4().hex[:12]
    state.setdefault("reserved", {})[rid] = {"model": model, "cost_usd": est.cost_usd, "tokens": est.tokens,
                                             "t": now, **owner}
    return rid


def settle(state: dict[str, Any], limits: SpendLimits, rid: str, used_tokens: int | None, now: float) -> None:
    """Drop a reservation; a call that used more tokens than it took from the tpm buckets owes
    the rest (see :mod:`impasse.run.buckets`)."""
    r = state.get("reserved", {}).pop(rid, None)
    if r is None or not used_tokens or used_tokens <= r["tokens"]:
        return
    for key, (kind, (capacity, rate)) in buckets.limits_of(limits, r["model"]).items():
        if kind == "tpm":
            state.setdefault("buckets", {})[key] = buckets.take(state.get("buckets", {}).get(key), capacity, rate,
                                                                used_tokens - r["tokens"], now)


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
    """``RUN/usage.jsonl`` (one line per call, appended) and its running state, both changed
    under one exclusive lock, so any number of worker processes share totals and buckets."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.state_path = path.with_name("usage.state.json")
        self.lock_path = path.with_name("usage.lock")

    def rows(self) -> list[dict[str, Any]]:
        """Every booked call (reports and ``status``; a check never reads them)."""
        if not self.path.exists():
            return []
        rows = []
        for line in self.path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a torn last line of a killed writer
        return rows

    @contextmanager
    def locked(self) -> Iterator[dict[str, Any]]:
        """The state, under the lock; rewritten (atomically) when the block ends."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.lock_path, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            state = self._load()
            try:
                yield state
            finally:  # a refusal raised inside the block records its pause too
                tmp = self.state_path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps(state))
                os.replace(tmp, self.state_path)

    def state(self) -> dict[str, Any]:
        with self.locked() as s:
            return json.loads(json.dumps(s))

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def _load(self) -> dict[str, Any]:
        """The state file, or the state rebuilt from the ledger when the file is missing, torn, or
        behind the ledger (a writer killed between the two): the ledger is the record."""
        try:
            state = json.loads(self.state_path.read_text())
            if state.get("ledger_bytes") == self._size():
                return state
        except (OSError, json.JSONDecodeError):
            state = {}
        rows = self.rows()
        return {**state, "ledger_bytes": self._size(), "rows": len(rows), "spent": totals(rows)}

    def append(self, row: dict[str, Any], state: dict[str, Any]) -> None:
        """Book ``row``: the line on disk first (fsync), then the totals (the caller holds the lock)."""
        with open(self.path, "a") as fh:
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        add(state.setdefault("spent", {}), row)
        state["rows"] = state.get("rows", 0) + 1
        state["ledger_bytes"] = self._size()

    def new_session(self) -> None:
        """A run (or resume) starts: no call is in flight and no pause holds any more."""
        with self.locked() as s:
            s["reserved"], s["paused"], s["session_started"] = {}, {}, time.time()

    def pause(self, scope: str, reason: str) -> None:
        with self.locked() as s:
            s.setdefault("paused", {}).setdefault(scope, reason)


def _alive(owner: dict[str, Any]) -> bool:
    """A reservation's process still exists (one on another host is assumed to)."""
    if owner.get("host") != socket.gethostname():
        return True
    try:
        os.kill(int(owner.get("pid", 0)), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True


def paused_reason(ledger_path: Path, model: str) -> BudgetReached | None:
    """The pause that covers ``model``'s episodes, if any: a new episode must not start."""
    state_path = Path(ledger_path).with_name("usage.state.json")
    if not state_path.exists():
        return None
    paused = Ledger(Path(ledger_path)).state().get("paused", {})
    for scope in ("*", model):
        if scope in paused:
            return BudgetReached(f"spend ceiling reached: {paused[scope]}", scope)
    return None


class Metered:
    """A model client that reserves each call under the run's limits and books it after."""

    def __init__(self, inner: Any, limits: SpendLimits, ledger: Ledger, episode_id: str,
                 sleep: Callable[[float], None] = time.sleep, name: str | None = None,
                 clock: Callable[[], float] = time.time, run: str | None = None) -> None:
        self.inner, self.limits, self.ledger, self.episode_id, self.sleep = inner, limits, ledger, episode_id, sleep
        self.clock = clock
        self.kind = getattr(inner, "kind", "model")
        self.name = name or getattr(inner, "name", "")
        self.owner = {"pid": os.getpid(), "host": socket.gethostname(), "episode_id": episode_id}
        self.run = run

    def __getattr__(self, item: str) -> Any:
        return getattr(self.inner, item)

    def _max_output(self) -> int | None:
        config = getattr(self.inner, "config", None)
        return getattr(config, "max_tokens", None)

    def _reserve(self, est: Estimate) -> tuple[str, float]:
        """The reservation's id and when it was made (the request leaves then)."""
        while True:
            with self.ledger.locked() as state:
                now = self.clock()
                verdict, detail = admit(state, self.limits, self.name, est, now)
                if verdict == "go":
                    return reserve(state, self.limits, self.name, est, now, self.owner), now
                if verdict == "refuse":
                    scope, reason = detail
                    state.setdefault("paused", {}).setdefault(scope, reason)
                    raise BudgetReached(f"spend ceiling reached: {reason}", scope)
                for rid, r in list(state.get("reserved", {}).items()):
                    if not _alive(r):  # a killed worker's call will never be booked
                        state["reserved"].pop(rid)
            self.sleep(min(detail, 5.0))

    def query(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        est = estimate(messages, tools, self._max_output(), self.limits.table.get(self.name))
        rid, sent = self._reserve(est)
        try:
            response = self.inner.query(messages, tools)
        except BaseException:
            with self.ledger.locked() as state:
                settle(state, self.limits, rid, 0, self.clock())
            raise
        usage = response.usage = response.usage or {}
        p, c = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
        cost = self.limits.table.cost(usage, self.name)
        if cost is not None:
            usage["cost_usd"] = round(cost, 6)
        row = {"t": time.time(), "t_sent": round(sent, 6), **({"run": self.run} if self.run else {}),
               "episode_id": self.episode_id,
               "model": self.name, "prompt_tokens": p,
               "completion_tokens": c, "cached_tokens": usage.get("cached_tokens", 0),
               "cost_usd": usage.get("cost_usd", 0.0), "retries": usage.get("retries", 0),
               "latency_s": usage.get("latency_s", 0.0), "reserved_usd": round(est.cost_usd, 6),
               **({} if cost is not None else {"priced": False})}
        with self.ledger.locked() as state:
            settle(state, self.limits, rid, p + c, self.clock())
            self.ledger.append(row, state)
        return response


def meter(model: Any, limits: SpendLimits, ledger_path: Path, episode_id: str, name: str | None = None,
          run: str | None = None) -> Any:
    """Wrap a model client of a run (reference agents and replays cost nothing and are not).
    ``name``: the model's label in the run (its ceilings and prices), default the client's."""
    if getattr(model, "kind", "") != "model":
        return model
    return Metered(model, limits, Ledger(ledger_path), episode_id, name=name, run=run)
