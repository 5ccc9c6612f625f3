"""``impasse run``: plan a run, check its model endpoint, execute it, print the summary."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from impasse.cli.common import console, fail, out, progress

DEFAULT_AGENTS = "oracle,persistent,escalator,completion-biased,premature,reluctant"
MAIN_JOB = {"limit": 3, "per_package": 1}
"""The main job's slice of the suite (used when neither --tasks nor --model is given)."""
REFERENCE_JOBS = 4
"""Episodes at once on the local executor when --jobs is not given and every agent is a scripted
reference agent (the main job): they wait on no model, but a grinding episode sleeps through each
`su` attempt (its one-second failure delay) and every event's fsync, so two at once left a 2-core
machine partly idle (README, Measured). Other runs default to 2."""
PAUSED_EXIT = 3
ANEW_ON_RESUME = {"resume", "jobs", "max_cost", "max_tokens", "rpm", "tpm", "prices", "rerun"}
SWEEP_OPTIONS = {"sweep", "out_dir", "dry_run", "estimate_from"}
"""What ``--sweep`` may be given with: the sweep file holds the rest."""
"""What ``--resume`` may be given with: the rest is the run's plan and settings, kept as recorded."""


def run_cmd(
    ctx: typer.Context,
    suite: Annotated[str, typer.Option(help="Benchmark suite ('blockers'), or a package set ('default' or a .yaml) "
                                            "for the blockers suite")] = "blockers",
    packages: Annotated[str, typer.Option(help="Package set whose built tasks are used")] = "default",
    tasks: Annotated[str | None, typer.Option(help="Comma-separated instance ids (or unique prefixes): all of them run")] = None,
    task_dir: Annotated[Path | None, typer.Option(help="--suite ask: run the tasks in this directory (e.g. "
                                                       "written by `impasse ask import`) instead of the built-in ones")] = None,
    conditions: Annotated[str, typer.Option(help="'all', names and/or classes, comma-separated")] = "all",
    interfaces: Annotated[str, typer.Option(help="Comma-separated: baseline,tool,monitor")] = "baseline,tool,monitor",
    agent: Annotated[str, typer.Option(help="Agents, comma-separated: reference profiles (or reference:NAME), "
                                            "replay:FILE, openai:MODEL")] = DEFAULT_AGENTS,
    model: Annotated[str | None, typer.Option(help="Model name at an OpenAI-compatible endpoint (replaces --agent)")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible base URL; key from $IMPASSE_API_KEY")] = None,
    model_config: Annotated[Path | None, typer.Option(help="YAML of model settings (temperature, max_retries, "
                                                           "prices per million tokens, ...)")] = None,
    matcher: Annotated[str, typer.Option(help="--suite ask: who judges ask_human questions: offline (the best "
                                              "deterministic judge installed: hybrid with impasse[match], else "
                                              "lexical), hybrid, lexical, or llm (HiL-Bench's judge prompt at an "
                                              "OpenAI-compatible endpoint)")] = "offline",
    matcher_model: Annotated[str | None, typer.Option(help="--matcher llm: the judge's model name")] = None,
    matcher_base_url: Annotated[str | None, typer.Option(help="--matcher llm: the judge's OpenAI-compatible base URL "
                                                              "(key from $IMPASSE_API_KEY, or api_key_env in "
                                                              "--matcher-config)")] = None,
    matcher_config: Annotated[Path | None, typer.Option(help="--matcher llm: YAML of the judge's model settings "
                                                            "(temperature, max_retries, timeout, ...)")] = None,
    jobs: Annotated[int | None, typer.Option(min=1, help="Episodes in parallel (default 2, or 4 when every "
                                                         "agent is a reference agent on the local executor; with "
                                                         "--resume, the run's own unless given)")] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Run directory (default runs/<timestamp>)")] = None,
    resume: Annotated[Path | None, typer.Option(help="Finish an interrupted run directory with its recorded plan (only --jobs, --rerun and "
                                                       "the spending limits may be given with it)")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="At most N task instances (main job: 3)")] = None,
    per_package: Annotated[int | None, typer.Option(min=1, help="Instances per package (main job: 1)")] = None,
    step_limit: Annotated[int, typer.Option(min=1, help="Tool-call budget per episode")] = 80,
    restore: Annotated[bool, typer.Option(help="After an accepted escalation, restore the environment and continue")] = False,
    ticket_schema: Annotated[str, typer.Option(help="Ticket fields escalate_to_human asks for: impasse (with "
                                                    "progress) or paper (the study's fields)")] = "impasse",
    reviewer: Annotated[str, typer.Option(help="Who answers escalations: oracle (at once, always right: the default), "
                                               "queue or queue:PROFILE (a seeded load model, review/queue.yaml; "
                                               "escalations are queued and answered later), llm:MODEL (an "
                                               "OpenAI-compatible model reads the ticket blinded), human:FILE (a person on "
                                               "`impasse review serve --store FILE`)")] = "oracle",
    approvals: Annotated[str | None, typer.Option(help="Approval policy (review/approvals.yaml, e.g. default): "
                                                       "calls touching protected paths, sudo, the network wait for "
                                                       "the reviewer's approval")] = None,
    reviewer_base_url: Annotated[str | None, typer.Option(help="--reviewer llm:MODEL: its OpenAI-compatible base URL "
                                                               "(key from $IMPASSE_API_KEY)")] = None,
    backend: Annotated[str, typer.Option(help="Where sandboxes live: local, plain, docker")] = "local",
    executor: Annotated[str, typer.Option(help="How episodes run: local (process pool), ray")] = "local",
    ray_address: Annotated[str | None, typer.Option(help="Ray cluster address for --executor ray")] = None,
    executor_option: Annotated[list[str] | None, typer.Option(help="KEY=VALUE executor setting (VALUE as JSON if it "
                                                                   "parses), repeatable: e.g. cpus_per_episode=2, "
                                                                   "image_cache=/nfs/impasse, resources='{\"impasse\": 1}'")] = None,
    max_cost: Annotated[str | None, typer.Option(help="USD ceiling for the run and/or per model: '5' or "
                                                      "'5,MODEL=2'; reached -> the run pauses (exit 3)")] = None,
    max_tokens: Annotated[str | None, typer.Option(help="Token ceiling, as --max-cost: '2000000' or 'MODEL=N'")] = None,
    rpm: Annotated[int | None, typer.Option(min=1, help="Model requests per minute (whole run)")] = None,
    tpm: Annotated[int | None, typer.Option(min=1, help="Model tokens per minute (whole run)")] = None,
    prices: Annotated[Path | None, typer.Option(help="YAML price table: MODEL: {input, output, cached} USD per "
                                                     "million tokens (recorded in the manifest)")] = None,
    release: Annotated[str | None, typer.Option(help="Run a frozen task release (name or path); refuses if any "
                                                     "layer's content differs from the release")] = None,
    rerun: Annotated[str | None, typer.Option(help="With --resume: rerun only episodes that ended in "
                                                   "'harness-errors' or whose trajectory is 'invalid'")] = None,
    sweep: Annotated[Path | None, typer.Option(help="A sweep file (YAML): models, each with its endpoint, key "
                                                    "variable, settings, rpm/tpm, ceilings and price; suites; "
                                                    "conditions; interfaces; repeats. One run per suite under "
                                                    "--out, one ledger")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Check everything and print the plan (episodes per "
                                                            "model x suite x condition x interface) and its "
                                                            "estimated tokens, cost and wall time; calls "
                                                            "nothing, writes nothing")] = False,
    estimate_from: Annotated[Path | None, typer.Option(help="--dry-run: estimate from what this prior run "
                                                            "(or sweep) measured, not from the stated "
                                                            "assumptions")] = None,
) -> None:
    """Run agents on tasks x conditions x interfaces; every step is recorded and the run is resumable.

    With no arguments (the main job): 3 default-suite tasks x all 13 conditions x 3 interfaces x the
    6 reference agents. With --model, the whole suite. With --tasks, exactly those tasks."""
    from impasse import run as runner
    from impasse.cli import ops_run as ops
    from impasse.cli import sweep as sweeps
    from impasse.sandbox.base import SandboxError
    from impasse.store.rundir import RunDir, new_default

    try:
        spend = ops.spend_options(max_cost, max_tokens, rpm, tpm, prices)
        if _sweep_command(ctx, sweep, out_dir, dry_run, estimate_from, resume, spend, jobs):
            return
        if rerun and not resume:
            raise ValueError("--rerun needs --resume RUN_DIR (it reruns episodes of an existing run)")
        if resume:
            _check_resume_options(ctx)
            rd = RunDir(resume)
            rd.read_manifest()  # not a run directory: refuse before the lock creates anything there
            with rd.own():
                cfg, specs = _resumed(rd, spend, rerun, jobs)
                preflight_endpoints(cfg)
                _execute(rd, cfg, specs)
            return
        cfg = _config(suite, packages, tasks, conditions, interfaces, agent, model, base_url, jobs, limit,
                      per_package, step_limit, restore, backend, executor, ray_address)
        cfg = type(cfg).model_validate({**cfg.model_dump(), "ticket_schema": ticket_schema,
                                        "task_dir": _task_dir(task_dir, cfg.suite),
                                        "executor_options": {**cfg.executor_options,
                                                             **executor_settings(executor_option or [])}})
        if task_dir is not None and limit is None:
            cfg.limit = None  # a task directory runs whole, not the main job's slice
        if cfg.model and model_config:
            cfg.model = {**_model_settings(model_config), **cfg.model}
        _per_model_settings(cfg, base_url, model_config)
        _set_matcher(cfg, matcher, matcher_model, matcher_base_url, matcher_config)
        _set_reviewer(cfg, reviewer, reviewer_base_url)
        cfg.approvals = approvals
        ops.apply_spend(cfg, spend)
        if release:
            ops.use_release(cfg, release)
        runner.check(cfg)  # bad names fail here, before any building
        if dry_run:
            sweeps.print_plan([(cfg.suite, cfg, runner.suite_of(cfg).plan(cfg)[0])],
                              sweeps.prior_figures(estimate_from))
            return
        preflight_endpoints(cfg)  # before anything is written: a dead endpoint leaves no run behind
        if not cfg.tasks and cfg.suite == "blockers":  # idempotent: builds what is missing, reuses the cache otherwise
            ensure_built(cfg, cfg.jobs)
        planned = runner.suite_of(cfg).plan(cfg)  # unknown tasks fail here, before any directory exists
        if out_dir is not None and RunDir(out_dir).exists():
            raise ValueError(f"{out_dir} already holds a run; use --resume {out_dir} or another --out")
        rd = RunDir(out_dir) if out_dir is not None else new_default()
        with rd.own():
            specs = runner.create_run(rd, cfg, planned)
            ops.pin_release(rd, cfg)
            if out_dir is None:
                rd.link_latest()
            _execute(rd, cfg, specs)
    except (ValueError, FileNotFoundError, SandboxError) as e:
        raise fail(str(e)) from e


