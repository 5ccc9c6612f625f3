"""What decides a run: its configuration (stored in the manifest; ``--resume`` reuses it) and
the episodes it plans."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from impasse.run.budget import SpendLimits

BENCHMARK_SUITES = ("blockers", "ask")


class RunConfig(BaseModel):
    """Everything that decides what a run does."""

    suite: str = Field("blockers", description="Benchmark suite: 'blockers' (environment blockers) or 'ask'")
    packages: str = Field("default", description="Package set whose built tasks are used when --tasks is not given")
    tasks: list[str] = Field(default_factory=list, description="Instance ids (or unique prefixes)")
    per_package: int | None = Field(None, description="Instances per package (None: all built)")
    task_dir: str | None = Field(None, description="ask suite: a directory of task directories (e.g. written by "
                                                   "`impasse ask import`) run instead of the built-in tasks")
    limit: int | None = Field(None, description="At most this many task instances")
    conditions: str = Field("all", description="'all', names and/or classes, comma-separated")
    interfaces: list[str] = Field(default_factory=lambda: ["baseline", "tool", "monitor"])
    agents: list[str] = Field(default_factory=list, description="Agent specs: reference:<profile> (or a bare profile)")
    model: dict[str, Any] | None = Field(None, description="ModelConfig fields for an OpenAI-compatible endpoint")
    replay: str | None = Field(None, description="Trajectory file whose actions are re-executed")
    matcher: str = Field("offline", description="ask suite: who judges ask_human questions: 'offline' "
                                                "(deterministic, no model) or 'llm' (an OpenAI-compatible judge)")
    matcher_model: dict[str, Any] | None = Field(None, description="ask suite, --matcher llm: ModelConfig fields "
                                                                   "of the judge's endpoint")
    step_limit: int = 80
    command_timeout: float = 60.0
    restore: bool = Field(False, description="Restore the environment after an accepted escalation and go on")
    ticket_schema: Literal["impasse", "paper"] = Field(
        "impasse", description="Ticket fields escalate_to_human asks for: 'impasse' (with progress) or 'paper'")
    jobs: int = 2
    seed: int = 0
    backend: str = Field("local", description="Where sandboxes live: local, plain, docker")
    executor: str = Field("local", description="How episodes run: local (process pool), ray")
    executor_options: dict[str, Any] = Field(default_factory=dict, description="e.g. {'address': 'ray://...'}")
    pause_after_endpoint_failures: int = Field(3, description="Pause the run after this many consecutive episodes "
                                                              "whose model endpoint failed")
    spend: SpendLimits = Field(default_factory=SpendLimits, description="Spend ceilings, rate limits, price table")
    release: dict[str, Any] | None = Field(None, description="The frozen task release the run uses (name, path, "
                                                             "digest of its description)")

    @model_validator(mode="before")
    @classmethod
    def _package_set_as_suite(cls, data: Any) -> Any:
        """Manifests (and ``--suite``) from before benchmark suites named a *package set* there."""
        if isinstance(data, dict) and data.get("suite") not in (None, *BENCHMARK_SUITES):
            data = {**data, "packages": data["suite"], "suite": "blockers"}
        return data
