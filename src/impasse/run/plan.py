"""Planning a run: which episodes, and the manifest that records them (run.py keeps only this)."""

from __future__ import annotations

import platform
import sys
from dataclasses import asdict
from typing import Any

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
    models = [a.arg for a in suite.agents(cfg) if a.model_kind == "model"]
    if unpriced := cfg.spend.ceilings_without_prices(models):
        raise ValueError(f"--max-cost limits {', '.join(unpriced)}, which the price table does not price, so its "
                         "spend could not be counted; give --prices FILE with an entry "
                         f"({unpriced[0]}: {{input: USD/Mtok, output: USD/Mtok}}) or drop the cost ceiling")


def plan(cfg: RunConfig) -> list[EpisodeSpec]:
    return suite_of(cfg).plan(cfg)[0]




def create_run(rd: RunDir, cfg: RunConfig) -> list[EpisodeSpec]:
    """Plan and write the manifest and the pinned task rows; refuses an existing run."""
    from impasse.monitor.monitor import default_rules
    from impasse.tasks.schema import write_jsonl

    if rd.exists():
        raise ValueError(f"{rd.path} already holds a run; use --resume {rd.path} or another --out")
    specs, tasks = suite_of(cfg).plan(cfg)
    rd.path.mkdir(parents=True, exist_ok=True)
    write_jsonl(tasks, rd.instances)
    rd.write_manifest({"impasse_version": impasse.__version__, "impasse_commit": impasse.git_commit(),
                       "python": sys.version.split()[0], "platform": platform.platform(),
                       "monitor_rules_version": default_rules().version, "config": cfg.model_dump(),
                       "episodes": [asdict(s) for s in specs]})
    return specs


def read_run(rd: RunDir) -> tuple[RunConfig, list[EpisodeSpec]]:
    data = rd.read_manifest()
    return RunConfig.model_validate(data["config"]), [EpisodeSpec(**e) for e in data["episodes"]]
