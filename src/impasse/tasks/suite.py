"""Suites: named lists of package specs, kept as YAML data files."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml
from pydantic import BaseModel, Field, model_validator

from impasse.tasks.names import canonical

PYTEST_PIN = "pytest==9.2.0"


class PackageSpec(BaseModel):
    """How to turn one PyPI release into a task image. Everything package-specific is here."""

    name: str
    version: str | None = Field(None, description="Exact version; None = latest release at build time")
    test_deps: list[str] = Field(default_factory=list, description="Extra pip requirements for the test suite")
    pins: list[str] = Field(default_factory=list, description="Extra pip constraints, e.g. 'attrs<26'")
    pytest_args: list[str] = Field(default_factory=list, description="Appended to every pytest run")
    env: dict[str, str] = Field(default_factory=dict, description="Environment for install and tests")
    source: list[str] = Field(default_factory=list, description="Source dirs to mutate (auto-detected if empty)")
    timeout: float = Field(120.0, description="Seconds for one full test-suite run")

    @property
    def key(self) -> str:
        return f"{self.name}-{self.version}"

    @classmethod
    def parse(cls, text: str) -> PackageSpec:
        """'NAME' or 'NAME==VERSION' from the command line."""
        name, _, version = text.partition("==")
        if not name.strip() or any(c in name for c in " <>!~;"):
            raise ValueError(f"bad package spec {text!r}: use NAME or NAME==VERSION")
        return cls(name=name.strip(), version=version.strip() or None)


class Suite(BaseModel):
    name: str
    packages: list[PackageSpec]
    import_needs_deps: list[str] = Field(default_factory=list, description=(
        "Packages of the set whose `import` fails without one of their third-party runtime dependencies, so "
        "missing_dependency can apply to their tasks (measured for real when each image is built). A slice of "
        "the set (the main job) builds these first"))

    @model_validator(mode="after")
    def _marked_are_members(self) -> Suite:
        names = {canonical(p.name) for p in self.packages}
        if unknown := [n for n in self.import_needs_deps if canonical(n) not in names]:
            raise ValueError(f"import_needs_deps names {', '.join(unknown)}, which is not among the set's packages")
        return self

    def slice_first(self) -> tuple[list[PackageSpec], list[PackageSpec]]:
        """What a slice of the set (a few tasks where every condition applies) builds first, and
        the rest, built only if the first are not enough."""
        marked = {canonical(n) for n in self.import_needs_deps}
        return ([p for p in self.packages if canonical(p.name) in marked],
                [p for p in self.packages if canonical(p.name) not in marked])


def suite_names() -> list[str]:
    return sorted(p.name.removesuffix(".yaml") for p in resources.files("impasse.tasks").joinpath("suites").iterdir()
                  if p.name.endswith(".yaml"))


def load_suite(name_or_path: str) -> Suite:
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.exists():
        text = path.read_text()
    else:
        ref = resources.files("impasse.tasks").joinpath("suites", f"{name_or_path}.yaml")
        if not ref.is_file():
            raise ValueError(f"unknown suite {name_or_path!r}; known: {', '.join(suite_names())} (or a path to a .yaml)")
        text = ref.read_text()
    return Suite.model_validate(yaml.safe_load(text))


def spec_for(name: str, version: str | None, suite: str = "default") -> PackageSpec:
    """The suite's settings for a package if it has them, else plain defaults (any PyPI package)."""
    for spec in load_suite(suite).packages:
        if canonical(spec.name) == canonical(name) and (version is None or spec.version == version):
            return spec
    return PackageSpec(name=name, version=version)
