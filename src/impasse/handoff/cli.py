"""``impasse handoff``: single models, handoffs at switch points, controls, and the QRec/CSRet report.

Reference agents (``reference:weak``, ``reference:strong``) make it run offline; their numbers are
a demonstration of the mechanics, never findings. Real models: ``openai:NAME`` with
``--prefix-model-config`` / ``--suffix-model-config`` (YAML of ModelConfig fields: base_url,
api_key_env, ...), which may point at two different OpenAI-compatible endpoints.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer(help="Model-to-model handoff experiments (issue 13).")


def _yaml(path: Path | None) -> dict[str, Any]:
    import yaml

    if path is None:
        return {}
    if not path.is_file():
        raise typer.BadParameter(f"no model config file at {path}")
    from impasse.agent.models import check_settings

    try:
        return check_settings(yaml.safe_load(path.read_text()) or {}, str(path))
    except (ValueError, yaml.YAMLError) as e:
        raise typer.BadParameter(str(e)) from None


def _csv(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


@app.command("handoff")
def handoff_cmd(
    prefix: Annotated[str, typer.Option(help="The weak (LC) model: reference:weak or openai:NAME")] = "reference:weak",
    suffix: Annotated[str, typer.Option(help="The strong (HC) model: reference:strong or openai:NAME")] = "reference:strong",
    interfaces: Annotated[str, typer.Option(help="Comma-separated: raw,compact_pre,compact_suf,traj_drop,ticket")] = "raw,compact_pre,compact_suf,traj_drop,ticket",
    switch: Annotated[str, typer.Option(help="Switch points: steps (5), percentiles of the prefix's own termination "
                                             "steps (p5,p10,p15,p25,p35,p45,p50), or 'escalation'")] = "3,p50",
    direction: Annotated[str, typer.Option(help="escalation (prefix -> suffix), downshift (suffix -> prefix), or both")] = "both",
    tasks: Annotated[str, typer.Option(help="Comma-separated instance ids (or unique prefixes)")] = "",
    conditions: Annotated[str, typer.Option(help="Blocker conditions, comma-separated")] = "clean",
    step_limit: Annotated[int, typer.Option(min=1, help="Tool calls per episode, both models together")] = 30,
    restore: Annotated[bool, typer.Option(help="At an escalation switch, restore the environment first")] = False,
    prefix_model_config: Annotated[Path | None, typer.Option(help="YAML ModelConfig for the prefix (LC) endpoint")] = None,
    suffix_model_config: Annotated[Path | None, typer.Option(help="YAML ModelConfig for the suffix (HC) endpoint")] = None,
    prices: Annotated[Path | None, typer.Option(help="Price table YAML (USD per million tokens per model label; "
                                                     "default: the package's impasse/prices.yaml)")] = None,
    prior: Annotated[Path | None, typer.Option(help="Run directory whose single-model trajectories give percentiles")] = None,
    buckets: Annotated[str, typer.Option(help="Percentiles within difficulty buckets: none, or outcome (whether the "
                                              "prefix model resolved the instance alone)")] = "none",
    out: Annotated[Path, typer.Option(help="Output directory (resumable)")] = Path("runs/handoff"),
    backend: Annotated[str, typer.Option(help="Sandbox backend; it must fork episodes (local)")] = "local",
    reps: Annotated[int, typer.Option(min=1, help="Bootstrap resamples")] = 1000,
) -> None:
    """Run the handoff experiment over the blockers suite and print QRec/CSRet per interface x direction."""
    from impasse.conditions.cards import select
    from impasse.handoff.report import write_report
    from impasse.handoff.runner import Plan, Side, prior_steps, unbucketed
    from impasse.prices import load_prices
    from impasse.suites.blockers import built_instances
    from impasse.tasks.lookup import find_instance

    try:
        ifaces, dirs = _check_options(interfaces, direction, switch, backend, buckets)
        price_table = load_prices(prices)
        lc_config, hc_config = _yaml(prefix_model_config), _yaml(suffix_model_config)  # files before the cache
        insts = built_instances()
        if not tasks:
            raise ValueError("give --tasks (instance ids); `impasse tasks list` shows the built ones")
        chosen = [find_instance(t, insts) for t in _csv(tasks)]
        plan = Plan(Side(prefix, lc_config), Side(suffix, hc_config), ifaces,
                    _csv(switch), dirs, chosen, select(conditions), step_limit=step_limit, restore=restore,
                    backend=backend, prior=prior_steps(prior) if prior else {},
                    bucket=None if buckets == "none" else buckets, prior_dir=str(prior.resolve()) if prior else None)
        if missing := unbucketed(plan):
            raise ValueError(f"--buckets {buckets}: the --prior run has no single-model run of {', '.join(missing)}, "
                             "so no difficulty bucket; add those to the prior run or leave --buckets out")
        for side in (plan.lc, plan.hc):
            side.label  # noqa: B018 - parses the spec: a bad one fails here, before any episode
    except (ValueError, KeyError) as e:
        raise typer.BadParameter(str(e)) from None
    _preflight(plan)
    from impasse.agent.endings import EndpointError
    from impasse.handoff.runner import run_plan
    from impasse.sandbox.base import ForkUnsupported

    try:
        rows = run_plan(plan, out, price_table, lambda r: typer.echo(json.dumps(
            {k: r[k] for k in ("strategy", "k", "instance", "switched", "resolved", "cost_usd")})))
    except ValueError as e:  # options that differ from the run recorded in --out
        raise typer.BadParameter(str(e)) from None
    except ForkUnsupported as e:  # a backend registered elsewhere that cannot fork after all
        raise fail(f"{e}; use --backend {' or '.join(forking_backends())} (and another --out)") from e
    except EndpointError as e:  # the harness's, not the model's: nothing recorded is lost
        raise fail(f"{e}. The handoff run in {out} stopped; what was recorded is kept: fix the endpoint and run the "
                   "same command again to go on.", code=3) from e
    write_report(rows, plan, out, reps)


def _check_options(interfaces: str, direction: str, switch: str, backend: str, buckets: str
                   ) -> tuple[list[str], list[str]]:
    """The options' own syntax, before anything is looked up: (interfaces, directions)."""
    from impasse.handoff.interfaces import INTERFACES
    from impasse.handoff.metrics import BUCKETS
    from impasse.handoff.runner import switch_steps

    ifaces = _csv(interfaces)
    for i in ifaces:
        INTERFACES.get(i)
    dirs = ["escalation", "downshift"] if direction == "both" else [direction]
    if set(dirs) - {"escalation", "downshift"}:
        raise ValueError(f"--direction {direction!r}: use escalation, downshift or both")
    for sw in _csv(switch):
        if not (sw.startswith("p") and sw[1:].isdigit()):
            switch_steps(sw, [])
    _check_backend(backend)
    if buckets != "none" and buckets not in BUCKETS:
        raise ValueError(f"--buckets {buckets!r}: use none or one of {', '.join(BUCKETS)}")
    return ifaces, dirs


