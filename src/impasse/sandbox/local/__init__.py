"""The local backend: Linux namespaces + overlayfs + bubblewrap, no daemon, ~ms per episode.

An episode is a size-limited tmpfs (the disk quota) holding an overlay upper dir over read-only
layers: instance layer + task image + base. Every command runs in a fresh bubblewrap:
net/pid/ipc/uts namespaces, a seccomp filter, the episode's cgroup, and finally ``setpriv`` to
the unprivileged agent uid with every capability dropped and no-new-privs set. Run as real root
without a user namespace so that root-owned files *look* root-owned (see
shared/reference/sandbox.md for why the user-namespace variants are unsafe or unrealistic).

After every command the harness kills whatever the agent left running in the episode's cgroup,
so background processes never outlive the call that started them. Faults are realised by
:mod:`impasse.sandbox.local.faults` with this backend's internals only.
"""

from __future__ import annotations

import contextlib
import copy
import os
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from impasse import paths
from impasse.conditions.faults import FaultSpec, TaskFacts
from impasse.layout import AGENT_ENV, AGENT_UID, REPO, ROOT_ENV
from impasse.sandbox import lease as leases
from impasse.sandbox.base import (
    ClosesOnExit,
    ExecResult,
    FileAccessError,
    Limits,
    SandboxError,
    WorkspaceLost,
    read_as_agent,
    write_as_agent,
)
from impasse.sandbox.gitdiff import pristine_git, repo_diff
from impasse.sandbox.local import faults as local_faults
from impasse.sandbox.local import oskit
from impasse.sandbox.local.rootfs import ensure_base

_LIVE_POPENS: set[int] = set()  # pids of our own subprocesses: never reaped as orphans


@dataclass
class ExecOptions:
    """Knobs the faults may turn for the commands of one episode."""

    ro_workspace: bool = False
    masked_files: list[str] = field(default_factory=list)  # bound to /dev/null: cannot be executed


def _which(name: str) -> str:
    path = shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin")
    if not path:
        raise SandboxError(
            f"`{name}` is not installed; the local sandbox needs bubblewrap and util-linux "
            "(run `make setup`, or `apt-get install -y bubblewrap util-linux`)"
        )
    return path


def _host_bound() -> list[str]:
    """Top-level directories bound read-only from the host into every sandbox (the base layer
    holds no binaries): /usr, and /bin, /lib, ... on hosts without a merged /usr."""
    return ["usr", *(n for n in ("bin", "lib", "lib64", "sbin")
                     if Path("/" + n).is_dir() and not Path("/" + n).is_symlink())]


