"""Per-episode setup+teardown and per-command overhead: Docker backend vs local backend, as
ratios measured in one run (same task, same commands, one after the other).

    python benchmarks/backend_overhead.py                       # both (root; engine via scripts/engine.sh)
    python benchmarks/backend_overhead.py --backend docker      # Docker only: no root needed
    DOCKER_HOST=unix:///var/run/docker.sock python benchmarks/backend_overhead.py --backend docker

With built tasks in the cache it uses the first one (its image layer + instance layer), else the
bare base image. Figures are printed (and written with --json), never asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import percentiles, show, timed  # noqa: E402


def _layers(use_task: bool) -> tuple[str, list[Path]]:
    if not use_task:
        return "base only", []
    from impasse.tasks.build import all_instances
    from impasse.tasks.image import load_image
    from impasse.tasks.layer import instance_layer

    insts = all_instances()
    if not insts:
        return "base only (no built task)", []
    inst = insts[0]
    image = load_image(inst.image)
    return inst.instance_id, [instance_layer(inst, image), image.layer]


def _backend(name: str):
    if name == "local":
        from impasse.sandbox.local import LocalBackend

        return LocalBackend()
    from impasse.sandbox.docker.sandbox import DockerBackend

    return DockerBackend(log=lambda m: print(m, file=sys.stderr))


def measure(name: str, layers: list[Path], episodes: int, commands: int) -> dict[str, dict[str, float]]:
    backend = _backend(name)
    backend.create(layers).close()  # warm: images built, caches filled

    def episode():
        backend.create(layers).close()

    out = {"setup+teardown": percentiles(timed(episode, episodes))}
    with backend.create(layers) as sb:
        for _ in range(3):
            sb.exec("true")
        out["exec true"] = percentiles(timed(lambda: sb.exec("true"), commands))
        out["exec python -c pass"] = percentiles(timed(lambda: sb.exec("python3 -c pass"), max(commands // 3, 5)))
        out["read_file"] = percentiles(timed(lambda: sb.read_file("/etc/passwd"), max(commands // 3, 5)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="local,docker", help="local, docker, or both (comma-separated)")
    ap.add_argument("--episodes", type=int, default=10)
    ap.add_argument("--commands", type=int, default=30)
    ap.add_argument("--no-task", action="store_true", help="measure on the bare base image")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    names = [n.strip() for n in args.backend.split(",") if n.strip()]
    if bad := [n for n in names if n not in ("local", "docker")]:
        sys.exit(f"--backend: unknown backend(s) {bad}; choose local, docker or local,docker")
    label, layers = _layers(not args.no_task)
    print(f"task: {label}; {args.episodes} episodes, {args.commands} commands per backend")
    results = {n: measure(n, layers, args.episodes, args.commands) for n in names}
    for n, rows in results.items():
        show(f"{n} backend", list(rows.items()))
    if {"local", "docker"} <= results.keys():
        print("\ndocker / local (median)")
        for key in results["local"]:
            ratio = results["docker"][key]["median"] / results["local"][key]["median"]
            print(f"  {key:<24} {ratio:6.1f}x")
    if args.json:
        args.json.write_text(json.dumps({"task": label, "results": results}, indent=2))


if __name__ == "__main__":
    main()
