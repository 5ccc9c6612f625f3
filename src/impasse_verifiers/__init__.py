"""The verifiers plugin ``impasse-verifiers``: verifiers' loaders import a taskset, its harness
and its environment by a top-level module name, so this module re-exports them (one of each, as
its ``__all__`` must) from :mod:`impasse.integrations.verifiers.plugin`, where they live."""

from impasse.integrations.verifiers.plugin import ImpasseEnv, ImpasseHarness, ImpasseTaskset

__all__ = ["ImpasseEnv", "ImpasseHarness", "ImpasseTaskset"]
