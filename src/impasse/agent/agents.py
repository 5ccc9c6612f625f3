"""Agents by kind, from a spec string: ``reference:<profile>`` (a scripted baseline),
``replay:<file>`` (a recorded trajectory's actions re-executed), ``openai:<model>`` (any
OpenAI-compatible endpoint; its URL and prices come from the run's model config). A bare profile
name means ``reference:<profile>``. A new kind of agent is one :class:`AgentKind` registered here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from impasse.registry import Registry, UnknownName


@dataclass(frozen=True)
class AgentSpec:
    kind: str
    arg: str

    @classmethod
    def parse(cls, text: str) -> AgentSpec:
        kind, sep, arg = text.partition(":")
        if not sep:
            kind, arg = "reference", text
        spec = cls(kind.strip(), arg.strip())
        AGENT_KINDS.get(spec.kind).check(spec)
        return spec

    @property
    def label(self) -> str:
        """How the agent is named in trajectories and reports."""
        return AGENT_KINDS.get(self.kind).label(self)

    @property
    def model_kind(self) -> str:
        """What the trajectory header calls it: 'reference', 'replay' or 'model'."""
        return AGENT_KINDS.get(self.kind).model_kind

    def make_model(self, task: Any, context: dict[str, Any]) -> Any:
        return AGENT_KINDS.get(self.kind).make(self, task, context)

    def __str__(self) -> str:
        return f"{self.kind}:{self.arg}"


class AgentKind(Protocol):
    model_kind: str
    """'reference', 'replay' or 'model' (the trajectory header's ``agent_kind``)."""

    def check(self, spec: AgentSpec) -> None:
        """Raise ValueError with a clear message if ``spec`` cannot work."""

    def label(self, spec: AgentSpec) -> str: ...

    def make(self, spec: AgentSpec, task: Any, context: dict[str, Any]) -> Any:
        """A :class:`impasse.agent.loop.Model` for one episode of ``task``."""


AGENT_KINDS: Registry[AgentKind] = Registry("agent kind")


class Reference:
    model_kind = "reference"

    def check(self, spec: AgentSpec) -> None:
        from impasse.agent.reference import PROFILES

        if spec.arg not in PROFILES:
            raise ValueError(f"unknown reference agent {spec.arg!r}; profiles: {', '.join(PROFILES.names())}")

    def label(self, spec: AgentSpec) -> str:
        return f"reference/{spec.arg}"

    def make(self, spec: AgentSpec, task: Any, context: dict[str, Any]) -> Any:
        from impasse.agent.reference import PROFILES

        return PROFILES.get(spec.arg)(task, context.get("test_sources", {}), context.get("workdir", "/workspace/repo"))


class Replay:
    model_kind = "replay"

    def check(self, spec: AgentSpec) -> None:
        if not Path(spec.arg).is_file():
            raise ValueError(f"replay: no trajectory file at {spec.arg!r}")

    def label(self, spec: AgentSpec) -> str:
        return f"replay/{Path(spec.arg).stem}"

    def make(self, spec: AgentSpec, task: Any, context: dict[str, Any]) -> Any:
        from impasse.agent.replay import ReplayModel
        from impasse.store.trajectory import read_trajectory

        return ReplayModel(read_trajectory(Path(spec.arg)).messages, Path(spec.arg).stem)


class OpenAICompatible:
    model_kind = "model"

    def check(self, spec: AgentSpec) -> None:
        if not spec.arg:
            raise ValueError("openai: give a model name, e.g. openai:my-model")

    def label(self, spec: AgentSpec) -> str:
        return f"model/{spec.arg}"

    def make(self, spec: AgentSpec, task: Any, context: dict[str, Any]) -> Any:
        from impasse.agent.models import ModelConfig, OpenAIModel

        # a sweep's model is named apart from the model the endpoint knows: its config says which
        return OpenAIModel(ModelConfig(**{"model": spec.arg, **context.get("model_config", {})}))


AGENT_KINDS.add("reference", Reference())
AGENT_KINDS.add("replay", Replay())
AGENT_KINDS.add("openai", OpenAICompatible())


def run_agents(cfg: Any) -> list[AgentSpec]:
    """The agents of a run: its model, its replay file, or its reference profiles."""
    if cfg.model:
        return [AgentSpec("openai", cfg.model["model"])]
    if cfg.replay:
        return [AgentSpec("replay", cfg.replay)]
    try:
        return [AgentSpec.parse(a) for a in cfg.agents]
    except UnknownName as e:
        raise ValueError(str(e)) from None
