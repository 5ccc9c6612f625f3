"""``impasse tasks release``: freeze, export, import and verify task releases."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from impasse.cli.common import console, fail, out

USAGE = ("impasse tasks release NAME [--suite SET | --tasks IDS] [--out DIR] | release export NAME|PATH FILE.tar.gz "
         "| release import FILE.tar.gz [--sha256 HEX] | release verify NAME|PATH [--rebuild]")


def release_cmd(
    args: Annotated[list[str], typer.Argument(help="NAME to make a release; or: export NAME FILE.tar.gz; "
                                                   "import FILE.tar.gz; verify NAME|PATH")],
    suite: Annotated[str, typer.Option(help="Package set whose built tasks are frozen")] = "default",
    tasks: Annotated[str | None, typer.Option(help="Comma-separated instance ids (instead of a package set)")] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Where to write it (default: the cache's releases/)")] = None,
    sha256: Annotated[str | None, typer.Option("--sha256", help="import: refuse unless the archive's release.json "
                                                                  "has this sha256 (or its first 16+ hex digits), as "
                                                                  "export printed it")] = None,
    rebuild: Annotated[bool, typer.Option(help="verify: also build every image and instance layer again from PyPI "
                                               "in a scratch cache and compare digests (installs nothing)")] = False,
) -> None:
    """Frozen task releases: instances (SWE-bench JSONL) + content digests of every layer; an exported
    archive carries the task images and instance layers too, and import checks them all first."""
    from impasse.tasks import release as rel

    try:
        if args[0] == "export" and len(args) == 3:
            rel.export(rel.resolve(args[1]), Path(args[2]))
            out.print(f"exported {args[1]} to {args[2]}; release.json sha256 {rel.sha256_of(rel.resolve(args[1]))} "
                      "(give it to `import --sha256` on the receiving machine)", markup=False)
        elif args[0] == "import" and len(args) == 2:
            dest, plan = rel.import_archive(Path(args[1]), sha256)
            out.print(f"imported release {plan.name} into {dest}: every digest checked; {len(plan.install)} layers "
                      f"installed, {len(plan.replace)} replaced (their content differed from the release), "
                      f"{plan.kept} already here and identical", markup=False)
        elif args[0] == "verify" and len(args) == 2:
            _verify(rel.resolve(args[1]))
            if rebuild:
                _rebuild(rel.resolve(args[1]).resolve())
        elif len(args) == 1:
            path = rel.make_release(args[0], _chosen(suite, tasks), out_dir, suite if not tasks else "")
            doc = rel.load(path)
            out.print(f"release {args[0]}: {doc['instance_count']} instances, {len(doc['images'])} image layers, "
                      f"{len(doc['layers'])} instance layers -> {path}")
        else:
            raise fail(f"unexpected arguments {args}; usage: {USAGE}")
    except (ValueError, FileNotFoundError) as e:
        raise fail(str(e)) from e


def _chosen(suite: str, tasks: str | None) -> list:
    from impasse.tasks.build import all_instances
    from impasse.tasks.lookup import find_instance
    from impasse.tasks.names import canonical
    from impasse.tasks.suite import load_suite

    insts = all_instances()
    if tasks:
        return [find_instance(t.strip(), insts) for t in tasks.split(",") if t.strip()]
    wanted = {(canonical(p.name), p.version) for p in load_suite(suite).packages}
    return [i for i in insts if (canonical(i.package), i.package_version) in wanted]


def _verify(path: Path) -> None:
    from impasse.tasks import release as rel

    bad = rel.verify(path)
    for m in bad:
        console.print(f"[red]differs:[/] {m}", soft_wrap=True)
    if bad:
        raise typer.Exit(1)
    out.print(f"release {path}: every layer matches")


def _rebuild(path: Path) -> None:
    """Rebuild the release's layers in a scratch cache beside this one (removed afterwards): the
    builds are reproducible, so each digest must come out as the release has it."""
    import os

    from impasse.sandbox.registry import get_backend
    from impasse.tasks import release as rel
    from impasse.tasks.image import Image

    doc = rel.load(path)
    cache = rel.Roots.cache()
    specs = {ref: Image.model_validate_json((cache.image(ref) / "image.json").read_text()).spec
             for ref in doc["images"]}  # verified above: the release's own image.json files
    backend = get_backend("local")  # its base root filesystem stays this cache's
    before = os.environ.get("IMPASSE_CACHE")
    with rel.staging_area("rebuild-") as scratch:
        os.environ["IMPASSE_CACHE"] = str(scratch)  # this process only: builds land in the scratch cache
        try:
            images, layers = rel.rebuilt_digests(rel.instances(path), specs, backend, log=console.print)
        finally:
            if before is None:
                os.environ.pop("IMPASSE_CACHE", None)
            else:
                os.environ["IMPASSE_CACHE"] = before
    bad = rel.compare(doc, images, layers)
    for m in bad:
        console.print(f"[red]rebuild differs:[/] {m}", soft_wrap=True)
    if bad:
        raise typer.Exit(1)
    out.print(f"rebuilt {len(images)} task images and {len(layers)} instance layers from PyPI: every digest is the "
              "release's")
