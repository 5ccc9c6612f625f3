"""Replay: re-issue a recorded trajectory's assistant messages, in order, so that its actions are
re-executed in a fresh sandbox (what a recorded run does in another environment)."""

from __future__ import annotations

from typing import Any

from impasse.agent.endings import AgentError
from impasse.agent.loop import ModelResponse


class ReplayModel:
    kind = "replay"

    def __init__(self, messages: list[dict[str, Any]], name: str) -> None:
        self.recorded = [m for m in messages if m.get("role") == "assistant"]
        self.name = f"replay/{name}"

    def query(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelResponse:
        k = sum(1 for m in messages if m.get("role") == "assistant")
        if k >= len(self.recorded):
            raise AgentError(f"replay exhausted after {k} recorded actions")
        return ModelResponse(dict(self.recorded[k]), {"replayed": True})
