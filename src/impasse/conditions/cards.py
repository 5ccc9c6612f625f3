"""Blocker cards: the evaluator's description of each condition, loaded from YAML data files.

The agent never sees a card. The annotator reads ``checks``/``contact``/``evidence`` to place
first contact and t*; the fault code reads ``fault``; people read the rest. Importing this module
pulls in nothing from the sandbox.

A condition *is* its card file: every valid ``NAME.yaml`` in the package's ``cards/`` directory
and in the directories named by ``$IMPASSE_CARDS_PATH`` (colon-separated) is a condition. Beside a
card may lie ``NAME.monitor.yaml`` (monitor patterns and rules the card's condition needs; merged
into the monitor's rule set) and ``NAME.catalogue.yaml`` (diagnostic catalogue entries, as in
``tests/catalogue/``). An invalid card, or two cards of one name, is an error naming the file and
the field; nothing is silently dropped. Adding a condition whose fault kind exists is one file.
"""

from __future__ import annotations

import os
import re
from functools import cache
from importlib import resources
from pathlib import Path
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
CARDS_PATH = "IMPASSE_CARDS_PATH"
COMPANIONS = (".monitor.yaml", ".catalogue.yaml")
"""Files beside a card that are not cards themselves."""


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
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    version: str = Field("1", description="Bumped whenever checks/contact/evidence change, so t* stays comparable")
    class_: Literal["clean", "persistent", "verification", "temporary", "mismatch"] = Field(alias="class")
    order: int | None = Field(None, description="Position within its class in lists and reports (cards without "
                                                "one follow, by name)")
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
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise CardError(f"blocker card {source}: not valid YAML ({e})") from None
    if not isinstance(data, dict):
        raise CardError(f"blocker card {source}: (top level): a card is a mapping of fields (name, class, ...)")
    try:
        return BlockerCard.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(map(str, err["loc"])) or "(top level)"
        raise CardError(f"blocker card {source}: {where}: {err['msg']}") from None


def card_dirs() -> list[Path]:
    """Where cards are read from: the package's own, then each ``$IMPASSE_CARDS_PATH`` directory."""
    own = Path(str(resources.files("impasse.conditions").joinpath("cards")))
    extra = [Path(p).expanduser() for p in os.environ.get(CARDS_PATH, "").split(":") if p.strip()]
    return [own, *extra]


def card_files() -> list[Path]:
    """Every card file, in directory order (companion files excluded)."""
    return list(_files(os.environ.get(CARDS_PATH, "")))


def load_cards() -> dict[str, BlockerCard]:
    """Every condition, in canonical order: by class (clean, persistent, verification, temporary,
    mismatch), then each card's ``order``, then name. Read once per process (and per value of
    ``$IMPASSE_CARDS_PATH``)."""
    return _load(_files(os.environ.get(CARDS_PATH, "")))


@cache
def _files(_path_value: str) -> tuple[Path, ...]:
    files: list[Path] = []
    for d in card_dirs():
        if not d.is_dir():
            raise CardError(f"${CARDS_PATH}: {d} is not a directory (give a colon-separated list of card "
                            "directories)")
        files += sorted(p for p in d.glob("*.yaml") if not p.name.endswith(COMPANIONS))
    return tuple(files)


@cache
def _load(files: tuple[Path, ...]) -> dict[str, BlockerCard]:
    cards: dict[str, BlockerCard] = {}
    where: dict[str, Path] = {}
    for path in files:
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise CardError(f"blocker card {path}: cannot read it ({e})") from None
        c = parse_card(text, str(path))
        if c.name != path.stem:
            raise CardError(f"blocker card {path}: name: {c.name!r} must be the file's name ({path.stem!r})")
        if c.name in cards:
            raise CardError(f"blocker card {path}: name: {c.name!r} is already defined by {where[c.name]}")
        cards[c.name], where[c.name] = c, path
    if "clean" not in cards:
        raise CardError("no 'clean' card: the control condition is missing from the package's cards")
    order = sorted(cards.values(), key=lambda c: (CLASSES.index(c.cls), c.order is None, c.order or 0, c.name))
    return {c.name: c for c in order}


def companion(name: str, kind: str) -> Path | None:
    """``NAME.<kind>.yaml`` beside the card ``name`` (kind: monitor, catalogue), if there is one."""
    for path in card_files():
        if path.stem == name:
            found = path.with_name(f"{name}.{kind}.yaml")
            return found if found.exists() else None
    return None


def names() -> list[str]:
    return list(load_cards())


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
