"""The ``impasse`` command. Subcommands follow the pipeline: tasks -> conditions/sandbox -> run ->
annotate -> report."""

from __future__ import annotations

import json
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

app = typer.Typer(help="Benchmark and runtime library for agents that must know when to stop and hand off.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
tasks_app = typer.Typer(help="Build and inspect repair tasks from real PyPI packages.", no_args_is_help=True)
app.add_typer(tasks_app, name="tasks")
console = Console(stderr=True)
out = Console(width=None if sys.stdout.isatty() else 160)  # tables stay readable when piped


def fail(message: str, code: int = 2) -> typer.Exit:
    from rich.markup import escape

    console.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True, highlight=False)
    return typer.Exit(code)


def progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TextColumn("{task.fields[status]}"), console=console, transient=False)


# ------------------------------------------------------------------------------------------ tasks


def _build_one(spec_json: str, max_instances: int, seed: int, force: bool) -> dict:
    """Worker: one package (own process: the sandbox backend is per process)."""
    from impasse.sandbox.local import LocalBackend
    from impasse.tasks.build import build_package
    from impasse.tasks.pypi import PackageError
    from impasse.tasks.suite import PackageSpec

    spec = PackageSpec.model_validate_json(spec_json)
    try:
        r = build_package(spec, LocalBackend(), max_instances=max_instances, seed=seed, force=force)
    except PackageError as e:
        return {"package": spec.name, "error": str(e)}
    return {"package": r.package, "version": r.version, "instances": len(r.instances), "candidates": r.candidates,
            "image_seconds": r.image_seconds, "validate_seconds": r.validate_seconds, "reused": r.reused, "error": ""}


@tasks_app.command("build")
def tasks_build(
    packages: Annotated[list[str] | None, typer.Argument(help="PKG or PKG==VERSION; any PyPI package with tests in its sdist")] = None,
    suite: Annotated[str | None, typer.Option(help="Build a whole suite ('default' or a .yaml path)")] = None,
    max_per_package: Annotated[int, typer.Option(help="Valid instances to keep per package")] = 5,
    seed: Annotated[int, typer.Option(help="Seed for choosing and applying mutations")] = 0,
    jobs: Annotated[int, typer.Option(help="Packages built in parallel")] = 2,
    force: Annotated[bool, typer.Option(help="Rebuild images and instances even if cached")] = False,
) -> None:
    """Download sdists, build task images, inject and validate bugs. Idempotent: reuses the cache."""
    from impasse.tasks.suite import PackageSpec, load_suite, spec_for

    if not packages and not suite:
        suite = "default"
    try:
        specs = list(load_suite(suite).packages) if suite else []
        specs += [spec_for(p.name, p.version) for p in map(PackageSpec.parse, packages or [])]
    except ValueError as e:
        raise fail(str(e)) from e
    results = []
    with progress() as bar, ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        task = bar.add_task("building tasks", total=len(specs), status="")
        futures = {pool.submit(_build_one, s.model_dump_json(), max_per_package, seed, force): s for s in specs}
        for fut in as_completed(futures):
            r = fut.result()
            results.append(r)
            note = f"[red]{r['package']}: failed" if r["error"] else f"{r['package']}: {r['instances']} instances"
            bar.update(task, advance=1, status=note)
    table = Table(title="task build")
    for col in ("package", "version", "instances", "candidates", "image s", "validate s", "note"):
        table.add_column(col)
    for r in sorted(results, key=lambda r: r["package"]):
        note = r["error"].splitlines()[0] if r["error"] else ("cached" if r.get("reused") else "")
        table.add_row(r["package"], r.get("version", ""), str(r.get("instances", 0)), str(r.get("candidates", "")),
                      str(r.get("image_seconds", "")), str(r.get("validate_seconds", "")), note)
    out.print(table)
    total = sum(r.get("instances", 0) for r in results)
    errors = [r for r in results if r["error"]]
    for r in errors:
        console.print(f"[red]{r['package']}[/]: {r['error']}")
    console.print(f"{total} valid instances over {sum(1 for r in results if r.get('instances'))} packages")
    if errors:
        raise typer.Exit(1)