def _bwrap_prefix(root: Path, *, network: bool, root_writable: bool = True) -> list[str]:
    argv = [_which("bwrap"), "--bind" if root_writable else "--ro-bind", str(root), "/",
            "--proc", "/proc", "--dev", "/dev",
            "--unshare-pid", "--as-pid-1", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--hostname", "sandbox", "--die-with-parent", "--new-session", "--clearenv"]
    for name in _host_bound():
        argv += ["--ro-bind", "/" + name, "/" + name]
    argv += ["--tmpfs", "/usr/local"]
    if not network:
        argv.append("--unshare-net")
    return argv


class _Output:
    """Collects a command's stdout and stderr up to a cap, counting what was cut."""

    def __init__(self, proc: subprocess.Popen, keep: int) -> None:
        self.bufs = {proc.stdout: bytearray(), proc.stderr: bytearray()}
        self.keep, self.seen, self.truncated = keep, 0, False

    def add(self, stream, chunk: bytes) -> None:
        self.seen += len(chunk)
        buf = self.bufs[stream]
        room = self.keep - len(buf)
        if room > 0:
            buf += chunk[:room]
        if len(chunk) > max(room, 0):
            self.truncated = True

    def text(self, stream) -> str:
        return self.bufs[stream].decode(errors="replace")


def _collect(proc: subprocess.Popen, out: _Output, deadline: float, kill_at: int) -> bool:
    """Read both pipes until EOF, the deadline (returns True: timed out) or ``kill_at`` bytes."""
    sel = selectors.DefaultSelector()
    for stream in out.bufs:
        sel.register(stream, selectors.EVENT_READ)
    try:
        while sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return True
            for key, _ in sel.select(min(remaining, 0.5)):
                chunk = os.read(key.fd, 65536)
                if chunk:
                    out.add(key.fileobj, chunk)
                else:
                    sel.unregister(key.fileobj)
            if out.seen > kill_at:
                return False
        return False
    finally:
        sel.close()


class LocalSandbox(ClosesOnExit):
    """One episode. Create through :class:`LocalBackend`. The episode's directory exists only
    while this object holds its lease (see :mod:`impasse.sandbox.lease`)."""

    workdir = REPO

    def __init__(self, lease: leases.Lease, layers: list[Path], faults: Sequence[FaultSpec], facts: TaskFacts,
                 limits: Limits, seccomp: Path, parent: LocalSandbox | None = None) -> None:
        self.lease = lease
        self.id = lease.name
        self.dir = lease.dir
        self.disk = self.dir / "disk"
        self.root = self.dir / "root"
        self.layers = layers
        self.facts = facts
        self.limits = limits
        self.options = ExecOptions()
        self.restored = False
        self.cgroup: oskit.Cgroup | None = None
        self._seccomp = seccomp
        self._closed = False
        self.faults: list[local_faults.LocalFault] = []
        try:
            if parent is None:
                self.faults = local_faults.realise(list(faults), facts)
                self._setup()
                for fault in self.faults:
                    fault.inject(self)
            else:
                self._setup(upper_from=parent.disk / "upper")
                self.options, self.restored = copy.deepcopy(parent.options), parent.restored
                self.faults = [fault.fork(parent, self) for fault in parent.faults]
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ lifecycle
    def _setup(self, upper_from: Path | None = None) -> None:
        self.dir.mkdir()
        self.disk.mkdir()
        self.root.mkdir()
        oskit.mount("tmpfs", self.disk, "tmpfs", f"size={self.limits.disk_bytes},mode=0700")
        if upper_from is None:
            (self.disk / "upper").mkdir()
        else:  # a fork: the parent's writable layer, whiteouts and overlay xattrs included
            oskit.copy_tree(upper_from, self.disk / "upper")
        (self.disk / "work").mkdir()
        oskit.mount_overlay(self.layers, self.disk / "upper", self.disk / "work", self.root)
        self._devs = (self.disk.stat().st_dev, self.root.stat().st_dev)
        self.cgroup = oskit.Cgroup(self.id, self.limits.pids_max, self.limits.memory_bytes)

    def ensure_alive(self) -> None:
        """Raise :class:`WorkspaceLost` unless the episode's mounts, cgroup and directory are the
        ones it set up. Two ``stat`` calls: cheap enough to run around every command."""
        try:
            ok = (self.disk.stat().st_dev, self.root.stat().st_dev) == self._devs
        except (FileNotFoundError, AttributeError):
            ok = False
        if ok and self.cgroup is not None:
            ok = all(p.is_dir() for p in self.cgroup.paths.values())
        if not ok:
            raise WorkspaceLost(f"episode {self.id}: its overlay, cgroup or directory is gone or was replaced "
                                "under it (removed by another process?); the episode cannot be trusted")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for fault in self.faults:
            with contextlib.suppress(Exception):  # teardown must go on
                fault.close(self)
        if self.cgroup is not None:
            self.cgroup.destroy(_LIVE_POPENS)
        oskit.remove_tree(self.dir)
        for fd in getattr(self, "layer_locks", []):
            os.close(fd)  # only once the overlay is gone: the layers may be pruned from now on
        self.lease.release()

    def fork(self) -> LocalSandbox:
        """An independent copy of this episode as it is now: only the writable layer is copied
        (the read-only layers are shared, each locked again for the copy's life), and every
        fault still in force is carried over with its state (a temporary fault's remaining
        failures, a lowered limit, a filled disk)."""
        if self._closed:
            raise SandboxError(f"episode {self.id} is closed")
        self.ensure_alive()
        return _create(self.layers[:-1], self.layers[-1], self.facts, self.limits, self._seccomp, parent=self)

    def restore(self) -> None:
        for fault in self.faults:
            fault.restore(self)
        self.faults = []
        self.options = ExecOptions()
        if self.cgroup is not None:
            self.cgroup.set_pids_max(self.limits.pids_max)
            self.cgroup.set_memory_max(self.limits.memory_bytes)
        self.restored = True

    # ------------------------------------------------------------------ commands
    def argv(self, command: list[str], *, user: str = "agent", cwd: str | None = None,
             env: Mapping[str, str] | None = None, seccomp_fd: int = 3) -> list[str]:
        argv = _bwrap_prefix(self.root, network=False)
        if self.options.ro_workspace:
            argv += ["--ro-bind", str(self.root / "workspace"), "/workspace"]
        for path in self.options.masked_files:
            argv += ["--ro-bind", "/dev/null", path]
        for key, value in {**(AGENT_ENV if user == "agent" else ROOT_ENV), **(env or {})}.items():
            argv += ["--setenv", key, value]
        if cwd is None:
            cwd = REPO if (self.root / REPO[1:]).is_dir() else "/"
        argv += ["--chdir", cwd, "--seccomp", str(seccomp_fd), "--"]
        if user == "agent":
            argv += [_which("setpriv"), f"--reuid={AGENT_UID}", f"--regid={AGENT_UID}", "--init-groups",
                     "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
        return argv + command

    def exec(self, cmd: str, timeout: float = 60.0, stdin: bytes | None = None, user: str = "agent", *,
             cwd: str | None = None, env: Mapping[str, str] | None = None,
             output_limit: int | None = None) -> ExecResult:
        if self._closed:
            raise SandboxError(f"episode {self.id} is closed")
        self.ensure_alive()
        for fault in self.faults:
            fault.before_exec(self)
        result = self._run(["bash", "-c", cmd], user, timeout, stdin, cwd=cwd, env=env, keep=output_limit)
        self.ensure_alive()  # what ran must have run in this episode's workspace
        for fault in list(self.faults):
            fault.after_exec(self, result)
        return result

    def _spawn(self, command: list[str], user: str, stdin: bytes | None, **where) -> subprocess.Popen:
        # The trampoline shell joins the episode's cgroups and sets the rlimits that bwrap and
        # everything below it inherit (cheaper than one more exec through prlimit).
        join = "".join(f'echo $$ > {p} && ' for p in (self.cgroup.procs_files() if self.cgroup else []))
        join += f"ulimit -f {self.limits.file_size_bytes // 512} && ulimit -c 0 && "
        seccomp_fd = os.open(self._seccomp, os.O_RDONLY)
        try:
            full = ["/bin/sh", "-c", join + 'exec "$@"', "sh", *self.argv(command, user=user, seccomp_fd=seccomp_fd,
                                                                         **where)]
            proc = subprocess.Popen(full, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(seccomp_fd,),
                                    start_new_session=True)
        finally:
            os.close(seccomp_fd)
        _LIVE_POPENS.add(proc.pid)
        if stdin is not None:  # a command may exit before it reads its input (a masked shell): that is its answer
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.write(stdin)
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.close()
        return proc

    def _run(self, command: list[str], user: str, timeout: float, stdin: bytes | None, *,
             cwd: str | None = None, env: Mapping[str, str] | None = None, keep: int | None = None) -> ExecResult:
        keep = keep or self.limits.output_keep_bytes
        start = time.monotonic()
        proc = self._spawn(command, user, stdin, cwd=cwd, env=env)
        out = _Output(proc, keep)
        timed_out = _collect(proc, out, start + timeout, max(self.limits.output_kill_bytes, 2 * keep))
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        if self.cgroup is not None:
            self.cgroup.kill_all(_LIVE_POPENS)  # leftovers: background jobs, the timed-out command
        try:
            code = proc.wait(timeout=10)
        finally:
            _LIVE_POPENS.discard(proc.pid)
            proc.stdout.close()
            proc.stderr.close()
        oskit.reap_orphans(_LIVE_POPENS)
        return ExecResult(124 if timed_out else code, out.text(proc.stdout), out.text(proc.stderr),
                          out.truncated, timed_out, time.monotonic() - start)

    # ------------------------------------------------------------------ files
    def read_file(self, path: str, as_agent: bool = True) -> str:
        if not as_agent:
            return self._harness_read(path)
        return read_as_agent(self, path, self.limits.file_size_bytes)

    def write_file(self, path: str, content: str) -> None:
        write_as_agent(self, path, content)

    def _harness_read(self, path: str) -> str:
        """The merged view as the harness sees it: no permissions, no fault hooks, no process in
        the sandbox. Symlinks resolve inside the sandbox's root, never on the host."""
        self.ensure_alive()
        real = resolve_in_view(self.root, path, _host_bound())
        try:
            return real.read_bytes().decode(errors="replace")
        except OSError as e:
            raise FileAccessError(f"{path}: {e.strerror}") from e

    def host_path(self, path: str) -> Path:
        """The host-side path of a sandbox path in the merged view (for this backend's faults)."""
        return self.root / path.lstrip("/")

    # ------------------------------------------------------------------ patch
    def diff(self) -> str:
        self.ensure_alive()
        base = pristine_git(self.layers, REPO)
        return repo_diff(self.root / REPO[1:], base, self.dir) if base else ""


def resolve_in_view(root: Path, path: str, host_bound: list[str], max_links: int = 40) -> Path:
    """Host path of sandbox ``path`` in the merged view rooted at ``root`` (where top-level
    ``host_bound`` directories come from the host). Symlinks are followed *inside* the view:
    ``/workspace/repo/x -> /etc/shadow`` names the sandbox's decoy, never the host's file."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    done: list[str] = []
    hops = 0

    def host(names: list[str]) -> Path:
        return (Path("/") if names and names[0] in host_bound else root).joinpath(*names)

    while parts:
        part = parts.pop(0)
        if part == "..":
            if done:
                done.pop()
            continue
        candidate = host([*done, part])
        if candidate.is_symlink():
            hops += 1
            if hops > max_links:
                raise FileAccessError(f"{path}: too many levels of symbolic links")
            target = os.readlink(candidate)
            if target.startswith("/"):
                done = []
            parts = [p for p in target.split("/") if p not in ("", ".")] + parts
            continue
        done.append(part)
    if done and done[0] in ("proc", "dev", "sys"):
        raise FileAccessError(f"{path}: not a file of the sandbox's filesystem")
    return host(done)


class LocalBackend:
    """Creates episodes on this machine (root, no daemon). One per process is enough; it is cheap."""

    name = "local"
    forks = True

    def __init__(self) -> None:
        oskit.require_root()
        _which("bwrap")
        self.base = ensure_base(paths.base_dir())
        self._seccomp = oskit.seccomp_filter_file(paths.cache_root() / "seccomp.bpf")
        oskit.become_subreaper()
        self.sweep()

    def create(self, layers: Sequence[Path], faults: Sequence[FaultSpec] = (), facts: TaskFacts | None = None,
               limits: Limits | None = None) -> LocalSandbox:
        """``layers`` top first; the base layer is appended here. Holds a shared lock on each
        cached layer for the episode's life, so ``impasse cache prune`` leaves them alone."""
        return _create(list(layers), self.base, facts or TaskFacts(), limits or Limits(), self._seccomp, faults)

    def unsupported(self, fault: FaultSpec) -> str | None:
        if not fault.runtime:
            return None
        if type(fault) not in local_faults.supported():
            return f"the local backend has no realisation of fault kind {fault.kind!r}"
        needs = {"memory_limit": "memory", "pids_exhausted": "pids"}.get(fault.kind)
        if needs and needs not in oskit.Cgroup.controllers():
            return f"{fault.kind} needs a {needs} cgroup controller (v1, or delegated v2) on this machine"
        return None

    def sweep(self) -> int:
        return sweep_stale()

    def run_build(self, workspace: Path, script: str, *, env: Mapping[str, str], pip_cache: Path,
                  timeout: float = 1800) -> subprocess.CompletedProcess[str]:
        """Build as root *with* network on the base layer, ``workspace`` bound at /workspace.
        Host pip configuration cannot leak in: the environment is cleared, the base's /etc has
        no pip.conf and PIP_CONFIG_FILE points at /dev/null."""
        pip_cache.mkdir(parents=True, exist_ok=True)
        argv = _bwrap_prefix(self.base, network=True, root_writable=False)
        argv += ["--bind", str(workspace), "/workspace", "--tmpfs", "/tmp", "--bind", str(pip_cache),
                 "/tmp/pipcache", "--tmpfs", "/root"]
        if Path("/etc/resolv.conf").exists():
            argv += ["--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf"]
        full_env = {"PATH": "/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8", "PIP_CONFIG_FILE": "/dev/null",
                    "PIP_CACHE_DIR": "/tmp/pipcache", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1",
                    "PYTHONDONTWRITEBYTECODE": "1", **env}
        for key, value in full_env.items():
            argv += ["--setenv", key, value]
        argv += ["--chdir", "/workspace", "--", "bash", "-c", script]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def _create(layers: list[Path], base: Path, facts: TaskFacts, limits: Limits, seccomp: Path,
            faults: Sequence[FaultSpec] = (), parent: LocalSandbox | None = None) -> LocalSandbox:
    """A new episode (or a fork of ``parent``) under its own lease, holding its layers' locks."""
    from impasse.sandbox import uselock

    lease = leases.Lease.acquire_new(paths.episodes_dir())
    held: list[int] = []
    try:
        held = uselock.hold_shared(layers)
        sb = LocalSandbox(lease, [*layers, base], faults, facts, limits, seccomp, parent)
    except BaseException:
        uselock.release(held)
        lease.release()
        raise
    sb.layer_locks = held
    return sb


def _remove_dead_episode(ep: Path) -> None:
    oskit.Cgroup.existing(ep.name).destroy(_LIVE_POPENS)
    oskit.remove_tree(ep)


def sweep_stale() -> int:
    """Remove episodes whose owner is provably gone: only those whose lease we can take
    (never by pid, see :mod:`impasse.sandbox.lease`). Safe while other processes run episodes."""
    return leases.sweep(paths.episodes_dir(), _remove_dead_episode)
