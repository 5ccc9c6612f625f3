"""Rewards as data: each suite's reward is a weighted sum of named terms, the weights in a YAML
file beside this module (``blockers.yaml``, ``ask.yaml``), the term values computed by the suite
from what its annotator and grader already know. A trainer reads every term by name in the
terminal step's ``info["reward_terms"]`` (weighted) and ``info["reward_values"]`` (raw), so a
reward is never a single opaque number.

``$IMPASSE_REWARDS`` may name a directory of tables that replace the packaged ones, file by file
(``blockers.yaml``); a table with an unknown field, a missing weight or a term the suite does not
compute is an error naming the file and the term.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

ENV = "IMPASSE_REWARDS"


class RewardError(ValueError):
    """A reward table that cannot be used; the message names the file and the term."""


class Term(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    weight: float
    description: str = ""


class RewardTable(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    version: str
    terms: dict[str, Term]
    shaping: dict[str, Term] = Field(default_factory=dict, description="Per-step terms (off unless asked for)")


@dataclass(frozen=True)
class Reward:
    total: float = 0.0
    terms: dict[str, float] = field(default_factory=dict)
    """Each term's weighted contribution (the total is their sum)."""
    values: dict[str, float] = field(default_factory=dict)
    """Each term's raw value, and the suite's metrics beside them (weighted or not)."""


NO_REWARD = Reward()


@cache
def _load(suite: str, override: str) -> RewardTable:
    path = Path(override) / f"{suite}.yaml" if override else None
    if path is not None and path.exists():
        source, text = str(path), path.read_text()
    else:
        source = f"impasse/rewards/{suite}.yaml"
        try:
            text = resources.files("impasse.rewards").joinpath(f"{suite}.yaml").read_text()
        except FileNotFoundError:
            raise RewardError(f"no reward table for the {suite!r} suite ({source})") from None
    try:
        return RewardTable.model_validate(yaml.safe_load(text))
    except (yaml.YAMLError, ValidationError) as e:
        raise RewardError(f"reward table {source}: {e}") from None


def table(suite: str) -> RewardTable:
    return _load(suite, os.environ.get(ENV, ""))


def weigh(suite: str, values: dict[str, float], metrics: dict[str, float] | None = None,
          shaping: bool = False) -> Reward:
    """The reward of ``values`` (term -> raw value) by the suite's table: every term the table
    names must be in ``values`` (a term the suite does not compute is an error, not a zero)."""
    t = table(suite)
    terms = t.shaping if shaping else t.terms
    if missing := sorted(set(terms) - set(values)):
        raise RewardError(f"reward table of {suite!r} names term(s) {missing} the suite does not compute; "
                          f"computed: {', '.join(sorted(values))}")
    weighted = {name: round(term.weight * float(values[name]), 6) for name, term in terms.items()}
    return Reward(round(sum(weighted.values()), 6), weighted, {**values, **(metrics or {})})
