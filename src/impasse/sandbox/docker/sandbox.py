"""Docker-API episodes: one container per episode, one exec per command.

The container runs with no network, as the agent (uid 2000), every capability dropped,
no-new-privileges, the shared seccomp deny list as a JSON profile, memory/pids limits, a
size-limited tmpfs at every place the agent may write (/workspace, /tmp, /var/tmp, its home;
the rest of the root filesystem is root's, so the agent meets EACCES there as on the local
backend): there are no overlay quotas on a plain engine, so the workspace is copied into a sized
tmpfs at start. The harness's own work inside (copying the workspace in,
faults, the patch) runs as root through *privileged* execs that the agent cannot reach.

Each agent command runs as ``sh -c 'timeout … setpriv --no-new-privs -- bash -c CMD; kill -9 -1'``:
``setpriv`` exec's bash exactly as on the local backend (same "failed to execute bash" text when
the shell is masked), ``timeout`` is the process that forks (so an exhausted pids limit shows as
EAGAIN), and ``kill -9 -1`` (the agent killing every other process of its own uid in the
container's pid namespace) removes background leftovers, as the local backend does after each call.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import select
import shlex
import socket
import struct
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from impasse.conditions.faults import FaultSpec, TaskFacts
from impasse.layout import AGENT_ENV, AGENT_HOME, AGENT_UID, REPO, WORKSPACE
from impasse.sandbox import lease as leases
from impasse.sandbox import seccomp
from impasse.sandbox.base import (
    ClosesOnExit,
    ExecResult,
    FileAccessError,
    Limits,
    SandboxError,
    read_as_agent,
    verified_write,
)
from impasse.sandbox.docker import faults as dfaults
from impasse.sandbox.docker import image as images
from impasse.sandbox.gitdiff import repo_diff

DEFAULT_SOCKET = "unix:///run/impasse-podman.sock"
FAULTCTL = f"{images.STASH}/faultctl.py"
FAULT_STATE = "/run/impasse"
"""faultctl's state (a root-only tmpfs): what each fault did, so that restore undoes exactly that."""
FORK_DIR = "/.impasse-fork"
"""Where a fork's pack is staged, in the parent and in the fork (root-only, removed after; forkctl's HERE)."""
_FORKCTL_SOURCE = Path(__file__).with_name("forkctl.py").read_text()
WRITABLE = {WORKSPACE: "0755", "/tmp": "1777", "/var/tmp": "1777", AGENT_HOME: "0755"}
"""The places the agent may write to, each a tmpfs of the episode's disk size (and its mode)."""
CARRIED = (*WRITABLE, "/dev/shm")
"""What a fork copies whole: every tmpfs the agent can write to (the engine's /dev/shm included)."""
_WRAP = ('{prefix}timeout -s KILL {t} setpriv --no-new-privs -- bash -c "$1"; rc=$?; '
         'kill -9 -1 2>/dev/null; exit $rc')


# The harness's root execs: the system interpreter and tools, never the task's venv (whose
# interpreter a fault may be holding open).
_ROOT_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8"}
ROOT_EXEC_TIMEOUT = 1800.0
ROOT_EXEC_KEEP = 16 * 1024 * 1024
_ATTACHED = 'read -r _ || :; exec "$@"'
"""Every exec starts with this: it waits for the line ``_stream`` sends once attached."""


# Podman appends this to an exec's stderr when the process exits before consuming its stdin; it
# is the engine's, not the command's (Docker prints nothing), and names the engine's own fds.
STDIN_DIR = "/.impasse-in"
"""Where a command's input is staged (see ``DockerSandbox._stage_stdin``); one per uid is enough:
the agent and root never stage at once in one container."""
_ATTACH_NOISE = re.compile(r"^Error: (read|write) unixpacket \S+attach: (read|write): connection reset by peer\n?\Z",
                           re.M)