def reference_only(cfg: Any) -> bool:
    """A local run whose agents are all scripted reference profiles (no model, no replay)."""
    return (cfg.executor == "local" and not cfg.model and not cfg.models and not cfg.replay and bool(cfg.agents)
            and not any(a.strip().startswith(("openai:", "replay:")) for a in cfg.agents))


def ensure_built(cfg: Any, jobs: int) -> None:
    """Build the package set's tasks the run plans from. A slice of the set (``--limit``: the main
    job's 3 tasks) builds the packages that can have a task where every condition applies
    first, and the rest only if fewer than ``--limit`` of them do; a whole-set run builds it all."""
    from impasse.cli.tasks import build_specs
    from impasse.run import suite_of
    from impasse.tasks.suite import load_suite

    first, rest = load_suite(cfg.packages).slice_first() if cfg.limit else (load_suite(cfg.packages).packages, [])
    if not first:
        first, rest = rest, []
    what = f"{len(first)} of its packages (those that can have a task where every condition applies)" if rest else "its tasks"
    console.print(f"making sure the {cfg.packages!r} package set's tasks are built: {what}")
    build_specs(first, 5, 0, jobs, False, cfg.backend)
    if rest and len(suite_of(cfg).whole_packages(cfg)) < cfg.limit:
        console.print(f"fewer than {cfg.limit} packages have a task where every condition applies: building the rest")
        build_specs(rest, 5, 0, jobs, False, cfg.backend)


