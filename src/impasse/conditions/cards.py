"""Blocker cards: the evaluator's description of each condition, loaded from YAML data files.

The agent never sees a card. The annotator reads ``checks``/``contact``/``evidence`` to place
first contact and t*; the fault code reads ``fault``; people read the rest. Importing this module
pulls in nothing from the sandbox.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from impasse.conditions.faults import FaultSpec, parse_fault

CLASSES = ("clean", "persistent", "verification", "temporary", "mismatch")
NAMES = ("clean", "read_only_source", "unreadable_file", "read_only_fs", "disk_full", "missing_dependency",
         "exec_unavailable", "broken_site_packages", "test_killed", "tests_unreadable", "text_file_busy",
         "resource_busy", "already_fixed")


class Check(BaseModel):
    """One observable diagnostic: a tool call (and its output) that shows part of the fault."""

    model_config = ConfigDict(extra="forbid")
    tool: Literal["bash", "edit_file", "any"] = "any"
    command: str | None = Field(None, description="Regex the call's command (bash) or path (edit_file) must match")
    command_not: str | None = Field(None, description="Regex the command must not match")
    output: str | None = Field(None, description="Regex the call's output must match")
    output_not: str | None = Field(None, description="Regex the output must not match")
    fact: str | None = Field(None, description="A named fact extractor (impasse.facts.FACTS) that must find its "
                                               "fact in the step: parses owner/mode/mount/free space rather "
                                               "than matching one rendering")
    subject: str | None = Field(None, description="Regex one of the fact's subjects (the paths it is about) must "
                                                   "match, e.g. site-packages: the fact about that path, whatever "
                                                   "command printed it")
    effect: str | None = Field(None, description="A named predicate over what the command does (impasse.effects."
                                                 "checks.CHECKS), e.g. obtains_package: any installer or download")
    min_steps: int = Field(1, description="The check holds once this many distinct steps matched")
    before_first_edit: bool = Field(False, description="Only steps before the agent's first edit count")

    @model_validator(mode="after")
    def _compile(self) -> Check:
        for field in ("command", "command_not", "output", "output_not"):
            value = getattr(self, field)
            if value is not None:
                try:
                    re.compile(value)
                except re.error as e:
                    raise ValueError(f"{field}: bad regex {value!r}: {e}") from e
        if self.fact is not None:
            from impasse.facts import FACTS

            if self.fact not in FACTS:
                raise ValueError(f"fact: unknown fact {self.fact!r}; known: {', '.join(FACTS)}")
        if self.subject is not None and self.fact is None:
            raise ValueError("subject: needs a fact (it filters the fact's subjects)")
        if self.effect is not None:
            from impasse.effects.checks import CHECKS

            if self.effect not in CHECKS:
                raise ValueError(f"effect: unknown effect check {self.effect!r}; known: {', '.join(CHECKS)}")
        return self


class BlockerCard(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    name: str
    version: str = Field("1", description="Bumped whenever checks/contact/evidence change, so t* stays comparable")
    class_: Literal["clean", "persistent", "verification", "temporary", "mismatch"] = Field(alias="class")
    summary: str
    fault: FaultSpec = Field(description="What is broken, as a typed spec (see impasse.conditions.faults)")
    requires: Literal["runtime_deps", "f2p_test_files", "venv_test_runner"] | None = Field(
        None, description="Tasks this applies to (see impasse.tasks.episode.REQUIREMENTS): a third-party "
                          "dependency whose absence breaks the import / FAIL_TO_PASS tests in test files (not only "
                          "doctests in the source) / a test runner that lives in the venv's site-packages")
    expected_signals: list[str]
    checks: dict[str, Check]
    contact: list[str] = Field(description="Any of these checks marks first contact with the fault")
    evidence: list[list[str]] = Field(description="t*: every group has at least one satisfied check (AND of ORs)")
    recovery_attempts: list[str]
    external_assistance: str
    resume_condition: str
    restoration: str

    @field_validator("fault", mode="before")
    @classmethod
    def _fault(cls, value: object) -> FaultSpec:
        try:
            return parse_fault(value)
        except ValidationError as e:
            err = e.errors()[0]
            raise ValueError(f"field {'.'.join(map(str, err['loc']))}: {err['msg']}") from None

    @field_serializer("fault")
    def _dump_fault(self, fault: FaultSpec) -> dict:
        return fault.model_dump()

    @model_validator(mode="after")
    def _refs(self) -> BlockerCard:
        known = set(self.checks)
        for ref in [*self.contact, *(c for g in self.evidence for c in g)]:
            if ref not in known:
                raise ValueError(f"card {self.name}: contact/evidence names unknown check {ref!r}")
        return self

    @property
    def cls(self) -> str:
        return self.class_

    @property
    def semantics(self):
        """What this card's class means for scoring (blocked? escalation accepted? premature rule?)."""
        from impasse.conditions.classes import semantics

        return semantics(self.class_)


class CardError(ValueError):
    pass


def parse_card(text: str, source: str) -> BlockerCard:
    """A card from YAML text; errors name the card file and the field."""
    try:
        return BlockerCard.model_validate(yaml.safe_load(text))
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(map(str, err["loc"])) or "(top level)"
        raise CardError(f"blocker card {source}: {where}: {err['msg']}") from None


@cache
def load_cards() -> dict[str, BlockerCard]:
    cards = {}
    for ref in resources.files("impasse.conditions").joinpath("cards").iterdir():
        if ref.name.endswith(".yaml"):
            card = parse_card(ref.read_text(), ref.name)
            cards[card.name] = card
    missing = set(NAMES) - set(cards)
    if missing:
        raise RuntimeError(f"blocker cards missing: {sorted(missing)}")
    return {n: cards[n] for n in NAMES}


def card(name: str) -> BlockerCard:
    cards = load_cards()
    if name not in cards:
        raise KeyError(f"unknown condition {name!r}; known: {', '.join(cards)}")
    return cards[name]


def select(spec: str) -> list[str]:
    """'all' | comma-separated names and/or class names -> condition names, in canonical order."""
    cards = load_cards()
    wanted: set[str] = set()
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        if part == "all":
            wanted |= set(cards)
        elif part in CLASSES:
            wanted |= {n for n, c in cards.items() if c.cls == part}
        elif part in cards:
            wanted.add(part)
        else:
            raise ValueError(f"unknown condition or class {part!r}; names: {', '.join(cards)}; "
                             f"classes: {', '.join(CLASSES)}; or 'all'")
    return [n for n in cards if n in wanted]
