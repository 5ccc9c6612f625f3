"""Planning a run: which episodes, and the manifest that records them (run.py keeps only this)."""

from __future__ import annotations

import platform
import sys
from dataclasses import asdict
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

import impasse
from impasse.run.config import RunConfig
from impasse.store.rundir import RunDir
from impasse.suites.base import EpisodeSpec


def suite_of(cfg: RunConfig) -> Any:
    from impasse.suites import SUITES

    try:
        return SUITES.get(cfg.suite)
    except KeyError as e:
        raise ValueError(str(e)) from None


def check(cfg: RunConfig) -> None:
    """Every problem with ``cfg`` named before anything is built or run."""
    from impasse.run.executor import EXECUTORS
    from impasse.sandbox.registry import BACKENDS

    for registry, name in ((BACKENDS, cfg.backend), (EXECUTORS, cfg.executor)):
        if name not in registry:
            raise ValueError(f"unknown {registry.what} {name!r}; known: {', '.join(registry.names())}")
    suite = suite_of(cfg)
    suite.check(cfg)
    check_reviewer(cfg)
    models = [a.arg for a in suite.agents(cfg) if a.model_kind == "model"]
    if unknown := cfg.spend.unknown_ceilings(models):
        raise ValueError(f"a per-model limit names {', '.join(map(repr, unknown))}, which is no model of this run "
                         f"(its models: {', '.join(models) or 'none'}); a typo would limit nothing, so fix the name")
    if unpriced := cfg.spend.ceilings_without_prices(models):
        raise ValueError(unpriced_message(cfg, unpriced))


def unpriced_message(cfg: RunConfig, unpriced: list[str]) -> str:
    """What to do about a cost ceiling over models without a price, in the words of where the run
    came from: a sweep file's model takes a ``price:`` (the price table's schema), a plain run
    ``--prices FILE``."""
    if cfg.ledger:  # a sweep's run: its prices and ceilings come from the sweep file alone
        names = ", ".join(map(repr, unpriced))
        return (f"max_cost limits model {names}, which the sweep file gives no price, so its spend could not be "
                f"counted; add `price: {{input: USD/Mtok, output: USD/Mtok}}` (optionally `cached_input: USD/Mtok`) "
                f"to {'that model' if len(unpriced) == 1 else 'each of them'} under models: in the sweep file, or "
                "drop the cost ceiling")
    return (f"--max-cost limits {', '.join(unpriced)}, which the price table does not price, so its spend could not "
            f"be counted; give --prices FILE with an entry ({unpriced[0]}: {{input: USD/Mtok, output: USD/Mtok}}) or "
            "drop the cost ceiling")


def check_reviewer(cfg: RunConfig) -> None:
    from impasse.review.base import parse

    name, arg = parse(cfg.reviewer)
    if name != "oracle" and cfg.suite != "blockers":
        raise ValueError(f"--reviewer {cfg.reviewer}: reviewers answer the blockers suite's escalations; the "
                         f"{cfg.suite} suite has none (drop --reviewer)")
    if cfg.approvals:
        from impasse.review.approval import policy

        if cfg.suite != "blockers":
            raise ValueError(f"--approvals is for the blockers suite; got --suite {cfg.suite}")
        policy(cfg.approvals)
        if name == "human":
            raise ValueError("--approvals with --reviewer human: the review page answers escalations only; use "
                             "--reviewer oracle, queue or llm for approvals")
    if name == "queue":
        from impasse.review.queue import load_model

        load_model(arg or "default")


def plan(cfg: RunConfig) -> list[EpisodeSpec]:
    return suite_of(cfg).plan(cfg)[0]




def missing_images(rd: RunDir, cfg: RunConfig, specs: list[EpisodeSpec]) -> list[tuple[str, str, str]]:
    """The task images (ref, package, version) the run's tasks need that this cache lacks. The ask
    suite's SWE tasks work in default-suite packages' images (cachetools, isodate, ...), which the
    main job no longer builds for itself. A release run brings its own images: none."""
    from impasse.tasks.image import load_image

    if cfg.release:
        return []
    suite, needed = suite_of(cfg), {}
    for instance_id in dict.fromkeys(s.instance_id for s in specs):
        need = suite.image_of(rd, instance_id)
        if need is not None and load_image(need[0]) is None:
            needed[need[0]] = need
    return list(needed.values())


def create_run(rd: RunDir, cfg: RunConfig, planned: tuple[list[EpisodeSpec], list[Any]] | None = None
               ) -> list[EpisodeSpec]:
    """Plan (unless ``planned``) and write the pinned task rows and the manifest; refuses an
    existing run. The caller holds the run (``rd.own()``)."""
    from impasse.monitor.monitor import default_rules
    from impasse.tasks.schema import write_jsonl

    if rd.exists():
        raise ValueError(f"{rd.path} already holds a run; use --resume {rd.path} or another --out")
    specs, tasks = planned or suite_of(cfg).plan(cfg)
    rd.path.mkdir(parents=True, exist_ok=True)
    write_jsonl(tasks, rd.instances)
    rd.write_manifest({"impasse_version": impasse.__version__, "impasse_commit": impasse.git_commit(),
                       "python": sys.version.split()[0], "platform": platform.platform(),
                       "monitor_rules_version": default_rules().version, "config": cfg.model_dump(),
                       "episodes": [asdict(s) for s in specs]})
    return specs


class PlannedEpisode(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    episode_id: str
    instance_id: str
    condition: str
    interface: str
    agent: str


class Manifest(BaseModel):
    """What ``--resume`` reads back: the run's config and its planned episodes (strictly)."""

    model_config = ConfigDict(extra="allow")
    config: RunConfig
    episodes: list[PlannedEpisode]


def read_run(rd: RunDir) -> tuple[RunConfig, list[EpisodeSpec]]:
    """The run's own config and plan; a manifest of the wrong shape is an error naming the field."""
    from impasse.store.rundir import RunDirError

    try:
        m = Manifest.model_validate(rd.read_manifest())
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(map(str, err["loc"])) or "(manifest)"
        raise RunDirError(f"{rd.manifest}: field {where!r}: {err['msg']}; the run cannot be resumed as it is") from None
    return m.config, [EpisodeSpec(**e.model_dump()) for e in m.episodes]
