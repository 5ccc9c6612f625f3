"""Answering ``ask_human`` from a blocker registry: the registry file and the matcher registry.

The registry is HiL-Bench's ``blocker_registry.json`` shape (``{"blockers": [{id, type, subtype,
description, resolution, example_questions}]}``; ``acceptable_questions`` and
``trigger_questions`` are read as aliases). A :class:`Matcher` maps a question to at most one
blocker; the server returns that blocker's ``resolution`` verbatim, else ``irrelevant question``.

The matcher protocol and the matchers live in :mod:`impasse.ask.matcher` (one protocol for the
ask suite and this server); the default is its deterministic offline judge, so the server works
without a model.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError, model_validator

from impasse.ask.judge import make_matcher
from impasse.ask.matcher import IRRELEVANT, Matcher, OfflineMatcher

__all__ = ["IRRELEVANT", "MATCHERS", "Matcher", "OfflineMatcher", "Registry", "RegistryBlocker", "load_registry"]


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
    except UnicodeDecodeError as e:
        raise ValueError(f"blocker registry {path} is not text (a binary file?): {e.reason}") from e
    except json.JSONDecodeError as e:
        raise ValueError(f"blocker registry {path} is not JSON (line {e.lineno}: {e.msg})") from e
    try:
        return Registry.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"blocker registry {path}: {where}: {first['msg']} (expected "
                         '{"blockers": [{"id", "description", "resolution", "example_questions"}]})') from e


MATCHERS: dict[str, Callable[[], Matcher]] = {
    **{kind: (lambda kind=kind: make_matcher(kind)) for kind in ("offline", "hybrid", "lexical")},
    "overlap": OfflineMatcher}
"""Matcher name (``impasse mcp --matcher NAME``) -> factory (the ask suite's offline kinds,
:data:`impasse.ask.judge.MATCHER_KINDS`); ``overlap`` is the old name of the word-overlap
(``lexical``) matcher, kept so existing command lines work."""
