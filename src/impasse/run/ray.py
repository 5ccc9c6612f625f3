"""The ``ray`` executor: every episode is a Ray task on any node of a cluster.

Guarantees (the same as the local pool's):

- **One writer.** The run directory is owned by one process, a :class:`TrajectoryServer` actor
  pinned to the driver's node. Workers never touch it: each event an episode records goes to that
  actor, and the episode waits for the answer (the event is written and fsync'd) before its next
  tool call. Prior trajectories (for ``--resume``) are read through the actor too, so a worker
  needs no shared filesystem with the driver.
- **No retries by Ray.** Episodes run with ``max_retries=0``; a task lost with its worker or node
  is reported as a harness error (``error_kind: worker_lost``) and its trajectory stays as it was,
  interrupted, so ``--resume`` rebuilds and finishes it. The actor is owned by the driver, so a
  killed driver takes the actor (and its file locks) with it and a resumed run starts clean.
- **Node-local sandboxes.** Sandboxes live on the worker's node (the sandbox backend does that).
  Task images are looked up in the node's cache, copied from ``image_cache`` (a shared directory
  holding a task cache's ``images/``) when given, or else built there once, under the same
  per-package file lock as ``impasse tasks build``.

Per-node concurrency is Ray's resource accounting: each episode asks for ``cpus_per_episode``
CPUs (default 1) and ``memory_gb_per_episode`` GiB of memory (default 2), so a node runs at most
``min(CPUs / cpus, memory / memory_gb)`` episodes at once. Options come from
``RunConfig.executor_options``: ``address`` (``--ray-address``; else ``$RAY_ADDRESS``; else a
private single-node cluster), ``cpus_per_episode``, ``memory_gb_per_episode``, ``image_cache``,
``resources`` (custom Ray resources each episode needs, e.g. ``{"impasse": 1}`` to run episodes
only on the nodes started with that resource).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from impasse.run.config import RunConfig
from impasse.run.executor import Guard, LocalPool, OnDone, RunOutcome, episode_job, error_row
from impasse.store.rundir import RunDir
from impasse.store.sink import LocalStore
from impasse.store.trajectory import Trajectory
from impasse.suites.base import EpisodeSpec

DEFAULTS = {"cpus_per_episode": 1.0, "memory_gb_per_episode": 2.0}


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise RuntimeError("--executor ray needs Ray: pip install 'impasse[ray]'") from e
    return ray


# ---------------------------------------------------------------------------------- the one writer


class TrajectoryServer:
    """Owns the run directory (runs as a Ray actor on the driver's node). Threaded: appends to
    different episodes do not wait for each other; one episode's appends are sequential because
    its worker waits for each answer."""

    def __init__(self, run_dir: str) -> None:
        self.rd = RunDir(Path(run_dir))
        self.store = LocalStore(self.rd)
        self.writers: dict[str, Any] = {}

    def prior(self, episode_id: str) -> Trajectory | None:
        return self.store.prior(episode_id)

    def open(self, episode_id: str, header: dict[str, Any]) -> None:
        # A second open of a live episode fails on the trajectory's file lock: never two writers.
        self.writers[episode_id] = self.store.open_writer(episode_id, header)

    def append(self, episode_id: str, event: dict[str, Any]) -> None:
        self.writers[episode_id].append(event)

    def extend(self, episode_id: str, events: list[dict[str, Any]]) -> None:
        self.writers[episode_id].extend(events)

    def close(self, episode_id: str) -> None:
        w = self.writers.pop(episode_id, None)
        if w is not None:
            w.close()

    def read(self, episode_id: str) -> Trajectory:
        return self.store.read(episode_id)

    def instances(self) -> bytes:
        return self.rd.instances.read_bytes() if self.rd.instances.exists() else b""


class RemoteWriter:
    """``TrajectoryWriter``'s API over the actor: ``append`` blocks until the event is fsync'd."""

    def __init__(self, server: Any, episode_id: str) -> None:
        self.server, self.episode_id = server, episode_id

    def append(self, event: dict[str, Any]) -> None:
        _ray().get(self.server.append.remote(self.episode_id, event))

    def extend(self, events: list[dict[str, Any]]) -> None:
        _ray().get(self.server.extend.remote(self.episode_id, events))

    def close(self) -> None:
        _ray().get(self.server.close.remote(self.episode_id))


class RemoteStore:
    """A :class:`~impasse.store.sink.TrajectoryStore` whose run directory is the actor's."""

    def __init__(self, server: Any) -> None:
        self.server = server

    def prior(self, episode_id: str) -> Trajectory | None:
        return _ray().get(self.server.prior.remote(episode_id))

    def open_writer(self, episode_id: str, header: dict[str, Any]) -> RemoteWriter:
        _ray().get(self.server.open.remote(episode_id, header))
        return RemoteWriter(self.server, episode_id)

    def read(self, episode_id: str) -> Trajectory:
        return _ray().get(self.server.read.remote(episode_id))


# ---------------------------------------------------------------------------------- on a worker


def node_run_dir(run_key: str, instances: bytes, aliases: dict[str, str] | None = None) -> RunDir:
    """The worker node's shadow of the run: the run's pinned instances and a grade cache, on the
    node's own disk (trajectories never go here). ``aliases`` maps a pinned image ref to this node's
    equivalent build of it (see :func:`ensure_image`); they are kept per node and applied to every
    instance row, under a lock, so concurrent episodes never see a row without a known alias."""
    import fcntl
    import json

    from impasse import paths

    rd = RunDir(paths.cache_root() / "ray-runs" / run_key)
    rd.path.mkdir(parents=True, exist_ok=True)
    known = rd.path / "image-aliases.json"
    with open(rd.path / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        table = json.loads(known.read_text()) if known.exists() else {}
        if aliases and not aliases.items() <= table.items():
            table.update(aliases)
            _replace(known, json.dumps(table, sort_keys=True).encode())
        want = with_aliases(instances, table)
        if want and not (rd.instances.exists() and rd.instances.read_bytes() == want):
            _replace(rd.instances, want)
    return rd


def with_aliases(instances: bytes, table: dict[str, str]) -> bytes:
    """The instance rows (JSON lines) with every pinned image ref in ``table`` replaced by its alias."""
    import json

    if not table:
        return instances
    rows = [json.loads(line) for line in instances.decode().splitlines() if line.strip()]
    for row in rows:
        if "image" in row:
            row["image"] = table.get(row["image"], row["image"])
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _replace(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def pinned_facts(image: Any) -> dict[str, Any]:
    """What makes two builds of a task image interchangeable for an episode: the package spec,
    the installed distributions (pip freeze), and the source and test files. Builds are not
    bit-reproducible (timestamps in bytecode), so the content digest cannot be the test."""
    return {"spec": image.spec.model_dump(mode="json"), "freeze": sorted(image.freeze),
            "source_files": sorted(image.source_files), "test_files": sorted(image.test_files)}


def ensure_image(ref: str, package: str, version: str, packages: str, image_cache: str | None,
                 pinned: dict[str, Any] | None = None) -> str:
    """Make the task image ``ref`` available on this node and return the ref to run: ``ref``
    itself when it is here or in the shared ``image_cache`` (copied), else a build made here,
    once per node (under the per-package build lock), accepted when its :func:`pinned_facts`
    equal ``pinned`` (the driver's record of the pinned build)."""
    import fcntl

    from impasse import paths
    from impasse.tasks.image import build_image, load_image

    if load_image(ref) is not None:
        return ref
    paths.tasks_dir().mkdir(parents=True, exist_ok=True)
    key, _, build = ref.partition("@")
    with open(paths.tasks_dir() / f".{package}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if load_image(ref) is not None:
            return ref
        src = Path(image_cache) / "images" / key / (build or "current") if image_cache else None
        if src is not None and (src / "image.json").exists():
            _copy_build(src, key, build)
            if load_image(ref) is not None:
                return ref
            here = None
        else:
            here = load_image(key)  # a build made here earlier (by another episode) is reused
            if here is None or pinned is None or pinned_facts(here) != pinned:
                from impasse.sandbox.registry import get_backend
                from impasse.tasks.suite import spec_for

                here = build_image(spec_for(package, version, packages), get_backend("local"))
    if here is not None and (here.ref == ref or (pinned is not None and pinned_facts(here) == pinned)):
        return here.ref
    raise FileNotFoundError(f"task image {ref} is not on this node and building {package}=={version} here gave "
                            f"a different build (other installed versions or files); give the executor a shared "
                            f"copy of the run's images (executor_options image_cache=DIR holding images/)")


def _copy_build(src: Path, key: str, build: str) -> None:
    from impasse import paths

    dest = paths.images_dir() / key / src.resolve().name
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=paths.images_dir(), prefix=".copy-"))
    shutil.copytree(src.resolve(), tmp / "b", symlinks=True)
    os.replace(tmp / "b", dest)
    tmp.rmdir()
    if not build:
        (paths.images_dir() / key / "current").unlink(missing_ok=True)
        (paths.images_dir() / key / "current").symlink_to(dest.name)


def ray_episode(spec: dict[str, Any], cfg_json: str, run_key: str, instances: bytes, server: Any,
                pinned: dict[str, Any] | None = None) -> dict[str, Any]:
    """One episode as a Ray task, of any suite: the node's shadow run directory, the task image
    the suite says the episode needs (if any), then the episode with its trajectory streamed to
    the run's writer."""
    from impasse.env.registry import SUITES

    cfg = RunConfig.model_validate_json(cfg_json)
    s = EpisodeSpec(**spec)
    try:
        rd = node_run_dir(run_key, instances)
        need = SUITES.get(cfg.suite).image_of(rd, s.instance_id)
        if need is not None:
            ref, package, version = need
            use = ensure_image(ref, package, version, cfg.packages, cfg.executor_options.get("image_cache"),
                               (pinned or {}).get(ref))
            if use != ref:
                rd = node_run_dir(run_key, instances, {ref: use})
    except Exception as e:  # noqa: BLE001 - reported; the episode has not started, --resume reruns it
        return error_row(s, f"{type(e).__name__}: {e}", "harness")
    return episode_job(spec, cfg_json, str(rd.path), RemoteStore(server))


def pinned_images(instances: bytes) -> dict[str, dict[str, Any]]:
    """The driver's facts about every image the run pins (those its own cache holds)."""
    import json

    from impasse.tasks.image import load_image

    refs = {json.loads(line).get("image") for line in instances.decode().splitlines() if line.strip()}
    return {ref: pinned_facts(img) for ref in sorted(r for r in refs if r) if (img := load_image(ref)) is not None}


# ---------------------------------------------------------------------------------- the driver


class RayExecutor:
    name = "ray"

    def run(self, rd: RunDir, cfg: RunConfig, specs: list[EpisodeSpec], on_done: OnDone, guard: Guard) -> RunOutcome:
        ray = _ray()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        opts = {**DEFAULTS, **cfg.executor_options}
        address = opts.get("address") or os.environ.get("RAY_ADDRESS")
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False,
                 include_dashboard=False if address is None else None)
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        server = (ray.remote(num_cpus=0, max_concurrency=64)(TrajectoryServer)
                  .options(scheduling_strategy=here).remote(str(rd.path.resolve())))
        instances = ray.get(server.instances.remote())
        run_key = hashlib.sha256(str(rd.path.resolve()).encode()).hexdigest()[:16]
        task = ray.remote(ray_episode).options(num_cpus=float(opts["cpus_per_episode"]),
                                               memory=int(float(opts["memory_gb_per_episode"]) * 2**30),
                                               resources=dict(opts.get("resources") or {}), max_retries=0)
        slots = int(ray.cluster_resources().get("CPU", 1) // float(opts["cpus_per_episode"]))
        cap = 2 * max(1, slots)  # enough queued to keep every node busy; the Guard can still stop the rest
        cfg_json, inst_ref, pinned = cfg.model_dump_json(), ray.put(instances), ray.put(pinned_images(instances))
        out, queue, running = RunOutcome(), list(reversed(specs)), {}
        while queue or running:
            while queue and len(running) < cap and out.paused is None:
                s = queue.pop()
                running[task.remote(asdict(s), cfg_json, run_key, inst_ref, server, pinned)] = s
            done, _ = ray.wait(list(running), num_returns=1)
            for ref in done:
                LocalPool._done(self._result(ray, ref, running.pop(ref), server), out, on_done, guard)
            if out.paused is not None:
                queue.clear()  # let the running ones finish; nothing new starts
        ray.kill(server)
        return out

    @staticmethod
    def _result(ray: Any, ref: Any, s: EpisodeSpec, server: Any) -> dict[str, Any]:
        try:
            return ray.get(ref)
        except ray.exceptions.RayError as e:  # the worker or its node died: the trajectory stays resumable
            ray.get(server.close.remote(s.episode_id))
            return error_row(s, f"worker lost ({type(e).__name__}); --resume finishes the episode", "worker_lost")
