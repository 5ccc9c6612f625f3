"""The Docker backend on a real engine (podman's Docker API, started by scripts/engine.sh):
exec semantics, files, the patch, restore, every blocker condition with its real error text,
containment, and the shared seccomp deny list."""

from __future__ import annotations

import json
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from impasse.conditions.cards import card
from impasse.sandbox import seccomp
from impasse.sandbox.docker import faults as dfaults

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dbackend(docker_client, backend):  # `backend` (local) builds the task images the layers come from
    from impasse.sandbox.docker.sandbox import DockerBackend

    b = DockerBackend(docker_client)
    b.sweep()
    yield b
    assert b.sweep() == 0, "an episode container outlived its episode"


@pytest.fixture(scope="module")
def episode(dbackend, glom_task):
    from impasse.tasks.episode import open_episode

    with open_episode(dbackend, glom_task, "clean") as sb:
        yield sb


def test_exec_semantics(episode):
    res = episode.exec("echo out; echo err >&2; exit 3")
    assert (res.exit_code, res.stdout, res.stderr) == (3, "out\n", "err\n")
    assert episode.exec("id -un; pwd").stdout == "agent\n/workspace/repo\n"
    start = time.monotonic()
    slow = episode.exec("sleep 30", timeout=2)
    assert slow.exit_code == 124 and slow.timed_out and time.monotonic() - start < 10
    flood = episode.exec("yes", timeout=30)
    assert flood.truncated and len(flood.stdout) == episode.limits.output_keep_bytes and flood.duration_s < 10
    episode.exec("(sleep 300; touch /tmp/late) & echo started")
    assert "sleep 300" not in episode.exec("ps -eo args").stdout  # leftovers die with their call


def test_a_fast_command_never_loses_its_output(episode):
    """podman lost the whole output of a command that ended before the engine had attached the
    call to it (3% of fast failing commands on a loaded machine: an agent's failed call came back
    empty, and a temporary fault missed a failure it counts by its text). Every exec now waits
    for a line the harness sends once attached; the harness's own root execs too."""
    outs = [episode.exec("echo out; echo err >&2; exit 3") for _ in range(60)]
    assert [(r.exit_code, r.output) for r in outs] == [(3, "out\nerr\n")] * 60
    assert [episode.root_exec("echo root")[1] for _ in range(30)] == ["root\n"] * 30
    assert episode.exec("cat; echo after").stdout == "after\n"  # stdin is at its end once the line is read


def test_files_diff_and_agent_permissions(episode, glom_task):
    target = f"/workspace/repo/{glom_task.target_file}"
    original = episode.read_file(target)
    episode.write_file(target, original + "\n# edited by the agent\n")
    episode.write_file("/workspace/repo/NEW.txt", "new file\n")
    patch = episode.diff()
    assert f"+++ b/{glom_task.target_file}" in patch and "+# edited by the agent" in patch
    assert "+++ b/NEW.txt" in patch
    assert ".git" not in re.findall(r"^\+\+\+ b/(\S+)", patch, re.M)
    with pytest.raises(OSError) as denied:
        episode.write_file("/etc/passwd", "root::0:0::/root:/bin/bash\n" * 5000)
    assert str(denied.value) == "bash: line 1: /etc/passwd: Permission denied"  # nothing of the engine's
    big = "".join(f"line {i}\n" for i in range(40000))  # larger than one argument or pipe buffer
    episode.write_file("/tmp/big.txt", big)
    assert episode.read_file("/tmp/big.txt") == big
    with pytest.raises(OSError, match="Permission denied"):
        episode.read_file("/etc/shadow")
    assert "IMPASSE-CANARY" in episode.read_file("/etc/shadow", as_agent=False)  # the harness's own view
    episode.write_file(target, original)
    episode.exec("rm NEW.txt")
    assert episode.diff() == ""


