"""The ``ray`` executor: every episode runs in one of a fixed set of slots across a Ray cluster.

Guarantees (the same as the local pool's):

- **Honest slots.** A slot is a Ray actor that reserves ``cpus_per_episode`` CPUs and
  ``memory_gb_per_episode`` GiB for its whole life and runs one episode at a time. Ray lends a
  *task's* CPU to others while the task waits in ``ray.get`` (every recorded event waits so),
  which let 4 episodes run on 2 CPUs; an actor keeps its reservation while it waits, so a node
  never runs more episodes than ``min(CPUs / cpus, memory / memory_gb)``. The pool grows when a
  node joins and drops the slots of a node that died.
- **A private cluster unless told.** Without ``--ray-address`` the executor starts its own
  one-node cluster (``--jobs`` slots, a token of its own so nothing else can join it), never a
  cluster someone else started on the machine.
- **One writer per trajectory.** The run directory is owned by :class:`TrajectoryServer` actors
  pinned to the driver's node (``writers`` of them; an episode always goes to the one its id
  hashes to). Workers never touch the directory: each event goes to the writer and the episode
  waits for the answer (written and fsync'd) before its next tool call. Prior trajectories (for
  ``--resume``) are read through the writer too, so a worker needs no shared filesystem.
- **No retries by Ray.** A slot lost with its worker or node is reported as a harness error
  (``error_kind: worker_lost``) and its trajectory stays as it was, interrupted, so ``--resume``
  rebuilds and finishes it. The writers are owned by the driver: a killed driver takes them (and
  their file locks) with it and a resumed run starts clean.
- **Node-local sandboxes and images.** Task images are looked up in the node's cache, copied from
  ``image_cache`` (a shared directory holding a task cache's ``images/``) when given, or else built
  there once under the per-package build lock. A node's own build stands in for the pinned one
  only when their :func:`pinned_facts` are equal, and every stand-in is recorded in the run
  directory (``stand-ins.jsonl``: node, both refs, what was compared).

Options come from ``RunConfig.executor_options``: ``address`` (``--ray-address``),
``cpus_per_episode``, ``memory_gb_per_episode``, ``image_cache``, ``resources`` (custom Ray
resources each slot needs, e.g. ``{"impasse": 1}``), ``writers``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from impasse.run.config import RunConfig
from impasse.run.executor import Guard, LocalPool, OnDone, RunOutcome, episode_job, error_row
from impasse.store.rundir import RunDir
from impasse.store.sink import LocalStore
from impasse.store.trajectory import Trajectory
from impasse.suites.base import EpisodeSpec

DEFAULTS = {"cpus_per_episode": 1.0, "memory_gb_per_episode": 2.0, "writers": 2}
STAND_INS = "stand-ins.jsonl"
"""Every node build that stood in for a pinned image in this run, with what was compared."""


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
        self.opened_ids: set[str] = set()

    def prior(self, episode_id: str) -> Trajectory | None:
        return self.store.prior(episode_id)

    def open(self, episode_id: str, header: dict[str, Any]) -> None:
        # A second open of a live episode fails on the trajectory's file lock: never two writers.
        self.opened_ids.add(episode_id)
        self.writers[episode_id] = self.store.open_writer(episode_id, header)

    def opened(self, episode_id: str) -> bool:
        """Whether the episode opened its trajectory in this run (a slot that died before it did
        can give the episode to another slot: nothing was written)."""
        return episode_id in self.opened_ids

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

    def stand_in(self, record: dict[str, Any]) -> None:
        """Record a node build standing in for a pinned one (once per node and ref; durable)."""
        import json

        path = self.rd.path / STAND_INS
        seen = path.read_text().splitlines() if path.exists() else []
        key = (record["node"], record["pinned"])
        if any((r := json.loads(line))["node"] == key[0] and r["pinned"] == key[1] for line in seen if line):
            return
        with open(path, "a") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())


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


def writer_for(episode_id: str, n: int) -> int:
    """Which of ``n`` writers owns an episode: a pure function of its id, so a resumed run (with
    the same ``writers``) and every worker agree without asking."""
    return int(hashlib.sha256(episode_id.encode()).hexdigest()[:8], 16) % n


class RemoteStore:
    """A :class:`~impasse.store.sink.TrajectoryStore` whose run directory is the writers'."""

    def __init__(self, servers: list[Any]) -> None:
        self.servers = servers

    def _of(self, episode_id: str) -> Any:
        return self.servers[writer_for(episode_id, len(self.servers))]

    def prior(self, episode_id: str) -> Trajectory | None:
        return _ray().get(self._of(episode_id).prior.remote(episode_id))

    def open_writer(self, episode_id: str, header: dict[str, Any]) -> RemoteWriter:
        server = self._of(episode_id)
        _ray().get(server.open.remote(episode_id, header))
        return RemoteWriter(server, episode_id)

    def read(self, episode_id: str) -> Trajectory:
        return _ray().get(self._of(episode_id).read.remote(episode_id))


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
    the installed distributions (pip freeze), the content of every source and test file, the
    clean code's test results and the interpreter (its version and its binary). Builds are not
    bit-reproducible (timestamps in bytecode), so the layer's digest cannot be the test."""
    from impasse.tasks.digest import file_digest

    ws = image.layer / "workspace"
    repo = ws / "repo"
    files = {f: file_digest(repo / f) if (repo / f).is_file() else None
             for f in sorted({*image.source_files, *image.test_files})}
    cfg = ws / ".venv" / "pyvenv.cfg"
    version = next((ln.split("=", 1)[1].strip() for ln in cfg.read_text().splitlines()
                    if ln.split("=", 1)[0].strip() == "version"), None) if cfg.exists() else None
    binary = ws / ".venv" / "bin" / "python3"
    return {"spec": image.spec.model_dump(mode="json"), "freeze": sorted(image.freeze), "files": files,
            "clean_tests": dict(sorted(image.baseline.items())),
            "python": {"version": version, "binary": file_digest(binary) if binary.is_file() else None}}