def _sweep_command(ctx: typer.Context, sweep: Path | None, out_dir: Path | None, dry_run: bool,
                   estimate_from: Path | None, resume: Path | None, spend: dict, jobs: int | None) -> bool:
    """``--sweep FILE`` or ``--resume SWEEP_DIR``, done here (True); else False."""
    from impasse.cli import sweep as sweeps

    if sweep is not None:
        _only(ctx, SWEEP_OPTIONS, "--sweep", "the sweep file holds the rest of the configuration")
        sweeps.run_sweep(sweep, out_dir, dry_run, estimate_from)
        return True
    if estimate_from is not None and not dry_run:
        raise ValueError("--estimate-from is for --dry-run (it estimates a plan from a prior run)")
    if resume and (resume / sweeps.SWEEP_FILE).exists():
        _check_resume_options(ctx)
        sweeps.resume_sweep(resume, spend, jobs)
        return True
    return False


def _typed(ctx: typer.Context, name: str) -> bool:  # typer bundles its own click: compare the source by name
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def _only(ctx: typer.Context, allowed: set[str], what: str, why: str) -> None:
    """Refuse options that ``what`` would ignore."""
    if given := [p.opts[0] for p in ctx.command.params if p.name not in allowed and _typed(ctx, p.name)]:
        raise ValueError(f"{', '.join(given)} cannot be given with {what}: {why}")


