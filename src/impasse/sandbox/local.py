"""The local backend: Linux namespaces + overlayfs + bubblewrap, no daemon, ~ms per episode.

An episode is a size-limited tmpfs (the disk quota) holding an overlay upper dir over read-only
layers: [condition layers] + instance layer + task image + base. Every command runs in a fresh
bubblewrap: net/pid/ipc/uts namespaces, a seccomp filter, the episode's cgroup, and finally
``setpriv`` to the unprivileged agent uid with every capability dropped and no-new-privs set. Run
as real root without a user namespace so that root-owned files *look* root-owned (see
shared/reference/sandbox.md for why the user-namespace variants are unsafe or unrealistic).

After every command the harness kills whatever the agent left running in the episode's cgroup,
so background processes never outlive the call that started them.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from impasse import paths
from impasse.sandbox import lease as leases
from impasse.sandbox import oskit
from impasse.sandbox.base import ExecResult, Fault, FileAccessError, WorkspaceLost
from impasse.sandbox.rootfs import AGENT_HOME, AGENT_UID, REPO, VENV, ensure_base

MiB = 1024 * 1024
_LIVE_POPENS: set[int] = set()  # pids of our own subprocesses: never reaped as orphans


@dataclass
class Limits:
    """Per-episode resource limits. Defaults suit real test suites on a 2-core machine."""

    disk_bytes: int = 512 * MiB
    """Size of the episode's tmpfs: everything the agent writes, copy-ups included."""
    pids_max: int = 256
    """Processes and threads alive at once in the episode (fork bombs stop here)."""
    memory_bytes: int = 2048 * MiB
    """Memory of the episode's processes (page cache included, as cgroups count it)."""
    file_size_bytes: int = 256 * MiB
    """Largest single file a command may write (RLIMIT_FSIZE)."""
    output_keep_bytes: int = 64 * 1024
    """Bytes of stdout and of stderr kept per command; the rest is counted as truncated."""
    output_kill_bytes: int = 8 * MiB
    """A command printing more than this is killed (``yes`` would otherwise run to the timeout)."""


@dataclass
class ExecOptions:
    """Knobs the conditions may turn for the commands of one episode."""

    ro_workspace: bool = False
    masked_files: list[str] = field(default_factory=list)  # bound to /dev/null: cannot be executed


