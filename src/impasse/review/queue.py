"""``queue``: a reviewer with a capacity, a latency and an error rate that grows with its load.

The model and every parameter are in ``queue.yaml`` (profiles: ``--reviewer queue`` is
``queue:default``; ``queue:busy``, ``queue:prompt``, or a profile you add). The reliability
curve is the approver-fatigue paper's; the queueing around it is our assumption, stated in the
data file. Time is simulated: the clock is the episode's step count times ``minutes_per_step``,
so the same seed gives the same answers at the same steps. Nothing here reads the wall clock.
"""

from __future__ import annotations

import copy
import math
import random
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from impasse.review.base import Answer, ReviewItem


class LoadModel(BaseModel):
    """One profile of ``queue.yaml``."""

    model_config = ConfigDict(extra="forbid")
    capacity: float = Field(ge=0, description="Reviews before fatigue sets in (C)")
    slope: float = Field(ge=0, description="Reliability lost per review past capacity")
    floor: float = Field(ge=0, le=1, description="Reliability never falls below this (r_min)")
    service_minutes: float = Field(ge=0, description="Mean minutes one review takes (exponential)")
    background_per_hour: float = Field(ge=0, description="Other tickets arriving per hour (Poisson)")
    minutes_per_step: float = Field(gt=0, description="Simulated minutes per agent tool call")
    load_at_start: int = Field(0, ge=0, description="Reviews already done in the shift")


def reliability(load: float, capacity: float, slope: float, floor: float) -> float:
    """r(l) = max(floor, 1 - slope * max(0, l - capacity)): the chance the l-th review is right."""
    return max(floor, 1.0 - slope * max(0.0, load - capacity))


@cache
def profiles() -> dict[str, LoadModel]:
    data = yaml.safe_load(resources.files("impasse.review").joinpath("queue.yaml").read_text())
    return {name: LoadModel.model_validate(p) for name, p in (data.get("profiles") or {}).items()}


def load_model(profile: str) -> LoadModel:
    known = profiles()
    if profile not in known:
        raise ValueError(f"reviewer 'queue:{profile}': no such profile in review/queue.yaml; known: {', '.join(known)}")
    return known[profile]


@dataclass
class _State:
    free_at: float = 0.0
    """Simulated minute at which the reviewer finishes what it has taken."""
    load: int = 0
    next_background: float = math.inf


class QueueReviewer:
    asynchronous = True

    def __init__(self, model: LoadModel, seed: str, name: str = "queue") -> None:
        self.model, self.name = model, name
        self.rng = random.Random(seed)
        self.state = _State(load=model.load_at_start)
        self.state.next_background = self._arrival_after(0.0)
        self.pending: list[Answer] = []

    # ------------------------------------------------------------------ the simulation
    def _arrival_after(self, t: float) -> float:
        rate = self.model.background_per_hour / 60.0
        return t + self.rng.expovariate(rate) if rate > 0 else math.inf

    def _service(self) -> float:
        mean = self.model.service_minutes
        return self.rng.expovariate(1.0 / mean) if mean > 0 else 0.0

    def _take(self, arrival: float) -> tuple[float, float, int]:
        """Review one item arriving at ``arrival`` (FIFO): -> (start, finish, load at it)."""
        start = max(arrival, self.state.free_at)
        finish = start + self._service()
        self.state.free_at = finish
        self.state.load += 1
        return start, finish, self.state.load

    def submit(self, item: ReviewItem) -> None:
        m = self.model
        now = item.step * m.minutes_per_step
        while self.state.next_background <= now:  # other agents' tickets that came first
            self._take(self.state.next_background)
            self.state.next_background = self._arrival_after(self.state.next_background)
        start, finish, load = self._take(now)
        r = reliability(load, m.capacity, m.slope, m.floor)
        right = self.rng.random() < r
        accept = item.truth if right else not item.truth
        step = max(item.step + 1, math.ceil(finish / m.minutes_per_step))  # never inside the submitting step
        message = "" if accept else _rejection(item)
        self.pending.append(Answer(item.id, accept, step, right, message, {
            "load": load, "reliability": round(r, 4), "queued_minutes": round(start - now, 2),
            "minutes": round(finish - now, 2)}))

    def due(self, step: int) -> list[Answer]:
        ready = sorted((a for a in self.pending if a.step <= step), key=lambda a: (a.step, a.id))
        self.pending = [a for a in self.pending if a.step > step]
        return ready

    def forget(self, item_id: int) -> None:
        self.pending = [a for a in self.pending if a.id != item_id]

    def fork(self) -> QueueReviewer:
        return copy.deepcopy(self)


def _rejection(item: ReviewItem) -> str:
    if item.kind == "approval":
        return "the reviewer did not approve this call"
    return "the reviewer could not act on this ticket and rejected it; keep working or file a better one"


def make(arg: str, context: dict[str, Any]) -> QueueReviewer:
    profile = arg or "default"
    model = load_model(profile)
    seed = f"{context.get('seed', 0)}:{context.get('episode_id', '')}"
    return QueueReviewer(model, seed, "queue" if profile == "default" else f"queue:{profile}")