@tasks_app.command("list")
def tasks_list(as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False) -> None:
    """List the built task instances."""
    from impasse.tasks.build import all_instances

    insts = all_instances()
    if as_json:
        out.print_json(json.dumps([{"instance_id": i.instance_id, "package": i.package, "version": i.version,
                                    "operator": i.operator, "target_file": i.target_file,
                                    "FAIL_TO_PASS": len(i.FAIL_TO_PASS), "PASS_TO_PASS": len(i.PASS_TO_PASS),
                                    "runtime_deps": i.runtime_deps} for i in insts]))
        return
    table = Table(title=f"{len(insts)} task instances")
    for col in ("instance_id", "operator", "target", "F2P", "P2P", "deps"):
        table.add_column(col)
    for i in insts:
        table.add_row(i.instance_id, i.operator, f"{i.target_file}:{i.target_function}", str(len(i.FAIL_TO_PASS)),
                      str(len(i.PASS_TO_PASS)), ",".join(i.runtime_deps))
    out.print(table)
    if not insts:
        console.print("no tasks yet: run `impasse tasks build` (default suite) first")


def find_instance(instance_id: str):
    from impasse.tasks.build import all_instances

    insts = all_instances()
    exact = [i for i in insts if i.instance_id == instance_id]
    if exact:
        return exact[0]
    prefix = [i for i in insts if i.instance_id.startswith(instance_id)]
    if len(prefix) == 1:
        return prefix[0]
    hint = f"{len(prefix)} match that prefix" if prefix else "none matches"
    raise fail(f"unknown task {instance_id!r} ({hint}); see `impasse tasks list`")


