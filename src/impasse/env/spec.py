"""The fields every suite's Env spec shares, and how a bad spec is reported.

Each suite types its own spec (:class:`EnvSpec` plus its fields: task, condition, interface, mode,
...); ``impasse.env.make(suite, **spec)`` validates it strictly (an unknown field, a wrong type or
an unknown name is an error naming the field and what it may be) before anything is opened.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class SpecError(ValueError):
    """An Env spec that cannot work; the message names the field and what to do."""


class EnvSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True)

    episode_id: str | None = Field(None, description="The trajectory's name (default: from the spec's fields)")
    out: Path | str | None = Field(None, description="Run directory the trajectory is recorded in "
                                                     "(default: runs/env)")
    step_limit: int = Field(80, ge=1, description="Tool calls per episode, every phase included")
    command_timeout: float = Field(60.0, gt=0, description="Seconds before a bash call is killed")
    output_chars: int = Field(10_000, ge=100, description="Characters of tool output the model is shown")
    agent: str = Field("external", description="Who drives the episode, as trajectories name it")
    agent_kind: str = Field("external", description="'model', 'reference', 'replay', or 'external'")
    header: dict[str, Any] = Field(default_factory=dict, description="Extra trajectory header fields")


def validate_spec(model: type[EnvSpec], suite: str, spec: dict[str, Any]) -> EnvSpec:
    try:
        return model.model_validate(spec)
    except ValidationError as e:
        errors = e.errors()  # an unknown field first: it is the likeliest typo, and explains a missing one
        err = next((x for x in errors if x["type"] == "extra_forbidden"), errors[0])
        where = ".".join(map(str, err["loc"])) or "(spec)"
        known = ", ".join(model.model_fields)
        hint = f"; the {suite} Env's fields are: {known}" if err["type"] == "extra_forbidden" else ""
        raise SpecError(f"impasse.env.make({suite!r}): field {where!r}: {err['msg']}{hint}") from None
