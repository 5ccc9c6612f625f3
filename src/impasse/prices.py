"""The one price table: model label -> USD per million input, cached input and output tokens.

Runs (the usage ledger and ``--max-cost``), handoff experiments (QRec/CSRet costs) and judges read
it. Keys are model labels as trajectories name models: ``model/<name>`` for a model behind an
endpoint, ``reference/<profile>`` for scripted agents; a key without a kind (``gpt-4o``) means
``model/gpt-4o``, so both spellings find the same entry (and giving both is an error). A model
with no entry has an *unknown* cost, never a cost of zero: callers say so instead of adding $0.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

KINDS = ("model", "reference", "replay")


class PriceError(ValueError):
    """A price table that cannot be used; the message names the file, the entry and the field."""


class Price(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)
    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(None, ge=0, validation_alias=AliasChoices("cached_input", "cached"),
                                       description="Cached prompt tokens (None: billed as input)")

    def cost(self, prompt: int, completion: int, cached: int = 0) -> float:
        cached = min(max(cached, 0), prompt)
        rate = self.input if self.cached_input is None else self.cached_input
        return ((prompt - cached) * self.input + cached * rate + completion * self.output) / 1e6


def label(model: str) -> str:
    """The table's key for a model name or label: ``gpt-4o`` -> ``model/gpt-4o``."""
    kind, sep, _ = model.partition("/")
    return model if sep and kind in KINDS else f"model/{model}"


class PriceTable(BaseModel):
    model_config = ConfigDict(frozen=True)
    prices: dict[str, Price] = Field(default_factory=dict)

    @classmethod
    def of(cls, entries: dict[str, Any], source: str = "price table") -> PriceTable:
        """Entries keyed by model name or label; errors name ``source``, the entry and the field."""
        out: dict[str, Price] = {}
        for key, value in entries.items():
            name = label(str(key))
            if name in out:
                raise PriceError(f"{source}: {key!r} and another entry both price {name!r}; keep one")
            try:
                out[name] = value if isinstance(value, Price) else Price.model_validate(value)
            except ValidationError as e:
                err = e.errors()[0]
                field = ".".join(map(str, err["loc"])) or "(entry)"
                raise PriceError(f"{source}: {key!r}: {field}: {err['msg']} (an entry is {{input: USD/Mtok, "
                                 "output: USD/Mtok, cached_input: USD/Mtok})") from None
        return cls(prices=out)

    def get(self, model: str) -> Price | None:
        return self.prices.get(label(model))

    def cost(self, usage: dict[str, Any] | None, model: str) -> float | None:
        """USD of one call from its token counts; None when the model has no price."""
        price = self.get(model)
        if price is None:
            return None
        u = usage or {}
        return price.cost(int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0),
                          int(u.get("cached_tokens") or 0))

    def unpriced(self, models: list[str]) -> list[str]:
        return [m for m in models if self.get(m) is None]

    def to_json(self) -> dict[str, dict[str, Any]]:
        return {k: v.model_dump(exclude_none=True) for k, v in self.prices.items()}


DEFAULT = "prices.yaml"


def load_prices(path: Path | None = None) -> PriceTable:
    """A YAML price table (``MODEL: {input, output, cached_input}``); None: the package's own."""
    source = str(path) if path is not None else f"impasse/{DEFAULT}"
    try:
        text = path.read_text() if path is not None else resources.files("impasse").joinpath(DEFAULT).read_text()
        data = yaml.safe_load(text) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise PriceError(f"price table {source}: cannot read it ({e})") from None
    if not isinstance(data, dict):
        raise PriceError(f"price table {source}: expected a mapping MODEL -> {{input, output, cached_input}}")
    return PriceTable.of(data, f"price table {source}")