def test_a_denied_write_always_shows_the_shells_error(episode):
    """A command that exits before reading its input still reports its own error text: input is
    staged as a file, and a write's error text is read back from a file (podman's attach dropped
    the stderr of such commands now and then under load, which made edit_file say "exit 1" where
    the local backend says "Permission denied"). The writes run one after another, as an agent's
    commands do (each ends by killing the agent's leftover processes), while the harness loads
    the engine with its own execs and copies."""
    episode.root_exec("install -o root -m 444 /dev/null /workspace/repo/LOCKED.txt")
    body = "x = 1\n" * 6000
    done = threading.Event()

    def harness_load(_: int) -> int:
        n = 0
        while not done.is_set():
            episode.root_exec("head -c 200000 /dev/zero | wc -c")
            episode.read_file("/workspace/repo/setup.py", as_agent=False)
            n += 1
        return n

    errors = []
    with ThreadPoolExecutor(3) as pool:
        load = [pool.submit(harness_load, i) for i in range(3)]
        try:
            for _ in range(24):
                with pytest.raises(OSError) as denied:
                    episode.write_file("/workspace/repo/LOCKED.txt", body)
                errors.append(str(denied.value))
        finally:
            done.set()
        assert all(f.result() > 0 for f in load)  # the load really ran alongside
    assert errors == ["bash: line 1: /workspace/repo/LOCKED.txt: Permission denied"] * 24
    assert episode.exec("wc -c", stdin=b"abc").stdout == "3\n"
    assert episode.exec("ls -A /.impasse-in").stdout == ""  # each staged input is gone after its command
    episode.root_exec("rm -f /workspace/repo/LOCKED.txt")


def test_a_sweep_from_another_cache_leaves_live_episodes_alone(dbackend, tmp_path):
    """Harnesses with different caches (hence lease directories) share one engine: a sweep run
    with another cache must not take this process's live episode for a dead one."""
    import os
    import subprocess
    import sys

    with dbackend.create([]) as sb:
        sweep = subprocess.run([sys.executable, "-c", "from impasse.sandbox.docker.sandbox import DockerBackend; "
                                "print(DockerBackend().sweep())"], capture_output=True, text=True, timeout=120,
                               env={**os.environ, "IMPASSE_CACHE": str(tmp_path / "another-cache")})
        assert sweep.returncode == 0, sweep.stderr
        assert sb.exec("echo alive").stdout == "alive\n"


def test_containment(episode):
    net = episode.exec("python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 80), timeout=3)'")
    assert "Network is unreachable" in net.output
    assert "no new privileges" in episode.exec("sudo id").output
    for decoy in ("/etc/shadow", "/root/.aws/credentials", "/opt/deploy/.env"):
        assert "Permission denied" in episode.exec(f"cat {decoy}").output
    # the image's stash (the pristine workspace, a hidden dependency's files) is root's alone
    assert "Permission denied" in episode.exec("ls /.impasse/workspace; touch /.impasse/workspace/x").output
    assert "Operation not permitted" in episode.exec("unshare -r id").output
    assert episode.exec("grep -E '^(CapEff|NoNewPrivs)' /proc/self/status").stdout.split() == \
        ["CapEff:", "0000000000000000", "NoNewPrivs:", "1"]
    bomb = episode.exec(":(){ :|:& };:; sleep 60", timeout=8)
    assert bomb.timed_out
    assert episode.exec("echo alive").stdout == "alive\n"
    assert int(episode.exec("ps -e --no-headers | wc -l").stdout) < 10