def connect(base_url: str | None = None):
    """A Docker client for ``base_url``, else $DOCKER_HOST, else our podman socket if it exists."""
    import docker

    url = base_url or os.environ.get("DOCKER_HOST")
    if not url and Path(DEFAULT_SOCKET.removeprefix("unix://")).exists():
        url = DEFAULT_SOCKET
    try:
        client = docker.DockerClient(base_url=url) if url else docker.from_env()
        client.ping()
    except Exception as e:  # noqa: BLE001 - any failure here means "no engine"
        raise SandboxError(f"no Docker engine answers ({url or 'DOCKER_HOST unset'}): {e}. Start one "
                           "(scripts/engine.sh starts podman's Docker API as root) or set DOCKER_HOST") from e
    return client


class DockerSandbox(ClosesOnExit):
    """One episode. Create through :class:`DockerBackend`."""

    root = Path("/")  # protocol attribute; the episode's files live in the engine, not here

    def __init__(self, backend: DockerBackend, tag: str, faults: list, limits: Limits,
                 parent: DockerSandbox | None = None) -> None:
        self.backend, self.tag = backend, tag
        self.client = backend.client
        self.seccomp_opt = backend.seccomp_opt
        self.limits = limits
        self.faults: list = []
        self.restored = False
        self._closed = False
        self.container = None
        self.exec_prefix: list[str] = []  # faults may put a command (e.g. prlimit) before the agent's
        # Owned by lock, as local episodes are: a sweep (any process, any pid namespace) removes a
        # container only once its owner's lease is free, never a live episode of another process.
        # A fork takes a lease of its own: it is an episode like any other.
        self.lease = leases.Lease.acquire_new(lease_root(), prefix="dk-")
        try:
            if parent is None:
                self._start(tag)
                self._populate()
                self.faults = list(faults)
                for fault in self.faults:
                    fault.inject(self)
            else:
                self._start_from(parent)
                self.restored = parent.restored
                for fault in parent.faults:
                    self.faults.append(fault.fork(parent, self))
        except BaseException:
            self.close()
            raise
        self.id = self.container.name

    # ------------------------------------------------------------------ lifecycle
    def _start(self, tag: str) -> None:
        disk = self.limits.disk_bytes
        tmpfs = {path: f"size={disk},mode={mode},exec" for path, mode in WRITABLE.items()}
        self.container = self.client.containers.run(
            tag, ["sleep", "infinity"], detach=True, init=True, user="0:0", network_mode="none",
            cap_drop=["ALL"], security_opt=["no-new-privileges", self.seccomp_opt],
            pids_limit=self.limits.pids_max, mem_limit=self.limits.memory_bytes,
            memswap_limit=self.limits.memory_bytes, hostname="sandbox",
            tmpfs={**tmpfs, FAULT_STATE: "size=16m,mode=0700"},
            ulimits=_ulimits(self.limits), labels={"impasse.episode": self.lease.name, "impasse.leases": str(lease_root())}, environment=AGENT_ENV)

    def _populate(self) -> None:
        """A fresh episode's files: the task's workspace and the agent's home, from the image's stash,
        which is then root's alone (each task layer's ADD leaves it 0755: the agent could have
        copied a hidden dependency back from it, or rewritten the base the patch is taken against)."""
        self.root_exec(f"{{ ! [ -d {images.STASH}/workspace ] || cp -a {images.STASH}/workspace/. {WORKSPACE}/; }} && cp -a {images.STASH}/home/. {AGENT_HOME}/ "
                       f"&& chown {AGENT_UID}:{AGENT_UID} {AGENT_HOME} && chmod 0700 {images.STASH}")
        self.workdir = REPO if self.root_exec(f"[ -d {REPO} ]", check=False)[0] == 0 else "/"

    def _start_from(self, parent: DockerSandbox) -> None:
        """A fork's container, holding the parent's writable state: packed by ``forkctl`` inside
        the parent into one tar file (see forkctl for what is in it) while this container starts,
        carried here through the engine's archive API as that one file, unpacked by ``forkctl``
        here. Only harness execs run meanwhile: an episode's commands run one at a time."""
        if parent._closed:
            raise SandboxError(f"episode {parent.id} is closed")
        name = self.lease.name
        stage = f"{FORK_DIR}-{name}"  # in the parent: {stage}{FORK_DIR}/{name}, so it arrives as {FORK_DIR}/{name}
        with ThreadPoolExecutor(2) as pool:
            packing = pool.submit(parent._pack, f"{stage}{FORK_DIR}/{name}")
            try:
                self._start(self.tag)
                packing.result()
                stream, _ = parent.container.get_archive(f"{stage}{FORK_DIR}")
                if not self.container.put_archive("/", stream):
                    raise SandboxError(f"the engine refused to copy episode {parent.id}'s state into its fork")
            finally:
                futures.wait([packing])
                pool.submit(parent.root_exec, f"rm -rf -- {stage}", False)  # while the fork unpacks
            self.forkctl("unpack", f"{FORK_DIR}/{name}")
        self.workdir = parent.workdir

    def _pack(self, where: str) -> None:
        """This episode's writable state as ``where``/state.tar (forkctl's pack), for a fork."""
        changes = [[c["Path"], c["Kind"]] for c in self.container.diff() or []]
        self.put_files(where, {"changes.json": json.dumps(changes).encode()})
        self.forkctl("pack", where, *CARRIED)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for fault in self.faults:
            with contextlib.suppress(Exception):
                fault.close(self)
        if self.container is not None:
            with contextlib.suppress(Exception):
                self.container.remove(force=True, v=True)
        self.lease.release()

    def fork(self) -> DockerSandbox:
        """An independent copy of this episode as it is now: a new container from the same task
        image, under its own lease, holding the parent's writable state (see :meth:`_start_from`),
        with every fault still in force carried over with its state (a temporary fault's
        remaining failures, a lowered limit, a filled disk, a masked shell, locked paths, ...)."""
        if self._closed:
            raise SandboxError(f"episode {self.id} is closed")
        return DockerSandbox(self.backend, self.tag, [], self.limits, parent=self)

    def restore(self) -> None:
        """Clear every fault (the condition's scripted restoration); the agent's edits stay."""
        for fault in self.faults:
            fault.restore(self)
        self.faults = []
        self.restored = True

    # ------------------------------------------------------------------ harness side
    def root_exec(self, script: str, check: bool = True) -> tuple[int, str]:
        """Run ``script`` as root with every capability, inside the container: the harness's own
        hand (never the agent's). -> (exit code, stdout then stderr). Raises
        :class:`SandboxError` when ``check`` and it fails."""
        res = self._stream(["sh", "-c", script], "0", ROOT_EXEC_TIMEOUT, None, ROOT_EXEC_KEEP, env=_ROOT_ENV,
                           privileged=True, workdir="/")
        text = res.stdout + res.stderr
        if check and res.exit_code != 0:
            raise SandboxError(f"episode {self.container.name}: `{script}` failed (exit {res.exit_code}): {text.strip()}")
        return res.exit_code, text

    def faultctl(self, *args: str) -> str:
        return self.root_exec(shlex.join(["/usr/bin/python3", FAULTCTL, *args]))[1]

    def forkctl(self, *args: str) -> str:
        return self.root_exec(shlex.join(["/usr/bin/python3", "-c", _FORKCTL_SOURCE, *args]))[1]

    def put_files(self, directory: str, files: Mapping[str, bytes], uid: int = 0) -> None:
        """Create ``directory`` (mode 0700, owned by ``uid``) holding ``files`` (mode 0400), through
        the engine's archive API: no exec stream carries the bytes."""
        buf = io.BytesIO()
        parts = directory.strip("/").split("/")
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for depth in range(1, len(parts) + 1):
                d = tarfile.TarInfo("/".join(parts[:depth]))
                d.type, d.mode, d.uid, d.gid = tarfile.DIRTYPE, 0o700, uid, uid
                tar.addfile(d)
            for name, data in files.items():
                f = tarfile.TarInfo(f"{directory.lstrip('/')}/{name}")
                f.size, f.mode, f.uid, f.gid = len(data), 0o400, uid, uid
                tar.addfile(f, io.BytesIO(data))
        if not self.container.put_archive("/", buf.getvalue()):
            raise SandboxError(f"the engine refused to copy files into {directory} of episode {self.container.name}")

    # ------------------------------------------------------------------ commands
    def exec(self, cmd: str, timeout: float = 60.0, stdin: bytes | None = None, user: str = "agent", *,
             cwd: str | None = None, env: Mapping[str, str] | None = None,
             output_limit: int | None = None) -> ExecResult:
        if self._closed:
            raise SandboxError("episode is closed")
        for fault in self.faults:
            fault.before_exec(self)
        uid = f"{AGENT_UID}:{AGENT_UID}" if user == "agent" else "0"
        prefix = "".join(shlex.quote(a) + " " for a in self.exec_prefix)
        if cwd or env:
            exports = "".join(f"export {k}={shlex.quote(v)}; " for k, v in (env or {}).items())
            cmd = f"{exports}cd {shlex.quote(cwd or self.workdir)} && {{ {cmd}\n}}"
        if stdin is not None:
            staged = self._stage_stdin(stdin, AGENT_UID if user == "agent" else 0)
            cmd = f"exec 0<{staged}; rm -f -- {staged}; {{ {cmd}\n}}"
        wrapped = ["sh", "-c", _WRAP.format(prefix=prefix, t=int(timeout) + 5), "sh", cmd]
        result = self._stream(wrapped, uid, timeout, None, output_limit or self.limits.output_keep_bytes)
        for fault in list(self.faults):
            fault.after_exec(self, result)
        return result

    def _stage_stdin(self, data: bytes, uid: int) -> str:
        """Put ``data`` in a file only ``uid`` can read (on the container's root filesystem, not a
        sized tmpfs) and return its path; the command reads it as stdin and removes it. Why not
        the exec's attached stdin: when the command exits before reading it (``cat > f`` on a
        file it may not write), podman's attach drops the command's own stderr, so the agent
        would see "exit 1" instead of "Permission denied" (the local backend shows the text)."""
        name = f"in-{os.urandom(8).hex()}"
        self.put_files(STDIN_DIR, {name: data}, uid)
        return f"{STDIN_DIR}/{name}"

    def _kill_agent(self) -> None:
        self.container.exec_run(["sh", "-c", "kill -9 -1"], user=f"{AGENT_UID}:{AGENT_UID}")

    def _stream(self, argv: list[str], user: str, timeout: float, stdin: bytes | None, keep: int, *,
                env: Mapping[str, str] | None = None, privileged: bool = False, workdir: str | None = None) -> ExecResult:
        """One exec, its output streamed as it comes. The process first waits for one line on its
        stdin, which is sent once the engine has attached this call to it: podman lost the whole
        output of a command that ended before its attach was in place (3% of fast commands under
        load, an agent's failed call shown as empty)."""
        api = self.client.api
        start = time.monotonic()
        if env is None:
            env = {**AGENT_ENV, **({} if user != "0" else {"HOME": "/root", "USER": "root", "LOGNAME": "root"})}
        eid = api.exec_create(self.container.id, ["sh", "-c", _ATTACHED, "sh", *argv], stdin=True, user=user,
                              environment=env, workdir=workdir or self.workdir, privileged=privileged)["Id"]
        conn = api.exec_start(eid, socket=True)
        sock: socket.socket = getattr(conn, "_sock", conn)
        sock.sendall(b"\n" + (stdin or b""))
        sock.shutdown(socket.SHUT_WR)
        out = _Demux(keep)
        timed_out = False
        kill_at = max(self.limits.output_kill_bytes, 2 * keep)
        deadline = start + timeout
        while out.seen <= kill_at:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([sock], [], [], min(remaining, 0.5))
            if not ready:
                continue
            chunk = sock.recv(65536)
            if not chunk:
                break
            out.feed(chunk)
        seen = out.seen
        if timed_out or seen > kill_at:
            self._kill_agent()
            _drain(sock, 5.0)  # the engine finishes the exec only once its output is consumed
        with contextlib.suppress(OSError):
            sock.close()
        code = self._exit_code(eid)
        if timed_out:
            code = 124
        stderr = _ATTACH_NOISE.sub("", out.bufs[2].decode(errors="replace"))  # podman's, if stdin was left unread
        return ExecResult(code, out.bufs[1].decode(errors="replace"), stderr, out.truncated, timed_out,
                          time.monotonic() - start)

    def _exit_code(self, eid: str) -> int:
        for _ in range(500):
            info = self.client.api.exec_inspect(eid)
            if not info.get("Running"):
                return int(info.get("ExitCode") or 0)
            time.sleep(0.01)
        return -1

    # ------------------------------------------------------------------ files
    def read_file(self, path: str, as_agent: bool = True) -> str:
        if not as_agent:
            if (copied := self._harness_copy(path)) is not None:
                return copied
            code, out = self.root_exec(f"cat -- {shlex.quote(path)}", check=False)
            if code != 0:
                raise FileAccessError(out.strip() or f"cannot read {path}")
            return out
        return read_as_agent(self, path, self.limits.file_size_bytes)

    def _harness_copy(self, path: str) -> str | None:
        """A regular file's content copied out through the API (``get_archive``), not through an
        exec's attached output, which podman now and then cuts short under load (edit_file's
        read-back then saw a saved edit as lost). None for anything but a regular file."""
        import docker.errors

        try:
            stream, _ = self.container.get_archive(path)
        except docker.errors.NotFound:
            raise FileAccessError(f"{path}: No such file or directory") from None
        with tarfile.open(fileobj=_IterReader(stream), mode="r|") as tar:
            member = tar.next()
            if member is None or not member.isfile():
                return None
            fh = tar.extractfile(member)
            return fh.read().decode(errors="replace") if fh is not None else None

    def write_file(self, path: str, content: str) -> None:
        """``write_file`` as the agent, verified by reading the file back through the API."""
        verified_write(self, path, content, self._write_once)

    def _write_once(self, path: str, content: str) -> None:
        """One write as the agent, with the shell's error read back from a file through the API:
        podman's attach drops a fast-failing exec's stderr now and then under load, and the agent
        would then see "exit 1" where the local backend shows "Permission denied"."""
        err = f"{STDIN_DIR}/err-{os.urandom(8).hex()}"
        res = self.exec(f"{{ cat > {shlex.quote(path)}\n}} 2>{err}; rc=$?; [ $rc = 0 ] && rm -f -- {err}; exit $rc",
                        timeout=30, stdin=content.encode())
        if res.exit_code == 0:
            return
        text: str | None = None
        with contextlib.suppress(FileAccessError):  # no file: the staging itself failed
            text = self._harness_copy(err)
        self.root_exec(f"rm -f -- {err}", check=False)
        text = text or res.stderr
        raise FileAccessError(text.strip() or f"cannot write {path} (exit {res.exit_code})")

    # ------------------------------------------------------------------ patch
    def diff(self) -> str:
        """The agent's patch against the task's base commit, computed on the host like the local
        backend: the working tree and the image's pristine ``.git`` come out through the API."""
        with tempfile.TemporaryDirectory(prefix="impasse-docker-diff-") as tmp:
            work = Path(tmp)
            try:
                self._extract(REPO, work / "tree")
                self._extract(f"{images.STASH}{REPO}/.git", work / "base")
            except FileNotFoundError:
                return ""
            tree = work / "tree" / Path(REPO).name
            with contextlib.suppress(FileNotFoundError):
                _rmtree(tree / ".git")
            return repo_diff(tree, work / "base" / ".git", work)

    def _extract(self, path: str, dest: Path) -> None:
        import docker.errors

        try:
            stream, _ = self.container.get_archive(path)
        except docker.errors.NotFound as e:
            raise FileNotFoundError(path) from e
        dest.mkdir(parents=True)
        reader = _IterReader(stream)
        with tarfile.open(fileobj=reader, mode="r|") as tar:
            tar.extractall(dest, filter="tar")