def forking_backends() -> list[str]:
    from impasse.sandbox.registry import BACKENDS

    return [n for n in BACKENDS.names() if BACKENDS.get(n).forks]


def _check_backend(name: str) -> None:
    """Before any episode: every interface is a fork of one prefix, so the backend must fork (a
    backend that cannot would fail only after the single-model runs, and the manifest pins it)."""
    from impasse.sandbox.registry import BACKENDS

    if not BACKENDS.get(name).forks:  # an unknown name: the registry's message
        raise ValueError(f"--backend {name}: its episodes cannot fork, and every interface is a fork of one prefix: "
                         f"use --backend {' or '.join(forking_backends())}")


def _preflight(plan) -> None:
    """One request to each model endpoint before anything is written: a wrong URL, key or model
    name fails in seconds, not after an episode's retries."""
    from impasse.agent.agents import AgentSpec
    from impasse.agent.endings import EndpointError
    from impasse.agent.models import ModelConfig, preflight

    for role, side in (("prefix", plan.lc), ("suffix", plan.hc)):
        spec = AgentSpec.parse(side.spec)
        if spec.kind != "openai":
            continue
        try:
            warning = preflight(ModelConfig(**{"model": spec.arg, **side.model_config}))
        except EndpointError as e:
            raise fail(f"the {role} model {side.spec!r}: {e}. Nothing was run; fix --{role}-model-config and "
                       "start again.") from e
        except TypeError as e:  # a setting of the wrong kind that check_settings let through
            raise fail(f"the {role} model {side.spec!r}: {e}") from e
        if warning:
            typer.echo(f"warning: {warning}", err=True)


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print ``message`` (what was wrong, what to do) on stderr; the exit to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)