def _which(name: str) -> str:
    path = shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin")
    if not path:
        raise oskit.SandboxError(
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


AGENT_ENV = {
    "PATH": f"{VENV}/bin:/usr/local/bin:/usr/bin:/bin",
    "HOME": AGENT_HOME,
    "USER": "agent",
    "LOGNAME": "agent",
    "SHELL": "/bin/bash",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
    "VIRTUAL_ENV": VENV,
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "PIP_NO_INPUT": "1",
    "PIP_RETRIES": "1",  # there is no network: fail in a second, not after pip's default backoff
    # Stable test ids: some suites parametrize from sets, whose order follows the string hash seed.
    "PYTHONHASHSEED": "0",
}


class LocalSandbox:
    """One episode. Create through :class:`LocalBackend`. The episode's directory exists only
    while this object holds its lease (see :mod:`impasse.sandbox.lease`)."""

    def __init__(self, lease: leases.Lease, layers: list[Path], faults: list[Fault], limits: Limits) -> None:
        self.lease = lease
        self.id = lease.name
        self.dir = lease.dir
        self.disk = self.dir / "disk"
        self.root = self.dir / "root"
        self.layers = layers
        self.limits = limits
        self.options = ExecOptions()
        self.faults: list[Fault] = list(faults)
        self.restored = False
        self.cgroup: oskit.Cgroup | None = None
        self._seccomp = oskit.seccomp_filter_file(paths.cache_root() / "seccomp.bpf")
        self._closed = False
        try:
            self._setup()
            for fault in self.faults:
                fault.inject(self)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ lifecycle
    def _setup(self) -> None:
        self.dir.mkdir()
        self.disk.mkdir()
        self.root.mkdir()
        oskit.mount("tmpfs", self.disk, "tmpfs", f"size={self.limits.disk_bytes},mode=0700")
        (self.disk / "upper").mkdir()
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
        self.lease.release()

    def __enter__(self) -> LocalSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def restore(self) -> None:
        """Clear every fault (the condition's scripted restoration); the agent's edits stay."""
        for fault in self.faults:
            fault.restore(self)
        self.faults = []
        self.options = ExecOptions()
        if self.cgroup is not None:
            self.cgroup.set_pids_max(self.limits.pids_max)
            self.cgroup.set_memory_max(self.limits.memory_bytes)
        self.restored = True

    # ------------------------------------------------------------------ commands
    def argv(self, command: list[str], *, user: str = "agent", seccomp_fd: int = 3) -> list[str]:
        argv = _bwrap_prefix(self.root, network=False)
        if self.options.ro_workspace:
            argv += ["--ro-bind", str(self.root / "workspace"), "/workspace"]
        for path in self.options.masked_files:
            argv += ["--ro-bind", "/dev/null", path]
        env = AGENT_ENV if user == "agent" else {**AGENT_ENV, "HOME": "/root", "USER": "root", "LOGNAME": "root"}
        for key, value in env.items():
            argv += ["--setenv", key, value]
        argv += ["--chdir", REPO if (self.root / REPO[1:]).is_dir() else "/", "--seccomp", str(seccomp_fd), "--"]
        if user == "agent":
            argv += [_which("setpriv"), f"--reuid={AGENT_UID}", f"--regid={AGENT_UID}", "--init-groups",
                     "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
        return argv + command

    def exec(self, cmd: str, timeout: float = 60.0, stdin: bytes | None = None, user: str = "agent",
             keep_bytes: int | None = None) -> ExecResult:
        """Run ``cmd`` with bash as ``user``. ``keep_bytes`` overrides the output cap (harness use:
        a whole suite's -rA report is larger than what an agent should be shown)."""
        if self._closed:
            raise oskit.SandboxError(f"episode {self.id} is closed")
        self.ensure_alive()
        for fault in self.faults:
            fault.before_exec(self)
        result = self._run(["bash", "-c", cmd], user, timeout, stdin, keep_bytes)
        self.ensure_alive()  # what ran must have run in this episode's workspace
        for fault in list(self.faults):
            fault.after_exec(self, result)
        return result

    def _run(self, command: list[str], user: str, timeout: float, stdin: bytes | None,
             keep_bytes: int | None = None) -> ExecResult:
        # The trampoline shell joins the episode's cgroups and sets the rlimits that bwrap and
        # everything below it inherit (cheaper than one more exec through prlimit).
        join = "".join(f'echo $$ > {p} && ' for p in (self.cgroup.procs_files() if self.cgroup else []))
        join += f"ulimit -f {self.limits.file_size_bytes // 512} && ulimit -c 0 && "
        keep = keep_bytes or self.limits.output_keep_bytes
        kill_at = max(self.limits.output_kill_bytes, 2 * keep)
        start = time.monotonic()
        seccomp_fd = os.open(self._seccomp, os.O_RDONLY)
        try:
            full = ["/bin/sh", "-c", join + 'exec "$@"', "sh", *self.argv(command, user=user, seccomp_fd=seccomp_fd)]
            proc = subprocess.Popen(full, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(seccomp_fd,),
                                    start_new_session=True)
        finally:
            os.close(seccomp_fd)
        _LIVE_POPENS.add(proc.pid)
        if stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.write(stdin)
            proc.stdin.close()
        bufs = {proc.stdout: bytearray(), proc.stderr: bytearray()}
        seen = 0
        truncated = timed_out = False
        sel = selectors.DefaultSelector()
        for stream in bufs:
            sel.register(stream, selectors.EVENT_READ)
        deadline = start + timeout
        while sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            for key, _ in sel.select(min(remaining, 0.5)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                seen += len(chunk)
                buf = bufs[key.fileobj]
                room = keep - len(buf)
                if room > 0:
                    buf += chunk[:room]
                if len(chunk) > max(room, 0):
                    truncated = True
            if seen > kill_at:
                break
        sel.close()
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
        if timed_out:
            code = 124
        return ExecResult(code, bufs[proc.stdout].decode(errors="replace"), bufs[proc.stderr].decode(errors="replace"),
                          truncated, timed_out, time.monotonic() - start)

    # ------------------------------------------------------------------ files
    def read_file(self, path: str, as_agent: bool = True) -> str:
        if not as_agent:
            return self._harness_read(path)
        res = self.exec(f"cat -- {_q(path)}", timeout=30, keep_bytes=self.limits.file_size_bytes)
        if res.truncated:
            raise FileAccessError(f"{path} is larger than {self.limits.file_size_bytes} bytes")
        if res.exit_code != 0:
            raise FileAccessError(res.stderr.strip() or f"cannot read {path} (exit {res.exit_code})")
        return res.stdout

    def write_file(self, path: str, content: str) -> None:
        res = self.exec(f"cat > {_q(path)}", timeout=30, stdin=content.encode())
        if res.exit_code != 0:
            raise FileAccessError(res.stderr.strip() or f"cannot write {path} (exit {res.exit_code})")

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
        """The host-side path of a sandbox path in the merged view (for harness use only)."""
        return self.root / path.lstrip("/")

    # ------------------------------------------------------------------ patch
    def diff(self) -> str:
        self.ensure_alive()
        base = next((layer / REPO[1:] / ".git" for layer in self.layers if (layer / REPO[1:] / ".git").is_dir()),
                    None)
        return repo_diff(self.root / REPO[1:], base, self.dir) if base else ""


def _q(path: str) -> str:
    return "'" + path.replace("'", "'\"'\"'") + "'"


def repo_diff(worktree: Path, base_git: Path, scratch: Path) -> str:
    """The working tree's changes against the task's base commit, new files included.

    Computed from the host with the *pristine* ``.git`` of the task's layer (so an agent that
    commits, rewrites or deletes its own ``.git`` cannot hide or fake changes) and a fresh index
    built from HEAD. A fresh index has no stat cache: git compares file times in whole seconds,
    so a same-size edit made in the same second as the cached entry would otherwise be skipped
    as unchanged, and the patch would come out empty.
    """
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        (Path(tmp) / "objects").mkdir()
        env = {"PATH": "/usr/bin:/bin", "GIT_DIR": str(base_git), "GIT_WORK_TREE": str(worktree),
               "GIT_INDEX_FILE": str(Path(tmp) / "index"), "GIT_OBJECT_DIRECTORY": str(Path(tmp) / "objects"),
               "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(base_git / "objects"), "HOME": tmp,
               "GIT_CONFIG_NOSYSTEM": "1"}
        git = ["git", "-c", "safe.directory=*", "-c", "core.fileMode=false", "-c", "core.autocrlf=false",
               "-c", "gc.auto=0"]
        for args in (["read-tree", "HEAD"], ["add", "-A", "--", "."]):
            subprocess.run([*git, *args], env=env, check=True, capture_output=True, cwd=worktree)
        out = subprocess.run([*git, "diff", "--cached", "--binary", "HEAD"], env=env, check=True,
                             capture_output=True, cwd=worktree)
        return out.stdout.decode(errors="replace")


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


def run_build(base: Path, workspace: Path, script: str, *, env: dict[str, str], pip_cache: Path,
              timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    """Run ``script`` as root *with network* on ``base`` with ``workspace`` bound at /workspace.

    This is how task images are built: at the very path where episodes will mount them (venv
    shebangs are absolute). Host pip configuration cannot leak in: the environment is cleared,
    the base's /etc has no pip.conf and PIP_CONFIG_FILE points at /dev/null.
    """
    pip_cache.mkdir(parents=True, exist_ok=True)
    argv = _bwrap_prefix(base, network=True, root_writable=False)
    argv += ["--bind", str(workspace), "/workspace", "--tmpfs", "/tmp", "--bind", str(pip_cache), "/tmp/pipcache",
             "--tmpfs", "/root"]
    if Path("/etc/resolv.conf").exists():
        argv += ["--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf"]
    full_env = {"PATH": "/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8", "PIP_CONFIG_FILE": "/dev/null",
                "PIP_CACHE_DIR": "/tmp/pipcache", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1",
                "PYTHONDONTWRITEBYTECODE": "1", **env}
    for key, value in full_env.items():
        argv += ["--setenv", key, value]
    argv += ["--chdir", "/workspace", "--", "bash", "-c", script]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


class LocalBackend:
    """Creates episodes. One per process is enough; it is cheap."""

    name = "local"

    def __init__(self) -> None:
        oskit.require_root()
        _which("bwrap")
        self.base = ensure_base(paths.base_dir())
        oskit.become_subreaper()
        sweep_stale()

    def create(self, layers: list[Path], faults: list[Fault] = (), limits: Limits | None = None) -> LocalSandbox:
        """``layers`` top first; the base layer is appended here."""
        lease = leases.Lease.acquire_new(paths.episodes_dir())
        try:
            return LocalSandbox(lease, [*layers, self.base], list(faults), limits or Limits())
        except BaseException:
            lease.release()
            raise


def _remove_dead_episode(ep: Path) -> None:
    oskit.Cgroup.existing(ep.name).destroy(_LIVE_POPENS)
    oskit.remove_tree(ep)


def sweep_stale() -> int:
    """Remove episodes whose owner is provably gone: only those whose lease we can take
    (never by pid, see :mod:`impasse.sandbox.lease`). Safe while other processes run episodes."""
    return leases.sweep(paths.episodes_dir(), _remove_dead_episode)