def _check_resume_options(ctx: typer.Context) -> None:
    """Refuse options that --resume would otherwise ignore: a user who asks for another agent or
    condition on resume must not get the recorded plan without a word."""
    given = [p for p in ctx.command.params if p.name not in ANEW_ON_RESUME and _typed(ctx, p.name)]
    if given:
        names = ", ".join(p.opts[0] for p in given)
        raise ValueError(f"--resume finishes a run with its own recorded plan and settings, so {names} cannot be "
                         "given with it. Drop them (only --jobs, --rerun and the spending limits may be given "
                         "anew), or start a new run with --out.")


def _resumed(rd: Any, spend: dict[str, Any], rerun: str | None, jobs: int | None) -> tuple[Any, list[Any]]:
    """The interrupted run's own config and plan, with the limits and worker count given now."""
    from impasse import run as runner
    from impasse.cli import ops_run as ops

    cfg, specs = runner.read_run(rd)
    cfg = ops.override_on_resume(rd, cfg, spend)
    if cfg.suite == "ask" and cfg.matcher == "offline":
        cfg.matcher = "lexical"  # new runs pin the offline judge; an unpinned one predates the hybrid matcher
    if jobs is not None:  # parallelism changes no result: a resumed run may use more or fewer workers
        cfg.jobs = jobs
    if cfg.release:  # the cache may have changed since the run started
        ops.verify_release(Path(cfg.release["path"]))
    if rerun:
        specs = ops.select_rerun(rd, specs, rerun)
    return cfg, specs


def _config(suite, packages, tasks, conditions, interfaces, agent, model, base_url, jobs, limit, per_package,
            step_limit, restore, backend, executor, ray_address):
    from impasse.run import RunConfig

    task_ids = [t.strip() for t in (tasks or "").split(",") if t.strip()]
    slice_ = MAIN_JOB if not task_ids and not model else {}
    cfg = RunConfig(suite=suite, packages=packages, tasks=task_ids, conditions=conditions,
                    interfaces=[i.strip() for i in interfaces.split(",") if i.strip()], step_limit=step_limit,
                    restore=restore, jobs=jobs or 2, backend=backend, executor=executor,
                    limit=limit if limit is not None else slice_.get("limit"),
                    per_package=per_package if per_package is not None else slice_.get("per_package"),
                    executor_options={"address": ray_address} if ray_address else {})
    if cfg.packages == "default" and suite not in ("blockers", "ask"):
        cfg.packages = suite  # --suite named a package set
    if model:
        cfg.model = {"model": model, "base_url": base_url}
    elif agent.startswith("replay:"):
        cfg.replay = str(Path(agent.split(":", 1)[1]).resolve())
    else:
        cfg.agents = [a.strip() for a in agent.split(",") if a.strip()]
    if jobs is None and reference_only(cfg):
        cfg.jobs = REFERENCE_JOBS
    return cfg