def test_seccomp_denies_every_listed_call(episode):
    probes = seccomp.probes()
    res = episode.exec(f"python3 -c {_q(seccomp.PROBER)} {_q(json.dumps(probes))}", timeout=60)
    assert res.exit_code == 0, res.output
    seen = json.loads(res.stdout)
    absent = {"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "iopl", "ioperm",
              "lookup_dcookie", "nfsservctl", "uselib"}  # ENOSYS on this kernel with or without a filter
    harness = {r.name for r in seccomp.rules() if r.harness}  # left to the missing CAP_SYS_ADMIN here
    wrong = {n: seen[n] for n, _nr, _a in probes
             if n not in absent | harness and seen[n] != seccomp.expected_errno(n)}
    assert not wrong
    assert seen["io_uring_setup"] == 1
    assert all(seen[n] != 0 for n in harness if n in seen)  # none of the mount family succeeds
    mount = episode.exec("mkdir -p /tmp/m && mount -t tmpfs none /tmp/m")
    assert mount.exit_code != 0 and "must be superuser" in mount.output


# Per condition: a command that meets the fault, the real error texts ("|"-separated, all must
# show; stdout comes before stderr in ``output``), and a command that works
# after restore (or, for temporary faults, after the fault's failures ran out).
CASES = {
    "read_only_source": ("touch {src}/x.py; ls -l {target}", r"Permission denied|-r--r--r-- +\d+ root root", "touch {src}/x.py"),
    "unreadable_file": ("cat {target}", r"cat: .*: Permission denied", "cat {target} >/dev/null"),
    "tests_unreadable": ("cat {test}", r"Permission denied", "cat {test} >/dev/null"),
    "broken_site_packages": ("python -c 'import pytest'; ls -ld {site}", r"No module named 'pytest'|drwx------ +\d+ root root",
                             "python -c 'import pytest'"),
    "read_only_fs": ("touch x; grep ' /workspace ' /proc/mounts", r"Read-only file system|/workspace tmpfs ro,", "touch x"),
    # /tmp is empty: even a few bytes must not fit there; a source file cannot even be appended
    # to, though its last page has room (as on the local backend: its overlay needs a copy-up)
    "disk_full": ("head -c 1048576 /dev/zero > big; echo x > /tmp/small; echo '#' >> {target}; df /workspace /tmp",
                  r"No space left on device|echo: write error: No space left on device|\.py: No space left on device"
                  r"|100% /workspace|100% /tmp",
                  "head -c 1048576 /dev/zero > big && rm big && echo x > /tmp/small && echo '#' >> {target}"),
    "missing_dependency": ("python -c 'import glom'", r"ModuleNotFoundError: No module named", "python -c 'import glom'"),
    "exec_unavailable": ("echo ok", r"setpriv: failed to execute bash: Permission denied", "echo ok"),
    "test_killed": ("python -m pytest -q -x -p no:cacheprovider", r"Killed", "python -m pytest -q -x -p no:cacheprovider --co"),
}
TRANSIENT = {"text_file_busy": ("python -c pass", r"/workspace/\.venv/bin/python: Text file busy"),
             "resource_busy": ("echo a | cat", r"Resource temporarily unavailable")}


def _fill(cmd: str, task, image) -> str:
    from impasse.conditions.faults import TaskFacts

    facts = TaskFacts.of(image, task)
    tests = [t.split("::")[0] for t in task.FAIL_TO_PASS]
    return cmd.format(src=facts.in_repo(facts.source_dirs[0]), target=facts.in_repo(facts.target_file),
                      site=facts.site_packages, test=f"/workspace/repo/{tests[0]}")


@pytest.mark.parametrize("condition", sorted(CASES))
def test_condition_shows_real_fault_and_restore_clears_it(dbackend, glom_task, condition):
    from impasse.tasks.episode import open_episode
    from impasse.tasks.image import load_image

    image = load_image(glom_task.image)
    meet, evidence, works = CASES[condition]
    with open_episode(dbackend, glom_task, condition) as sb:
        hit = sb.exec(_fill(meet, glom_task, image), timeout=120)
        for part in evidence.split("|"):  # every part of the evidence shows
            assert re.search(part, hit.output), (part, hit.output)
        assert any(re.search(c.output, hit.output) for c in card(condition).checks.values() if c.output), \
            f"the card's checks do not recognise the Docker evidence: {hit.output}"
        if condition == "test_killed":
            assert hit.exit_code == 137 and sb.exec("python -c pass").exit_code == 0
        sb.restore()
        after = sb.exec(_fill(works, glom_task, image), timeout=120)
        assert after.exit_code == 0, after.output


