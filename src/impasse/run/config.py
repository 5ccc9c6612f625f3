"""What decides a run: its configuration (stored in the manifest; ``--resume`` reuses it) and
the episodes it plans."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from impasse.run.budget import SpendLimits

BENCHMARK_SUITES = ("blockers", "ask")


class RunConfig(BaseModel):
    """Everything that decides what a run does. Strict: a manifest's ``"step_limit": "8"`` is an
    error, never an 8."""

    model_config = ConfigDict(strict=True)

    suite: str = Field("blockers", description="Benchmark suite: 'blockers' (environment blockers) or 'ask'")
    packages: str = Field("default", description="Package set whose built tasks are used when --tasks is not given")
    tasks: list[str] = Field(default_factory=list, description="Instance ids (or unique prefixes)")
    per_package: int | None = Field(None, ge=1, description="Instances per package (None: all built)")
    task_dir: str | None = Field(None, description="ask suite: a directory of task directories (e.g. written by "
                                                   "`impasse ask import`) run instead of the built-in tasks")
    limit: int | None = Field(None, ge=1, description="At most this many task instances")
    conditions: str = Field("all", description="'all', names and/or classes, comma-separated")
    interfaces: list[str] = Field(default_factory=lambda: ["baseline", "tool", "monitor"])
    agents: list[str] = Field(default_factory=list, description="Agent specs: reference:<profile> (or a bare profile)")
    model: dict[str, Any] | None = Field(None, description="ModelConfig fields for an OpenAI-compatible endpoint")
    models: dict[str, dict[str, Any]] = Field(default_factory=dict, description="Per-model ModelConfig fields by "
                                              "the agent's name (openai:NAME): a sweep's models, each at its own "
                                              "endpoint ('model' is the name the endpoint knows)")
    replay: str | None = Field(None, description="Trajectory file whose actions are re-executed")
    matcher: str = Field("offline", description="ask suite: who judges ask_human questions: 'hybrid' (word overlap "
                                                "+ MiniLM embeddings) or 'lexical' (word overlap), both deterministic "
                                                "with no service, or 'llm' (an OpenAI-compatible judge); 'offline' "
                                                "is pinned to the best one installed when the run is checked")
    matcher_model: dict[str, Any] | None = Field(None, description="ask suite, --matcher llm: ModelConfig fields "
                                                                   "of the judge's endpoint")
    step_limit: int = Field(80, ge=1)
    command_timeout: float = Field(60.0, gt=0)
    restore: bool = Field(False, description="Restore the environment after an accepted escalation and go on")
    ticket_schema: Literal["impasse", "paper"] = Field(
        "impasse", description="Ticket fields escalate_to_human asks for: 'impasse' (with progress) or 'paper'")
    reviewer: str = Field("oracle", description="Who answers escalations: oracle (at once, always right), "
                                                "queue[:PROFILE] (review/queue.yaml), llm[:MODEL]")
    reviewer_model: dict[str, Any] | None = Field(None, description="--reviewer llm: ModelConfig fields of its endpoint")
    approvals: str | None = Field(None, description="Approval policy (review/approvals.yaml): matching calls wait "
                                                    "for the reviewer")
    jobs: int = Field(2, ge=1)
    seed: int = 0
    backend: str = Field("local", description="Where sandboxes live: local, plain, docker")
    executor: str = Field("local", description="How episodes run: local (process pool), ray")
    executor_options: dict[str, Any] = Field(default_factory=dict, description="e.g. {'address': 'ray://...'}")
    pause_after_endpoint_failures: int = Field(3, description="Pause the run after this many consecutive episodes "
                                                              "whose model endpoint failed")
    spend: SpendLimits = Field(default_factory=SpendLimits, description="Spend ceilings, rate limits, price table")
    repeats: int | None = Field(None, ge=1, description="Episodes per (task, condition, interface, agent) "
                                                        "(None: 1; the ask suite: its 3 passes)")
    ledger: str | None = Field(None, description="The spend ledger, when a sweep's runs share one (None: "
                                                 "RUN/usage.jsonl)")
    release: dict[str, Any] | None = Field(None, description="The frozen task release the run uses (name, path, "
                                                             "digest of its description)")

    @model_validator(mode="before")
    @classmethod
    def _prices_in_the_table(cls, data: Any) -> Any:
        """Manifests from before the one price table kept a model's prices in its model config."""
        model = data.get("model") if isinstance(data, dict) else None
        if isinstance(model, dict) and {"input_cost_per_mtok", "output_cost_per_mtok"} & set(model):
            model = dict(model)
            price = {"input": model.pop("input_cost_per_mtok", 0.0), "output": model.pop("output_cost_per_mtok", 0.0)}
            spend = dict(data.get("spend") or {})
            spend["prices"] = {f"model/{model['model']}": price, **(spend.get("prices") or {})}
            data = {**data, "model": model, "spend": spend}
        return data

    @model_validator(mode="before")
    @classmethod
    def _package_set_as_suite(cls, data: Any) -> Any:
        """Manifests (and ``--suite``) from before benchmark suites named a *package set* there."""
        if isinstance(data, dict) and data.get("suite") not in (None, *BENCHMARK_SUITES):
            data = {**data, "packages": data["suite"], "suite": "blockers"}
        return data


def ledger_of(cfg: RunConfig, run_dir: Any) -> Any:
    """Where the run's calls are booked: its own ledger, or the sweep's it shares."""
    from pathlib import Path

    return Path(cfg.ledger) if cfg.ledger else run_dir.usage