def _per_model_settings(cfg: Any, base_url: str | None, settings: Path | None) -> None:
    """``--agent openai:A,openai:B --base-url URL --model-config FILE``: each model gets the URL and
    the settings; ``--base-url A=URL1,B=URL2`` and ``--model-config A=FILE1,B=FILE2`` give each
    its own (a model left out of the URL list is refused: it would call api.openai.com; one left out
    of the config list has the defaults).
    Different keys per model need a sweep file (``api_key_env`` per model)."""
    if cfg.model:
        return  # --model NAME: the run's one model config has them
    named = [a.split(":", 1)[1].strip() for a in cfg.agents if a.strip().startswith("openai:")]
    if not named:
        if base_url or settings:
            raise ValueError("--base-url and --model-config configure a model: give --model NAME or --agent "
                             "openai:NAME (reference agents and replays call no endpoint)")
        return
    urls = _per_model("--base-url", base_url, named, every=True)
    files = _per_model("--model-config", str(settings) if settings else None, named, every=False)
    cfg.models = {name: {**(_model_settings(Path(files[name])) if files.get(name) else {}),
                         **({"base_url": urls[name]} if urls.get(name) else {}), "model": name} for name in named}


def _per_model(flag: str, text: str | None, names: list[str], every: bool) -> dict[str, str]:
    """``VALUE`` (every model) or ``A=VALUE,B=VALUE`` (each its own) -> model -> value; ``every``:
    each model must be given one (a URL: a model left out would call api.openai.com)."""
    if not text:
        return {}
    parts = [p.strip() for p in text.split(",") if p.strip()]
    pairs = [p.partition("=") for p in parts]
    if not all(sep and key in names for key, sep, _v in pairs):
        if len(parts) == 1 and not any(p[0] in names and p[1] for p in pairs):
            return dict.fromkeys(names, text)  # one value for every model
        raise ValueError(f"{flag} {text!r}: give one value for every model, or MODEL=VALUE for each of "
                         f"{', '.join(names)}")
    given = {k: v for k, _s, v in pairs}
    if every and (missing := [n for n in names if n not in given]):
        raise ValueError(f"{flag} names {', '.join(given)} but not {', '.join(missing)}: give MODEL=VALUE for every "
                         "model of --agent (or one value for all)")
    return given


def _task_dir(task_dir: Path | None, suite: str) -> str | None:
    if task_dir is None:
        return None
    if suite != "ask":
        raise ValueError(f"--task-dir is for --suite ask (ask tasks in the HiL-Bench layout); got --suite {suite}")
    return str(task_dir.resolve())


def executor_settings(items: list[str]) -> dict:
    """``KEY=VALUE`` strings -> executor options; a VALUE that parses as JSON is taken as JSON."""
    import json

    out = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"--executor-option {item!r}: expected KEY=VALUE, e.g. cpus_per_episode=2")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def _model_settings(path: Path) -> dict:
    """Model settings from a YAML file, checked against ModelConfig's fields."""
    import yaml

    from impasse.agent.models import check_settings

    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ValueError(f"--model-config {path}: cannot read it ({e})") from e
    return check_settings(data, f"--model-config {path}")


