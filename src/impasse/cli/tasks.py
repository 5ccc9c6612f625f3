"""``impasse tasks``: build and inspect repair tasks from real PyPI packages."""

from __future__ import annotations

import json
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Annotated

import typer
from rich.table import Table

from impasse.cli.common import console, fail, find_instance, out, progress

tasks_app = typer.Typer(help="Build and inspect repair tasks from real PyPI packages.", no_args_is_help=True)


def _build_one(spec_json: str, max_instances: int, seed: int, force: bool, backend: str = "local") -> dict:
    """Worker: one package (own process: the sandbox backend is per process)."""
    from impasse.sandbox.registry import get_backend
    from impasse.tasks.build import build_package
    from impasse.tasks.pypi import PackageError
    from impasse.tasks.suite import PackageSpec

    spec = PackageSpec.model_validate_json(spec_json)
    try:
        r = build_package(spec, get_backend(backend), max_instances=max_instances, seed=seed, force=force)
    except PackageError as e:
        return {"package": spec.name, "error": str(e)}
    return {"package": r.package, "version": r.version, "instances": len(r.instances), "candidates": r.candidates,
            "image_seconds": r.image_seconds, "validate_seconds": r.validate_seconds, "reused": r.reused, "error": ""}


@tasks_app.command("build")
def tasks_build(
    packages: Annotated[list[str] | None, typer.Argument(help="PKG or PKG==VERSION; any PyPI package with tests in its sdist")] = None,
    suite: Annotated[str | None, typer.Option(help="Build a whole suite ('default' or a .yaml path)")] = None,
    max_per_package: Annotated[int, typer.Option(min=1, help="Valid instances to keep per package")] = 5,
    seed: Annotated[int, typer.Option(help="Seed for choosing and applying mutations")] = 0,
    jobs: Annotated[int, typer.Option(min=1, help="Packages built in parallel")] = 2,
    force: Annotated[bool, typer.Option(help="Rebuild images and instances even if cached")] = False,
    backend: Annotated[str, typer.Option(help="Backend whose build environment builds the images")] = "local",
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
    build_specs(specs, max_per_package, seed, jobs, force, backend)


def build_specs(specs: list, max_per_package: int, seed: int, jobs: int, force: bool, backend: str) -> list[dict]:
    """Build these packages (``jobs`` at once), print the build table; exit 1 if any failed."""
    results = []
    with progress() as bar, ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        task = bar.add_task("building tasks", total=len(specs), status="")
        futures = {pool.submit(_build_one, s.model_dump_json(), max_per_package, seed, force, backend): s for s in specs}
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
    return results


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
    from impasse.sandbox.registry import get_backend
    from impasse.tasks.build import all_instances
    from impasse.tasks.lookup import find_instance as lookup

    return verify_instance(get_backend("local"), lookup(instance_id, all_instances()))


@tasks_app.command("verify")
def tasks_verify(
    instance_ids: Annotated[list[str] | None, typer.Argument(help="Instances to check (default: all built)")] = None,
    jobs: Annotated[int, typer.Option(min=1, help="Instances checked in parallel")] = 2,
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