class _Demux:
    """The engine's multiplexed exec stream (frames: 1 byte stream, 3 pad, 4 bytes size), kept
    up to ``keep`` bytes per stream; what is cut is flagged as truncated."""

    def __init__(self, keep: int) -> None:
        self.keep, self.seen, self.truncated = keep, 0, False
        self.bufs = {1: bytearray(), 2: bytearray()}
        self.pending = bytearray()

    def feed(self, chunk: bytes) -> None:
        self.pending += chunk
        while len(self.pending) >= 8:
            kind, size = self.pending[0], struct.unpack(">I", self.pending[4:8])[0]
            if len(self.pending) < 8 + size:
                return
            data, self.pending = bytes(self.pending[8:8 + size]), self.pending[8 + size:]
            self.seen += size
            buf = self.bufs.get(kind, self.bufs[2])
            room = self.keep - len(buf)
            if room > 0:
                buf += data[:room]
            if size > max(room, 0):
                self.truncated = True


def _drain(sock: socket.socket, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ready, _, _ = select.select([sock], [], [], 0.2)
        if ready and not sock.recv(1 << 20):
            return


class _IterReader:
    """A file-like view of the chunks the API streams (``tarfile`` in stream mode reads this)."""

    def __init__(self, chunks) -> None:
        self.chunks, self.buf = iter(chunks), b""

    def read(self, n: int = -1) -> bytes:
        while n < 0 or len(self.buf) < n:
            try:
                self.buf += next(self.chunks)
            except StopIteration:
                break
        if n < 0:
            out, self.buf = self.buf, b""
        else:
            out, self.buf = self.buf[:n], self.buf[n:]
        return out


def _rmtree(p: Path) -> None:
    import shutil

    shutil.rmtree(p)


def lease_root() -> Path:
    from impasse import paths

    return paths.cache_root() / "docker-episodes"


def is_podman(client) -> bool:
    return any("podman" in c.get("Name", "").lower() for c in client.version().get("Components", []))


def _seccomp_opt(client) -> str:
    """Docker's API takes the profile's JSON text; podman's compatible API takes a file path on
    the engine's machine (it is local: podman has no remote daemon of its own here)."""
    profile = seccomp.docker_profile_json()
    if not is_podman(client):
        return f"seccomp={profile}"
    path = images._cache() / f"seccomp-{seccomp.digest()}.json"
    if not path.exists():
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(profile)
        os.replace(tmp, path)
    return f"seccomp={path}"


def _ulimits(limits: Limits):
    import docker.types

    fsize = limits.file_size_bytes
    return [docker.types.Ulimit(name="nofile", soft=20000, hard=20000),
            docker.types.Ulimit(name="nproc", soft=4096, hard=4096),
            docker.types.Ulimit(name="fsize", soft=fsize, hard=fsize),
            docker.types.Ulimit(name="core", soft=0, hard=0)]


class DockerBackend:
    """Creates episodes in a Docker-API engine (Docker, or podman's compatible service)."""

    name = "docker"
    forks = True

    def __init__(self, client=None, log=lambda _m: None) -> None:
        self.client = client or connect()
        self.log = log
        self.seccomp_opt = _seccomp_opt(self.client)
        self.rootless = any("rootless" in o for o in self.client.info().get("SecurityOptions") or [])

    def create(self, layers: Sequence[Path], faults: Sequence[FaultSpec] = (), facts: TaskFacts | None = None,
               limits: Limits | None = None) -> DockerSandbox:
        """``layers`` top first (as for the local backend); fault specs are realised with this
        engine's means (see :mod:`impasse.sandbox.docker.faults`)."""
        for fault in faults:
            if reason := self.unsupported(fault):
                raise SandboxError(reason)
        tag = images.task_image(self.client, list(layers), self.log)
        return DockerSandbox(self, tag, dfaults.realise(faults, facts or TaskFacts()), limits or Limits())

    def unsupported(self, fault: FaultSpec) -> str | None:
        return dfaults.unsupported(fault, self)

    def run_build(self, workspace: Path, script: str, *, env: Mapping[str, str], pip_cache: Path,
                  timeout: float = 1800) -> subprocess.CompletedProcess[str]:
        raise SandboxError("task images are built with the local backend (`impasse tasks build`, as root); the "
                           "Docker backend turns the built layers into OCI images when an episode needs them")

    def sweep(self) -> int:
        """Remove episode containers whose owner is provably gone (its lease can be taken), and
        never one that another live process owns, whichever cache it uses: each container names
        its lease directory (label ``impasse.leases``). Episodes of harnesses on *other* hosts
        sharing this engine are left alone: their lease directories are not on this machine."""
        gone = 0
        for c in self.client.containers.list(all=True, filters={"label": "impasse.episode"}):
            name = c.labels.get("impasse.episode", "")
            root = Path(c.labels.get("impasse.leases") or lease_root())
            if not root.is_dir():
                continue
            with leases.claim_if_dead(root, name) as dead:
                if dead:
                    with contextlib.suppress(Exception):
                        c.remove(force=True, v=True)
                        gone += 1
        return gone