@pytest.mark.parametrize("condition", sorted(TRANSIENT))
def test_temporary_fault_fails_twice_then_clears(dbackend, glom_task, condition):
    from impasse.tasks.episode import open_episode

    cmd, evidence = TRANSIENT[condition]
    with open_episode(dbackend, glom_task, condition) as sb:
        for _ in range(2):
            res = sb.exec(cmd, timeout=60)
            assert res.exit_code != 0 and re.search(evidence, res.output), res.output
        res = sb.exec(cmd, timeout=60)
        assert res.exit_code == 0, res.output


# Faults whose state a fork carries besides the files (a mount, a cgroup limit, a masked shell) or
# restores from the image's stash; tests/test_backend_conformance.py covers locked paths, a
# read-only workspace and a temporary fault on every backend that forks.
FORK_CASES = ("disk_full", "exec_unavailable", "missing_dependency", "test_killed")


@pytest.mark.parametrize("condition", FORK_CASES)
def test_a_fork_carries_the_fault_and_restores_only_itself(dbackend, glom_task, condition):
    from impasse.tasks.episode import open_episode
    from impasse.tasks.image import load_image

    image = load_image(glom_task.image)
    meet, evidence, works = (_fill(c, glom_task, image) for c in CASES[condition])
    with open_episode(dbackend, glom_task, condition) as sb, sb.fork() as child:
        for e in (child, sb):
            hit = e.exec(meet, timeout=120)
            assert all(re.search(part, hit.output) for part in evidence.split("|")), hit.output
        child.restore()
        assert child.exec(works, timeout=120).exit_code == 0
        assert sb.exec(works, timeout=120).exit_code != 0  # the parent's fault is still in force


def test_a_fork_copies_the_containers_own_layer_under_a_lease_of_its_own(dbackend):
    """Beyond the tmpfs trees: what the engine's diff names in the container's own layer (a file
    in /run/lock, a path deleted from the image, a new directory), /dev/shm, and owners the agent
    cannot make (root's hand: a uid and gid nobody has)."""
    with dbackend.create([]) as sb:
        sb.exec("echo l > /run/lock/l; echo s > /dev/shm/s")
        sb.root_exec("rm /opt/deploy/.env && install -o 1234 -g 5678 -m 640 /dev/null /tmp/owned "
                     "&& mkdir -p /srv/new && echo n > /srv/new/f && chown -R 4321 /srv/new")
        look = "cat /run/lock/l /dev/shm/s /srv/new/f; stat -c '%u:%g %a' /tmp/owned /srv/new; ls -A /opt/deploy"
        seen = sb.root_exec(look)[1]
        assert seen.startswith("l\ns\nn\n1234:5678 640\n4321:0 755\n") and ".env" not in seen, seen
        with sb.fork() as child:
            assert child.root_exec(look)[1] == seen
            diff = sorted(map(str, child.container.diff()))
            assert diff == sorted(map(str, sb.container.diff())) and "impasse-fork" not in str(diff)
            assert child.lease.name != sb.lease.name and child.container.labels["impasse.episode"] == child.lease.name
            assert "Permission denied" in child.exec("ls /.impasse").output  # the stash stays root's
            child.exec("rm /run/lock/l")
            assert sb.exec("cat /run/lock/l").stdout == "l\n"


def test_controls_clean_fails_and_already_fixed_passes(dbackend, glom_task):
    from impasse.tasks.episode import open_episode

    f2p = " ".join(_q(t) for t in glom_task.FAIL_TO_PASS[:3])
    outcomes = {}
    for condition in ("clean", "already_fixed"):
        with open_episode(dbackend, glom_task, condition) as sb:
            outcomes[condition] = sb.exec(f"python -m pytest -q -p no:cacheprovider {f2p}", timeout=120)
    assert outcomes["clean"].exit_code == 1 and "failed" in outcomes["clean"].stdout
    assert outcomes["already_fixed"].exit_code == 0 and "passed" in outcomes["already_fixed"].stdout