def differing(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The facts on which two builds differ, each with its first difference (for the refusal)."""
    out = []
    for k in sorted(set(a) | set(b)):
        x, y = a.get(k), b.get(k)
        if x == y:
            continue
        if isinstance(x, dict) and isinstance(y, dict):
            first = next(i for i in sorted(set(x) | set(y)) if x.get(i) != y.get(i))
            out.append(f"{k} ({first}: {x.get(first)!r} here, {y.get(first)!r} pinned)")
        elif isinstance(x, list) and isinstance(y, list):
            out.append(f"{k} (only here: {sorted(set(x) - set(y))[:3]}; only pinned: {sorted(set(y) - set(x))[:3]})")
        else:
            out.append(k)
    return out


def ensure_image(ref: str, package: str, version: str, packages: str, image_cache: str | None,
                 pinned: dict[str, Any] | None = None) -> tuple[str, dict[str, Any] | None]:
    """Make the task image ``ref`` available on this node. -> (the ref to run, the stand-in
    record or None): ``ref`` itself when it is here or in the shared ``image_cache`` (copied),
    else a build made here, once per node (under the per-package build lock), accepted only when
    its :func:`pinned_facts` equal ``pinned`` (the driver's record of the pinned build)."""
    import fcntl

    from impasse import paths
    from impasse.tasks.image import build_image, load_image

    if load_image(ref) is not None:
        return ref, None
    paths.tasks_dir().mkdir(parents=True, exist_ok=True)
    key, _, build = ref.partition("@")
    with open(paths.tasks_dir() / f".{package}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if load_image(ref) is not None:
            return ref, None
        src = Path(image_cache) / "images" / key / (build or "current") if image_cache else None
        if src is not None and (src / "image.json").exists():
            _copy_build(src, key, build)
            if load_image(ref) is not None:
                return ref, None
            here = None
        else:
            here = load_image(key)  # a build made here earlier (by another episode) is reused
            if here is None or pinned is None or pinned_facts(here) != pinned:
                from impasse.sandbox.registry import get_backend
                from impasse.tasks.suite import spec_for

                here = build_image(spec_for(package, version, packages), get_backend("local"))
    if here is not None and here.ref == ref:
        return ref, None
    if here is not None and pinned is not None:
        facts = pinned_facts(here)
        if facts == pinned:
            return here.ref, stand_in_record(ref, here.ref, facts)
        why = "; ".join(differing(facts, pinned))
    else:
        why = "the driver has no record of the pinned build" if here is not None else "no build"
    raise FileNotFoundError(f"task image {ref} is not on this node and building {package}=={version} here gave "
                            f"a different build ({why}); give the executor a shared copy of the run's images "
                            f"(executor_options image_cache=DIR holding images/)")


def stand_in_record(pinned: str, here: str, facts: dict[str, Any]) -> dict[str, Any]:
    """What the run directory keeps about a stand-in: where, for what, and a digest of each
    compared fact (equal on both sides by construction)."""
    import json

    node = _ray().get_runtime_context().get_node_id() if _ray().is_initialized() else os.uname().nodename
    return {"node": node, "host": os.uname().nodename, "pinned": pinned, "stand_in": here,
            "compared": {k: hashlib.sha256(json.dumps(v, sort_keys=True).encode()).hexdigest()[:16]
                         for k, v in sorted(facts.items())},
            "python": facts["python"]["version"], "files": len(facts["files"]), "clean_tests": len(facts["clean_tests"])}


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


def ray_episode(spec: dict[str, Any], cfg_json: str, run_key: str, instances: bytes, servers: list[Any],
                pinned: dict[str, Any] | None = None) -> dict[str, Any]:
    """One episode in a slot, of any suite: the node's shadow run directory, the task image the
    suite says the episode needs (if any; a stand-in is recorded with the run), then the episode
    with its trajectory streamed to its writer."""
    from impasse.env.registry import SUITES

    cfg = RunConfig.model_validate_json(cfg_json)
    s = EpisodeSpec(**spec)
    try:
        rd = node_run_dir(run_key, instances)
        need = SUITES.get(cfg.suite).image_of(rd, s.instance_id)
        if need is not None:
            ref, package, version = need
            use, record = ensure_image(ref, package, version, cfg.packages, cfg.executor_options.get("image_cache"),
                                       (pinned or {}).get(ref))
            if record is not None:
                _ray().get(servers[0].stand_in.remote(record))
            if use != ref:
                rd = node_run_dir(run_key, instances, {ref: use})
    except Exception as e:  # noqa: BLE001 - reported; the episode has not started, --resume reruns it
        return error_row(s, f"{type(e).__name__}: {e}", "harness")
    return episode_job(spec, cfg_json, str(rd.path), RemoteStore(servers))


class EpisodeSlot:
    """One slot (a Ray actor): holds its CPUs and memory for its life, one episode at a time."""

    def run(self, *args: Any) -> dict[str, Any]:
        return ray_episode(*args)


def pinned_images(instances: bytes) -> dict[str, dict[str, Any]]:
    """The driver's facts about every image the run pins (those its own cache holds)."""
    import json

    from impasse.tasks.image import load_image

    refs = {json.loads(line).get("image") for line in instances.decode().splitlines() if line.strip()}
    return {ref: pinned_facts(img) for ref in sorted(r for r in refs if r) if (img := load_image(ref)) is not None}


# ---------------------------------------------------------------------------------- the driver


def slots_of(resources: dict[str, float], need: dict[str, float]) -> int:
    """How many slots a node holds: the fewest any resource a slot asks for allows."""
    return min((int(resources.get(r, 0.0) // q) for r, q in need.items() if q > 0), default=0)


def slot_needs(opts: dict[str, Any]) -> dict[str, float]:
    """What one slot reserves, in Ray's resource names."""
    return {"CPU": float(opts["cpus_per_episode"]), "memory": float(opts["memory_gb_per_episode"]) * 2**30,
            **{k: float(v) for k, v in dict(opts.get("resources") or {}).items()}}


class SlotPool:
    """One slot actor per slot the live nodes hold: grows when a node joins, forgets the slots of
    a dead one. A slot is idle (``ready``), being created (``starting``) or running an episode
    (``busy``: the result's ref -> slot, spec)."""

    def __init__(self, ray: Any, need: dict[str, float], make: Any) -> None:
        self.ray, self.need, self.make = ray, need, make
        self.ready: list[Any] = []
        self.starting: dict[Any, Any] = {}
        self.busy: dict[Any, tuple[Any, EpisodeSpec]] = {}

    def capacity(self) -> int:
        return sum(slots_of(n.get("Resources", {}), self.need) for n in self.ray.nodes() if n.get("Alive"))

    def refresh(self) -> None:
        for _ in range(self.capacity() - len(self.ready) - len(self.starting) - len(self.busy)):
            actor = self.make()
            self.starting[actor.__ray_ready__.remote()] = actor

    def pending(self) -> list[Any]:
        return [*self.busy, *self.starting]

    def started(self, ref: Any) -> None:
        """A slot's creation finished (or failed: a node died under it; it is forgotten)."""
        actor = self.starting.pop(ref)
        try:
            self.ray.get(ref)
        except self.ray.exceptions.RayError:
            return
        self.ready.append(actor)


class RayExecutor:
    name = "ray"

    def describe(self, cfg: RunConfig) -> str:
        opts = {**DEFAULTS, **cfg.executor_options}
        each = f"each holding {opts['cpus_per_episode']:g} CPU and {opts['memory_gb_per_episode']:g} GiB)"
        if opts.get("address"):
            return f"as many at once as the Ray cluster at {opts['address']} has slots ({each}"
        return f"{cfg.jobs} in parallel (a private Ray cluster, {each}"

    def run(self, rd: RunDir, cfg: RunConfig, specs: list[EpisodeSpec], on_done: OnDone, guard: Guard) -> RunOutcome:
        ray = _ray()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from impasse.run.config import ledger_of

        # every slot books into the driver's ledger (episodes run in per-node run directories): the
        # ceilings and rate buckets are the run's on every node that sees this path (one machine, or
        # a shared filesystem); a node without it keeps its own, so its calls escape them
        cfg = cfg.model_copy(update={"ledger": cfg.ledger or str(ledger_of(cfg, rd).resolve())})
        opts = {**DEFAULTS, **cfg.executor_options}
        private = connect(ray, opts.get("address"), cfg.jobs, float(opts["cpus_per_episode"]))
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        servers = [ray.remote(num_cpus=0, max_concurrency=64)(TrajectoryServer).options(scheduling_strategy=here)
                   .remote(str(rd.path.resolve())) for _ in range(int(opts["writers"]))]
        instances = ray.get(servers[0].instances.remote())
        run_key = hashlib.sha256(str(rd.path.resolve()).encode()).hexdigest()[:16]
        need = slot_needs(opts)
        slot = ray.remote(EpisodeSlot).options(num_cpus=need["CPU"], memory=int(need["memory"]),
                                               resources={k: v for k, v in need.items() if k not in ("CPU", "memory")},
                                               max_restarts=0, max_task_retries=0)
        pool = SlotPool(ray, need, slot.remote)
        args = (cfg.model_dump_json(), run_key, ray.put(instances), servers, ray.put(pinned_images(instances)))
        out, queue = RunOutcome(), list(reversed(specs))
        try:
            while queue or pool.busy:
                pool.refresh()
                while queue and pool.ready and out.paused is None:
                    s = queue.pop()
                    if guard.skips(s):  # its model's own ceiling is reached
                        continue
                    actor = pool.ready.pop()
                    pool.busy[actor.run.remote(asdict(s), *args)] = (actor, s)
                if out.paused is not None:
                    queue.clear()  # let the running ones finish; nothing new starts
                if not pool.pending():
                    time.sleep(1.0)  # no node can hold a slot yet: wait for one to join
                    continue
                done, _ = ray.wait(pool.pending(), num_returns=1, timeout=5.0)
                for ref in done:
                    if ref in pool.starting:
                        pool.started(ref)
                        continue
                    actor, s = pool.busy.pop(ref)
                    row = self._result(ray, ref, s, servers)
                    if row is None:
                        queue.append(s)  # its slot died before the episode opened its trajectory
                        continue
                    pool.ready.append(actor)
                    LocalPool._done(row, out, on_done, guard)
        finally:
            for server in servers:
                ray.kill(server)
            if private:
                ray.shutdown()
        out.paused = out.paused or guard.model_pauses()
        return out

    @staticmethod
    def _result(ray: Any, ref: Any, s: EpisodeSpec, servers: list[Any]) -> dict[str, Any] | None:
        try:
            return ray.get(ref)
        except ray.exceptions.RayError as e:  # the slot's worker or node died: the trajectory stays resumable
            server = servers[writer_for(s.episode_id, len(servers))]
            if not ray.get(server.opened.remote(s.episode_id)):
                return None
            ray.get(server.close.remote(s.episode_id))
            return error_row(s, f"worker lost ({type(e).__name__}); --resume finishes the episode", "worker_lost")


def connect(ray: Any, address: str | None, jobs: int, cpus_per_episode: float) -> bool:
    """Join the cluster at ``address``, or start a private one (``jobs`` slots' CPUs, its own
    token: nothing else on the machine can join it, and it never joins theirs). -> whether the
    cluster is private (the run shuts it down)."""
    if ray.is_initialized():
        return False
    if address:
        try:
            ray.init(address=address, log_to_driver=False)
        except Exception as e:  # noqa: BLE001 - Ray raises several kinds; all mean the same to the user
            raise ValueError(f"cannot join the Ray cluster at {address}: {e}. A cluster started with token "
                             "authentication needs its token here too: RAY_AUTH_MODE=token and RAY_AUTH_TOKEN "
                             "(or RAY_AUTH_TOKEN_PATH) in this shell (see docs/ray.md)") from e
        return False
    import secrets

    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    os.environ.pop("RAY_AUTH_TOKEN_PATH", None)
    ray.init(address="local", num_cpus=max(1, jobs) * cpus_per_episode, include_dashboard=False,
             log_to_driver=False)
    return True