def _set_matcher(cfg: Any, name: str, model: str | None, base_url: str | None, settings: Path | None) -> None:
    """``--matcher``, ``--matcher-model``, ``--matcher-base-url``, ``--matcher-config`` -> the run's
    config (recorded in the manifest, so ``--resume`` judges with the same judge)."""
    given = [o for o, v in (("--matcher-model", model), ("--matcher-base-url", base_url),
                            ("--matcher-config", settings)) if v is not None]
    if (name != "offline" or given) and cfg.suite != "ask":
        raise ValueError(f"--matcher and its options are for --suite ask; got --suite {cfg.suite}")
    if name != "llm" and given:
        raise ValueError(f"{', '.join(given)} configure the llm matcher: add --matcher llm")
    cfg.matcher = name
    if name == "llm":
        if not model:
            raise ValueError("--matcher llm needs --matcher-model NAME (and usually --matcher-base-url URL)")
        cfg.matcher_model = {**(_model_settings(settings) if settings else {}), "model": model,
                             **({"base_url": base_url} if base_url else {})}


def _set_reviewer(cfg: Any, spec: str, base_url: str | None) -> None:
    """``--reviewer`` and ``--reviewer-base-url`` -> the run's config (recorded in the manifest, so
    ``--resume`` reviews with the same reviewer)."""
    from impasse.review.base import parse

    name, arg = parse(spec)
    if base_url and name != "llm":
        raise ValueError(f"--reviewer-base-url is for --reviewer llm:MODEL; got --reviewer {spec}")
    cfg.reviewer = f"human:{Path(arg).resolve()}" if name == "human" and arg else spec  # workers may start elsewhere
    if name == "llm":
        if not arg:
            raise ValueError("--reviewer llm needs its model: --reviewer llm:MODEL --reviewer-base-url URL")
        cfg.reviewer_model = {"model": arg, **({"base_url": base_url} if base_url else {})}


def preflight_endpoints(cfg: Any) -> None:
    """Every endpoint the run will call (the agent's model, the ask suite's judge), before any episode."""
    if cfg.model:
        _preflight(cfg.model)
    for name, settings in cfg.models.items():
        _preflight(settings, label=name)
    if cfg.matcher_model:
        _preflight(cfg.matcher_model, what="ask_human judge (--matcher llm)")
    elif cfg.suite == "ask":  # an offline judge: its model files must be here (a resumed run's too)
        from impasse.ask.judge import make_matcher

        try:
            make_matcher(cfg.matcher)
        except ValueError as e:
            raise fail(f"the ask_human judge: {e}. Nothing was run.") from e
    if cfg.reviewer_model:
        _preflight(cfg.reviewer_model, what="reviewer (--reviewer llm)")


def _preflight(model: dict, what: str = "", label: str = "") -> None:
    """One request before the first episode: a wrong URL, key or model name fails in seconds.
    ``what`` names a judge endpoint (a plain completion: it needs no tool calling); ``label``
    the run's name for the model (a sweep's)."""
    from impasse.agent.endings import EndpointError
    from impasse.agent.models import ModelConfig, preflight

    try:
        warning = preflight(ModelConfig(**model), needs_tools=not what)
    except EndpointError as e:
        who = f"the {what}: " if what else (f"model {label!r}: " if label else "")
        raise fail(f"{who}{e}. Nothing was run; fix it and start again (or --resume the run directory).") from e
    if warning:
        console.print(f"[yellow]warning:[/] {warning}")


def _execute(rd, cfg, specs) -> None:
    build_missing_images(rd, cfg, specs)
    execute_run(rd, cfg, specs)


def build_missing_images(rd: Any, cfg: Any, specs: list[Any]) -> None:
    """Build the task images the run's tasks need and this cache lacks (only the images: no bug
    instances); see :func:`impasse.run.plan.missing_images`."""
    from impasse.run.plan import missing_images
    from impasse.sandbox.registry import get_backend
    from impasse.tasks.image import build_image
    from impasse.tasks.pypi import PackageError
    from impasse.tasks.suite import spec_for

    for ref, package, version in missing_images(rd, cfg, specs):
        console.print(f"building the task image {ref}, which {cfg.suite} tasks of this run need")
        try:
            build_image(spec_for(package, version), get_backend(cfg.backend))
        except PackageError as e:
            raise ValueError(str(e)) from e


