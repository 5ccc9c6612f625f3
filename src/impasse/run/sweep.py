"""A sweep file: several models (each at its own endpoint, with its own key, settings, rate
limits, ceilings and price) x suites x conditions x interfaces x repeats, in one YAML file that
is validated whole before anything calls a network.

Each suite of the sweep is one run directory (``SWEEP/<suite>``); the runs share one spend
ledger (``SWEEP/usage.jsonl``) so the sweep's ceiling and every model's own ceiling count the
spend of all of them, and each pauses only what it covers. Pure: :func:`load_sweep` reads and
checks the file, :func:`run_configs` turns it into the runs' :class:`RunConfig`\\ s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from impasse.prices import Price
from impasse.run.config import RunConfig

RESERVED_MODEL_KEYS = ("model", "base_url", "api_key_env")
"""Set by a sweep model's own fields, not inside its ``config``."""


class SweepError(ValueError):
    """A sweep file that cannot be used; the message names the file and the field."""


class SweepModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    label: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
                       description="The model's name in the sweep: trajectories, ceilings, prices, reports")
    model: str | None = Field(None, description="The model's name at its endpoint (default: the label)")
    base_url: str | None = Field(None, description="OpenAI-compatible base URL (None: api.openai.com)")
    api_key_env: str = Field("IMPASSE_API_KEY", description="Environment variable holding its key")
    config: dict[str, Any] = Field(default_factory=dict, description="Further ModelConfig settings "
                                                                     "(temperature, max_tokens, max_retries, ...)")
    rpm: int | None = Field(None, ge=1, description="Its endpoint's requests per minute")
    tpm: int | None = Field(None, ge=1, description="Its endpoint's tokens per minute")
    max_cost: float | None = Field(None, ge=0, description="USD this model may spend in the whole sweep")
    max_tokens: int | None = Field(None, ge=0, description="Tokens this model may use in the whole sweep (its "
                                                           "output cap per call is config.max_tokens)")
    price: Price | None = Field(None, description="USD per million tokens (the price table's entry)")

    @field_validator("config")
    @classmethod
    def _model_settings(cls, v: dict[str, Any]) -> dict[str, Any]:
        from impasse.agent.models import check_settings

        try:
            return check_settings(v, "config", RESERVED_MODEL_KEYS, price_hint="a sweep model's price is its own "
                                  "`price: {input: USD/Mtok, output: USD/Mtok}`, beside config")
        except ValueError as e:
            raise ValueError(str(e).removeprefix("config: ")) from None

    def settings(self) -> dict[str, Any]:
        """Its ModelConfig fields."""
        return {**self.config, "model": self.model or self.label, "api_key_env": self.api_key_env,
                **({"base_url": self.base_url} if self.base_url else {})}


class SweepSuite(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: Literal["blockers", "ask"]
    tasks: list[str] = Field(default_factory=list, description="Instance ids (or unique prefixes)")
    packages: str = "default"
    limit: int | None = Field(None, ge=1)
    per_package: int | None = Field(None, ge=1)
    task_dir: str | None = None
    interfaces: list[str] | None = Field(None, description="This suite's interfaces (default: the sweep's)")


class Sweep(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    models: list[SweepModel] = Field(min_length=1)
    suites: list[SweepSuite] = Field(min_length=1)
    conditions: str = "all"
    interfaces: list[str] | None = Field(None, description="None: each suite's own (blockers: baseline, tool, "
                                                           "monitor; ask: all its modes)")
    repeats: int | None = Field(None, ge=1)
    max_cost: float | None = Field(None, ge=0, description="USD for the whole sweep")
    max_tokens: int | None = Field(None, ge=0)
    rpm: int | None = Field(None, ge=1, description="Requests per minute, all models together")
    tpm: int | None = Field(None, ge=1)
    jobs: int = Field(2, ge=1)
    step_limit: int = Field(80, ge=1)
    backend: str = "local"
    executor: str = "local"

    @field_validator("suites", mode="before")
    @classmethod
    def _bare_names(cls, v: Any) -> Any:
        return [{"name": s} if isinstance(s, str) else s for s in v] if isinstance(v, list) else v

    @model_validator(mode="after")
    def _unique(self) -> Sweep:
        for what, names in (("model label", [m.label for m in self.models]),
                            ("suite", [s.name for s in self.suites])):
            if dupes := sorted({n for n in names if names.count(n) > 1}):
                raise ValueError(f"{what} {dupes[0]!r} appears twice; each must be unique")
        return self

    def prices(self) -> dict[str, Any]:
        return {m.label: m.price.model_dump(exclude_none=True) for m in self.models if m.price is not None}


def load_sweep(path: Path) -> Sweep:
    """The sweep file, checked whole; errors name the file and the field."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise SweepError(f"--sweep {path}: cannot read it ({e})") from None
    if not isinstance(data, dict):
        raise SweepError(f"--sweep {path}: expected a mapping with models: and suites:")
    try:
        return Sweep.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = _where(data, err["loc"])
        raise SweepError(f"--sweep {path}: {where}: {err['msg'].removeprefix('Value error, ')}") from None


def _where(data: dict[str, Any], loc: tuple[Any, ...]) -> str:
    """``models.1.config`` -> ``models[1] (label 'b').config``."""
    parts, node = [], data
    for p in loc:
        if isinstance(p, int) and isinstance(node, list) and p < len(node):
            node = node[p]
            label = node.get("label") or node.get("name") if isinstance(node, dict) else None
            parts[-1] += f"[{p}]" + (f" ({label!r})" if label else "")
            continue
        parts.append(str(p))
        node = node.get(p) if isinstance(node, dict) else None
    return ".".join(parts) or "(file)"


def run_configs(sweep: Sweep, out: Path) -> list[tuple[str, RunConfig]]:
    """One (suite name, RunConfig) per suite, all sharing ``out/usage.jsonl``."""
    per_model = {m.label: {k: v for k, v in (("max_cost", m.max_cost), ("max_tokens", m.max_tokens),
                                             ("rpm", m.rpm), ("tpm", m.tpm)) if v is not None}
                 for m in sweep.models}
    spend = {"max_cost": sweep.max_cost, "max_tokens": sweep.max_tokens, "rpm": sweep.rpm, "tpm": sweep.tpm,
             "per_model": {k: v for k, v in per_model.items() if v}, "prices": sweep.prices()}
    out_cfgs = []
    for s in sweep.suites:
        interfaces = s.interfaces or sweep.interfaces
        cfg = RunConfig.model_validate({
            "suite": s.name, "packages": s.packages, "tasks": s.tasks, "limit": s.limit,
            "per_package": s.per_package, "task_dir": s.task_dir, "conditions": sweep.conditions,
            **({"interfaces": interfaces} if interfaces else {}),
            "agents": [f"openai:{m.label}" for m in sweep.models],
            "models": {m.label: m.settings() for m in sweep.models}, "repeats": sweep.repeats,
            "jobs": sweep.jobs, "step_limit": sweep.step_limit, "backend": sweep.backend,
            "executor": sweep.executor, "spend": spend, "ledger": str((out / "usage.jsonl").resolve())})
        out_cfgs.append((s.name, cfg))
    return out_cfgs
