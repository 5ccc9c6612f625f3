"""Answering ``ask_human`` from a blocker registry: the registry file and a small matcher seam.

The registry is HiL-Bench's ``blocker_registry.json`` shape (``{"blockers": [{id, type, subtype,
description, resolution, example_questions}]}``; ``acceptable_questions`` and
``trigger_questions`` are read as aliases). A :class:`Matcher` maps a question to at most one
blocker; the server returns that blocker's ``resolution`` verbatim, else ``irrelevant question``.

:class:`OverlapMatcher` is a deterministic stand-in (word overlap with the blocker's example
questions and description) so the server works without a model; better matchers plug in by
implementing the protocol and registering in :data:`MATCHERS`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, Field, ValidationError, model_validator

IRRELEVANT = "irrelevant question"
_WORD = re.compile(r"[a-z0-9_]+")
_STOP = frozenset(["a", "an", "the", "is", "are", "was", "were", "be", "to", "of", "in", "on", "for", "and", "or", "what", "which", "how", "why", "when", "where", "who", "does", "do", "did", "should", "would", "could", "can", "i", "we", "you", "it", "this", "that", "with", "by", "as", "at", "from", "any", "there", "their", "my", "our", "me", "about", "please"])


class RegistryBlocker(BaseModel):
    id: str
    type: str = ""
    subtype: str = ""
    description: str
    resolution: str
    example_questions: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: object) -> object:
        if isinstance(data, dict) and not data.get("example_questions"):
            for alias in ("acceptable_questions", "trigger_questions"):
                if data.get(alias):
                    return {**data, "example_questions": data[alias]}
        return data


class Registry(BaseModel):
    blockers: list[RegistryBlocker]


def load_registry(path: Path) -> Registry:
    """Read a registry file; a bad file is an error naming the file and what is wrong."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as e:
        raise ValueError(f"cannot read blocker registry {path}: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise ValueError(f"blocker registry {path} is not JSON (line {e.lineno}: {e.msg})") from e
    try:
        return Registry.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"blocker registry {path}: {where}: {first['msg']} (expected "
                         '{"blockers": [{"id", "description", "resolution", "example_questions"}]})') from e


class Matcher(Protocol):
    """Maps a question to at most one registered blocker (None: the question matches none)."""

    def match(self, question: str, blockers: list[RegistryBlocker]) -> RegistryBlocker | None: ...


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1)


class OverlapMatcher:
    """Best word overlap with a blocker's example questions (or description), if clear enough.

    Score of a reference text = shared content words / content words of the reference. The
    best blocker must reach ``threshold`` and beat the runner-up by ``margin`` (a question that
    fits two blockers equally is not answered: at most one blocker per question)."""

    def __init__(self, threshold: float = 0.5, margin: float = 0.1) -> None:
        self.threshold, self.margin = threshold, margin

    def score(self, question: str, blocker: RegistryBlocker) -> float:
        q = _words(question)
        refs = [_words(t) for t in [*blocker.example_questions, blocker.description]]
        return max((len(q & r) / len(r) for r in refs if r), default=0.0)

    def match(self, question: str, blockers: list[RegistryBlocker]) -> RegistryBlocker | None:
        scored = sorted(((self.score(question, b), i) for i, b in enumerate(blockers)), reverse=True)
        if not scored or scored[0][0] < self.threshold:
            return None
        if len(scored) > 1 and scored[0][0] - scored[1][0] < self.margin:
            return None
        return blockers[scored[0][1]]


MATCHERS: dict[str, type] = {"overlap": OverlapMatcher}
"""Matcher name (``impasse mcp --matcher NAME``) -> class constructed without arguments."""