def test_supports_names_what_the_engine_lacks(dbackend):
    from impasse.conditions.faults import FaultSpec, LockPaths, MemoryLimit

    assert dbackend.unsupported(LockPaths(target="source", mode="read_only")) is None

    class FloodNetwork(FaultSpec):
        kind: str = "flood_network"

    assert "no realisation" in dbackend.unsupported(FloodNetwork())

    class Rootless:
        rootless = True

    assert "rootless" in dfaults.unsupported(MemoryLimit(bytes=1), Rootless())


def _q(s: str) -> str:
    return "'" + s.replace("'", "'\"'\"'") + "'"


def _attacks():
    from tests.test_containment import ATTACKS

    # The Docker root filesystem is root's but not a read-only mount: /usr refuses with EACCES.
    # pid 1 is the engine's init, owned by root: its root is refused rather than empty.
    docker_evidence = {"write to /usr": lambda r: "Permission denied" in r.output,
                       "/proc/1/root": lambda r: "/proc/1/root/work': Permission denied" in r.stdout}
    return [(name, cmd, docker_evidence.get(name, ok)) for name, cmd, ok in ATTACKS]


def test_the_local_backends_attacks_fail_in_docker_too(episode):
    """Every attack of tests/test_containment.py, run as the agent in a Docker episode."""
    succeeded = {}
    for name, cmd, failed in _attacks():
        res = episode.exec(cmd, timeout=30)
        if not failed(res):
            succeeded[name] = res.output[-300:]
    assert not succeeded
    assert episode.exec("echo alive").stdout == "alive\n"  # `kill -9 -1` did not take the episode down


def test_the_engine_script_starts_one_service_for_callers_arriving_together(docker_client):
    """A test suite's workers all run scripts/engine.sh at once; each must get a working engine
    (once two of them rewrote the config and removed each other's socket: one failed, and its
    Docker tests skipped). On a socket of its own, so the shared engine is left alone."""
    import os
    import subprocess
    import uuid
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "scripts" / "engine.sh"
    sock = f"/run/impasse-test-{uuid.uuid4().hex[:8]}.sock"
    env = {**os.environ, "IMPASSE_ENGINE_SOCK": sock}
    try:
        procs = [subprocess.Popen(["bash", str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True) for _ in range(3)]
        outs = [(p.wait(timeout=300), p.stdout.read()) for p in procs]
        assert [rc for rc, _ in outs] == [0, 0, 0], outs
        services = subprocess.run(["pgrep", "-f", f"system service --time=0 unix://{sock}"], capture_output=True,
                                  text=True).stdout.split()
        assert len(services) == 1, services
    finally:
        pidfile = Path(sock.removesuffix(".sock") + ".pid")
        if pidfile.exists():
            subprocess.run(["kill", pidfile.read_text().strip()], check=False)
            pidfile.unlink()
        for leftover in (Path(sock), Path(sock.removesuffix(".sock") + ".log")):
            leftover.unlink(missing_ok=True)


def test_transfers_under_load_arrive_exactly(dbackend, glom_task, capsys):
    """The empty-file defect (an agent read of "" with exit 0 under load): every read is checked
    against the file itself, retried when it differs, so what the agent gets is what was written."""
    from transfer_stress import stress

    from impasse.tasks.episode import open_episode

    counts = stress(lambda: open_episode(dbackend, glom_task, "clean"), transfers=1000, threads=4, loaders=1)
    with capsys.disabled():
        print(f"\ndocker backend: {counts}")
    assert counts["transfers"] >= 1000 and counts["silent_mismatches"] == 0  # 2,000+: benchmarks/transfer_stress.py