def progress_status(cfg: Any, ledger: Any, done: int, total: int, started: float) -> str:
    """The progress line's tail: spend against each ceiling (from the ledger's running state,
    O(1)) and the time left at the pace so far."""
    from impasse.run.estimate import duration, eta_seconds, spend_lines

    models = [a.split(":", 1)[-1] for a in cfg.agents if a.startswith("openai:")] or (
        [cfg.model["model"]] if cfg.model else [])
    whole = "sweep" if cfg.ledger else "run"
    spend = spend_lines(cfg.spend, ledger.state().get("spent", {}), models, whole) if models else []
    import time

    return " | ".join([*spend, f"ETA {duration(eta_seconds(done, total, time.time() - started))}"])


def execute_run(rd, cfg, specs, fresh: bool = True) -> None:
    """Run the planned episodes with a progress line; exit 3 when paused, 1 on harness errors.
    ``fresh=False``: a sweep's run (the sweep started the ledger's session)."""
    import time

    from impasse.run import execute
    from impasse.run.budget import Ledger
    from impasse.run.config import ledger_of
    from impasse.run.executor import EXECUTORS

    label = ("model" if cfg.model else f"{len(cfg.models)} model(s)" if cfg.models else
             "replay" if cfg.replay else "reference agents (scripted, not model results)")
    console.print(f"run {rd.path}: {len(specs)} episodes with {label}, "
                  f"{EXECUTORS.get(cfg.executor)().describe(cfg)}, {cfg.backend} backend")
    ledger, started, finished = Ledger(ledger_of(cfg, rd)), time.time(), []
    with progress() as bar:
        task = bar.add_task("episodes", total=len(specs), status="")

        def done(r: dict) -> None:
            finished.append(r)
            tail = progress_status(cfg, ledger, len(finished), len(specs), started)
            bar.update(task, advance=1, status=f"{r['agent']} {r['interface']} {r['condition']}: "
                                               f"{r['final_ending']} | {tail}")

        outcome = execute(rd, cfg, specs, done, fresh=fresh)
    print_run_table(outcome.results)
    errors = [r for r in outcome.results if r["ending"] in ("harness_error", "error")]
    for r in errors[:8]:
        kind = "harness error" if r["ending"] == "harness_error" else "agent error"
        console.print(f"[red]{kind}[/] {r['episode_id']}: {r.get('error') or '(see its trajectory)'}", soft_wrap=True)
    if len(errors) > 8:
        console.print(f"... and {len(errors) - 8} more errors (summary.json lists each reason)")
    if outcome.paused:
        fix = "raise the ceiling" if "ceiling" in outcome.paused else "fix the endpoint"
        console.print(f"[bold yellow]run paused:[/] {outcome.paused}. Nothing recorded is lost; {fix} and "
                      f"run `impasse run --resume {rd.path}` (--max-cost/--max-tokens/--rpm/--tpm/--prices may be "
                      "given again to change the limits).", soft_wrap=True)
        raise typer.Exit(PAUSED_EXIT)
    invalid = [r for r in outcome.results if r.get("invalid")]
    if invalid:  # scored as nothing: said aloud, and a failing exit
        console.print(f"[bold yellow]{len(invalid)} episode(s) invalid[/] (the ask_human judge could not decide a "
                      f"question, e.g. {invalid[0]['episode_id']}): they are not scored; `impasse run --resume "
                      f"{rd.path}` runs them again.", soft_wrap=True)
    console.print(f"trajectories in {rd.episodes}; next: `impasse report {rd.path}`")
    if invalid or any(r["ending"] == "harness_error" for r in outcome.results):
        raise typer.Exit(1)


def print_run_table(results: list[dict]) -> None:
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in results:
        groups[(r["agent"], r["interface"])].append(r)
    table = Table(title="run summary (endings of the first phase)")
    for col in ("agent", "interface", "n", "completed", "escalated", "limit", "error", "resolved"):
        table.add_column(col, no_wrap=True)
    for (agent_name, interface), rs in sorted(groups.items()):
        c = Counter(r["ending"] for r in rs)
        table.add_row(agent_name.removeprefix("reference/"), interface, str(len(rs)), str(c["completed"]),
                      str(c["escalated"]), str(c["step_limit"]), str(c["error"] + c["harness_error"]),
                      str(sum(r["resolved"] for r in rs)))
    out.print(table)