@tasks_app.command("show")
def tasks_show(instance_id: str, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Show one instance: statement, patch, F2P/P2P."""
    inst = find_instance(instance_id)
    if as_json:
        out.print_json(inst.model_dump_json())
        return
    out.print(f"[bold]{inst.instance_id}[/]  ({inst.package} {inst.version}, operator {inst.operator})")
    out.print(f"target: {inst.target_file} :: {inst.target_function}    image: {inst.image}")
    out.print(f"FAIL_TO_PASS ({len(inst.FAIL_TO_PASS)}): " + ", ".join(inst.FAIL_TO_PASS[:5]) +
              (" ..." if len(inst.FAIL_TO_PASS) > 5 else ""))
    out.print(f"PASS_TO_PASS: {len(inst.PASS_TO_PASS)} tests    runtime deps: {', '.join(inst.runtime_deps) or '-'}")
    out.rule("problem statement")
    out.print(inst.problem_statement, markup=False)
    out.rule("bug patch (gold fix = reverse)")
    out.print(inst.patch, markup=False)


def _verify_one(instance_id: str) -> dict:
    from impasse.grade import verify_instance
    from impasse.sandbox.local import LocalBackend
    from impasse.tasks.build import all_instances

    inst = next(i for i in all_instances() if i.instance_id == instance_id)
    return verify_instance(LocalBackend(), inst)


@tasks_app.command("verify")
def tasks_verify(
    instance_ids: Annotated[list[str] | None, typer.Argument(help="Instances to check (default: all built)")] = None,
    jobs: Annotated[int, typer.Option(help="Instances checked in parallel")] = 2,
) -> None:
    """Re-check instances: the bug makes every FAIL_TO_PASS test fail, and the gold fix (the
    reverse patch) makes every FAIL_TO_PASS and PASS_TO_PASS test pass."""
    from impasse.tasks.build import all_instances

    ids = [find_instance(i).instance_id for i in instance_ids] if instance_ids else \
        [i.instance_id for i in all_instances()]
    if not ids:
        raise fail("no built tasks: run `impasse tasks build` first")
    results = []
    with progress() as bar, ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        task = bar.add_task("verifying", total=len(ids), status="")
        for fut in as_completed([pool.submit(_verify_one, i) for i in ids]):
            r = fut.result()
            results.append(r)
            bar.update(task, advance=1, status=("ok " if r["ok"] else "FAIL ") + r["instance_id"])
    bad = [r for r in results if not r["ok"]]
    for r in bad:
        console.print(f"[red]{r['instance_id']}[/]: bug fails F2P: {r['bug_fails_f2p']} {r['not_failing']}; "
                      f"gold resolves: {r['gold_resolves']} {r['p2p_failed_with_gold']}")
    out.print(f"{len(results) - len(bad)}/{len(results)} instances verified")
    if bad:
        raise typer.Exit(1)


# ------------------------------------------------------------------------------------- conditions

conditions_app = typer.Typer(help="The twelve blocker conditions (+ clean) and their cards.", no_args_is_help=True)
app.add_typer(conditions_app, name="conditions")
sandbox_app = typer.Typer(help="Look inside an episode sandbox with your own eyes.", no_args_is_help=True)
app.add_typer(sandbox_app, name="sandbox")


@conditions_app.command("list")
def conditions_list(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """List conditions with their class and summary."""
    from impasse.conditions.cards import load_cards

    cards = load_cards()
    if as_json:
        out.print_json(json.dumps([{"name": c.name, "class": c.cls, "summary": c.summary, "requires": c.requires}
                                   for c in cards.values()]))
        return
    table = Table(title="conditions")
    for col in ("name", "class", "summary"):
        table.add_column(col)
    for c in cards.values():
        table.add_row(c.name, c.cls, c.summary + (f" [only tasks with {c.requires}]" if c.requires else ""))
    out.print(table)


@conditions_app.command("show")
def conditions_show(name: str) -> None:
    """Print a blocker card (YAML)."""
    import yaml

    from impasse.conditions.cards import card

    try:
        c = card(name)
    except KeyError as e:
        raise fail(str(e).strip("'\"")) from e
    out.print(yaml.safe_dump(c.model_dump(by_alias=True), sort_keys=False, width=110), markup=False)


def _episode(instance_id: str, condition: str):
    from impasse.conditions.cards import card
    from impasse.conditions.episode import NotApplicable, open_episode
    from impasse.sandbox.local import LocalBackend
    from impasse.sandbox.oskit import SandboxError

    inst = find_instance(instance_id)
    try:
        card(condition)
        return open_episode(LocalBackend(), inst, condition)
    except (KeyError, NotApplicable, SandboxError, FileNotFoundError) as e:
        raise fail(str(e).strip("'\"")) from e


@sandbox_app.command("exec", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def sandbox_exec(
    instance_id: str,
    command: Annotated[list[str], typer.Argument(help="Command (after --), run by bash as the agent")],
    condition: Annotated[str, typer.Option(help="Condition to inject")] = "clean",
    restore_after: Annotated[int | None, typer.Option(help="Restore the environment after K commands")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds")] = 60.0,
) -> None:
    """Run CMD in a fresh episode exactly as the agent's bash tool would; exit with its exit code.

    Several commands separated by ';;' run in the same episode, one call each."""
    import shlex

    # One argument is a shell string (as the agent's bash tool gets it); several are an argv.
    text = command[0] if len(command) == 1 else shlex.join(command)
    calls = [c.strip() for c in text.split(";;") if c.strip()]
    code = 0
    with _episode(instance_id, condition) as sb:
        for k, cmd in enumerate(calls, 1):
            res = sb.exec(cmd, timeout=timeout)
            sys.stdout.write(res.stdout)
            sys.stderr.write(res.stderr)
            sys.stdout.flush()
            code = res.exit_code
            if restore_after is not None and k == restore_after:
                sb.restore()
                console.print(f"[dim]-- restored {condition} after {k} command(s) --[/]")
    raise typer.Exit(code)


@sandbox_app.command("shell")
def sandbox_shell(instance_id: str, condition: Annotated[str, typer.Option()] = "clean") -> None:
    """An interactive prompt: each line runs as one agent tool call. 'restore' clears the fault."""
    with _episode(instance_id, condition) as sb:
        console.print(f"episode {sb.id}: {condition} on {instance_id}. Lines run as the agent; "
                      "'restore' clears the fault, 'exit' ends.")
        while True:
            try:
                line = input("agent$ ")
            except EOFError:
                break
            if line.strip() in ("exit", "quit"):
                break
            if line.strip() == "restore":
                sb.restore()
                continue
            res = sb.exec(line, timeout=120)
            sys.stdout.write(res.output + ("" if res.output.endswith("\n") or not res.output else "\n"))
            console.print(f"[dim][exit {res.exit_code}][/]")


# -------------------------------------------------------------------------------------------- run

DEFAULT_AGENTS = "oracle,persistent,escalator,completion-biased,premature,reluctant"


@app.command("run")
def run_cmd(
    suite: Annotated[str, typer.Option(help="Suite whose tasks are used (built on demand)")] = "default",
    tasks: Annotated[str | None, typer.Option(help="Comma-separated instance ids (or unique prefixes)")] = None,
    conditions: Annotated[str, typer.Option(help="'all', names and/or classes, comma-separated")] = "all",
    interfaces: Annotated[str, typer.Option(help="Comma-separated: baseline,tool,monitor")] = "baseline,tool,monitor",
    agent: Annotated[str, typer.Option(help="Reference agents (comma-separated) or 'replay:FILE'")] = DEFAULT_AGENTS,
    model: Annotated[str | None, typer.Option(help="Model name at an OpenAI-compatible endpoint (replaces --agent)")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible base URL; key from $IMPASSE_API_KEY")] = None,
    jobs: Annotated[int, typer.Option(help="Episodes in parallel")] = 2,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Run directory (default runs/<timestamp>)")] = None,
    resume: Annotated[Path | None, typer.Option(help="Finish an interrupted run directory")] = None,
    limit: Annotated[int | None, typer.Option(help="At most N task instances")] = 3,
    per_package: Annotated[int, typer.Option(help="Instances per package from the suite")] = 1,
    step_limit: Annotated[int, typer.Option(help="Tool-call budget per episode")] = 80,
    restore: Annotated[bool, typer.Option(help="After an accepted escalation, restore the environment and continue")] = False,
    ticket_schema: Annotated[str, typer.Option(help="Ticket fields escalate_to_human asks for: impasse (with "
                                                    "progress) or paper (the study's fields)")] = "impasse",
) -> None:
    """Run agents on tasks x conditions x interfaces; every step is recorded and the run is resumable.

    With no arguments: 3 default-suite tasks x all 13 conditions x 3 interfaces x the 6 reference agents."""
    import time

    from impasse import run as runner
    from impasse.sandbox.oskit import SandboxError

    try:
        if resume:
            cfg, specs = runner.read_manifest(resume)
            run_dir = resume
        else:
            cfg = runner.RunConfig(suite=suite, tasks=[t for t in (tasks or "").split(",") if t], limit=limit,
                                   per_package=per_package, conditions=conditions,
                                   interfaces=[i.strip() for i in interfaces.split(",") if i.strip()],
                                   step_limit=step_limit, restore=restore, jobs=jobs,
                                   ticket_schema=ticket_schema)
            if model:
                cfg.model = {"model": model, "base_url": base_url}
            elif agent.startswith("replay:"):
                cfg.replay = str(Path(agent.split(":", 1)[1]).resolve())
            else:
                from impasse.agent.reference import PROFILES

                cfg.agents = [a.strip() for a in agent.split(",") if a.strip()]
                bad = [a for a in cfg.agents if a not in PROFILES]
                if bad:
                    raise ValueError(f"unknown reference agent(s) {bad}; profiles: {', '.join(PROFILES)}")
            from impasse.agent.tools import INTERFACES
            from impasse.conditions.cards import select

            if bad_if := [i for i in cfg.interfaces if i not in INTERFACES]:
                raise ValueError(f"unknown interface(s) {bad_if}; use {', '.join(INTERFACES)}")
            select(cfg.conditions)  # bad names fail here, before any building
            if not tasks:  # idempotent: builds what is missing, reuses the cache otherwise
                console.print(f"making sure the {cfg.suite!r} suite's tasks are built")
                tasks_build(packages=None, suite=cfg.suite, max_per_package=5, seed=0, jobs=jobs, force=False)
            specs = runner.plan(cfg)
            run_dir = out_dir or Path("runs") / time.strftime("%Y%m%d-%H%M%S")
            if (run_dir / "manifest.json").exists():
                raise ValueError(f"{run_dir} already holds a run; use --resume {run_dir} or another --out")
            runner.write_manifest(run_dir, cfg, specs)
            if out_dir is None:  # runs/latest always points at the newest default-location run
                latest = Path("runs") / "latest"
                if latest.is_symlink() or not latest.exists():
                    latest.unlink(missing_ok=True)
                    latest.symlink_to(run_dir.name)
    except (ValueError, FileNotFoundError, SandboxError) as e:
        raise fail(str(e)) from e
    label = "model" if cfg.model else ("replay" if cfg.replay else "reference agents (scripted, not model results)")
    console.print(f"run {run_dir}: {len(specs)} episodes with {label}, {cfg.jobs} in parallel")
    with progress() as bar:
        task = bar.add_task("episodes", total=len(specs), status="")

        def done(r: dict) -> None:
            bar.update(task, advance=1, status=f"{r['agent']} {r['interface']} {r['condition']}: {r['final_ending']}")

        results = runner.execute(run_dir, cfg, specs, done)
    _print_run_table(results)
    errors = [r for r in results if r["ending"] == "harness_error"]
    for r in errors[:5]:
        console.print(f"[red]harness error[/] {r['episode_id']}: {r.get('error')}")
    console.print(f"trajectories in {run_dir}/episodes; next: `impasse report {run_dir}`")
    if errors:
        raise typer.Exit(1)


def _print_run_table(results: list[dict]) -> None:
    from collections import Counter, defaultdict

    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in results:
        groups[(r["agent"], r["interface"])].append(r)
    table = Table(title="run summary (endings of the first phase)")
    for col in ("agent", "interface", "n", "completed", "escalated", "limit", "error", "resolved"):
        table.add_column(col, no_wrap=True)
    for (agent_name, interface), rs in sorted(groups.items()):
        c = Counter(r["ending"] for r in rs)
        table.add_row(agent_name.removeprefix("reference/"), interface, str(len(rs)), str(c["completed"]), str(c["escalated"]),
                      str(c["step_limit"]), str(c["error"] + c["harness_error"]),
                      str(sum(r["resolved"] for r in rs)))
    out.print(table)


# --------------------------------------------------------------------------------- annotate/report


@app.command("annotate")
def annotate_cmd(run_dir: Path) -> None:
    """Annotate every trajectory of a run: writes <episode>.annotation.json beside each one."""
    from impasse.report.report import annotate_run

    try:
        rows, problems = annotate_run(run_dir, write=True)
    except FileNotFoundError as e:
        raise fail(str(e)) from e
    for p in problems:
        console.print(f"[yellow]skipped[/] {p}")
    console.print(f"annotated {len(rows)} trajectories in {run_dir}")


@app.command("report")
def report_cmd(
    run_dir: Path,
    compare: Annotated[Path | None, typer.Option(help="A second run to compare against (paired by task/condition)")] = None,
    html: Annotated[Path | None, typer.Option(help="Write a self-contained HTML page here")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the impasse.report/1 JSON here ('-' = stdout)")] = None,
    judge_model: Annotated[str | None, typer.Option(help="Also score tickets with this LLM (OpenAI-compatible)")] = None,
    judge_base_url: Annotated[str | None, typer.Option(help="Base URL for --judge-model; key from $IMPASSE_API_KEY")] = None,
) -> None:
    """Annotate, aggregate the paper's metrics, compare interfaces with paired statistics."""
    from impasse.report.report import annotate_run, build, print_terminal, render_html

    try:
        rows, problems = annotate_run(run_dir, write=True)
        other = annotate_run(compare, write=True)[0] if compare else None
    except FileNotFoundError as e:
        raise fail(str(e)) from e
    for p in problems:
        console.print(f"[yellow]skipped[/] {p}")
    if not rows:
        raise fail(f"{run_dir}: no finished episodes to report on")
    if judge_model:
        from impasse.report.judging import judge_run_rows

        judge_run_rows(rows, judge_model, judge_base_url)
    report = build(rows, other, [str(run_dir)] + ([str(compare)] if compare else []), judge_model=judge_model)
    if json_out is not None:
        text = json.dumps(report, indent=1)
        if str(json_out) == "-":
            sys.stdout.write(text + "\n")
            return
        json_out.write_text(text)
        console.print(f"JSON report: {json_out}")
    print_terminal(report, out)
    if html is not None:
        html.write_text(render_html(report))
        console.print(f"HTML report: {html}")


def main() -> None:  # pragma: no cover - console script shim
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
