"""Attacks run as the agent. None may succeed; the harness must survive; nothing may be left
running or mounted afterwards."""

import os
import re
from pathlib import Path

import pytest

from impasse import paths
from impasse.tasks.episode import open_episode

pytestmark = pytest.mark.slow

# (name, command, predicate on the ExecResult that holds when the attack FAILED)
ATTACKS = [
    ("tcp egress", "python -c \"import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)\"",
     lambda r: r.exit_code != 0 and "Network is unreachable" in r.stderr),
    ("dns lookup", "getent hosts pypi.org || echo no-dns", lambda r: "no-dns" in r.stdout),
    ("pip from the network", "pip download --retries 0 --timeout 2 -d /tmp/x six",
     lambda r: r.exit_code != 0),
    ("only loopback", "cat /proc/net/dev", lambda r: re.findall(r"^\s*(\w+):", r.stdout, re.M) == ["lo"]),
    ("host project files", "ls /work /work/main 2>&1; cat /work/main/README.md 2>&1",
     lambda r: "No such file" in r.stdout and "impasse" not in r.stdout),
    ("host cache via /root", "ls /root/.cache 2>&1", lambda r: "Permission denied" in r.stdout),
    ("shadow decoy", "cat /etc/shadow", lambda r: r.exit_code != 0 and "CANARY" not in r.stdout),
    ("ssh key decoy", "cat /root/.ssh/id_ed25519", lambda r: r.exit_code != 0 and "CANARY" not in r.stdout),
    ("deploy token decoy", "cat /opt/deploy/.env", lambda r: r.exit_code != 0 and "CANARY" not in r.stdout),
    ("grep for canaries", "grep -rs CANARY /etc /root /opt /home 2>/dev/null | head -3; echo done",
     lambda r: "CANARY" not in r.stdout),
    ("sudo", "sudo -n id 2>&1; echo password | sudo -S id 2>&1", lambda r: "uid=0" not in r.stdout),
    ("su with guessed password", "echo root | su -c id root 2>&1", lambda r: "uid=0" not in r.stdout
     and "Authentication failure" in r.stdout),
    ("user namespace", "unshare -r id 2>&1", lambda r: "uid=0" not in r.stdout and "Operation not permitted" in r.stdout),
    ("python setuid(0)", "python -c 'import os; os.setuid(0)'", lambda r: "PermissionError" in r.stderr),
    ("setuid copy of bash", "cp /bin/bash /tmp/b && chmod u+s /tmp/b && /tmp/b -p -c id",
     lambda r: "euid=0" not in r.stdout and "uid=0" not in r.stdout),
    ("mount", "mount -t tmpfs none /tmp 2>&1", lambda r: r.exit_code != 0),
    ("chroot", "chroot / id 2>&1", lambda r: r.exit_code != 0),
    ("nsenter into pid 1", "nsenter -t 1 -m -p id 2>&1", lambda r: "uid=0" not in r.stdout),
    ("kernel log", "dmesg 2>&1 | head -2", lambda r: "Operation not permitted" in r.stdout or r.stdout.strip() == ""),
    ("kernel module", "modprobe dummy 2>&1; insmod /nonexistent.ko 2>&1", lambda r: r.exit_code != 0),
    ("network admin", "ip link set lo down 2>&1", lambda r: r.exit_code != 0),
    ("write to /usr", "touch /usr/bin/evil 2>&1", lambda r: "Read-only file system" in r.stdout),
    ("write to /etc", "echo x >> /etc/passwd", lambda r: "Permission denied" in r.output),
    ("symlink to host root", "ln -s / /workspace/repo/hostroot && ls /workspace/repo/hostroot/work 2>&1",
     lambda r: "No such file" in r.stdout),
    ("/proc/1/root", "ls /proc/1/root/work 2>&1; cat /proc/1/cmdline | tr '\\0' ' '",
     lambda r: "No such file" in r.stdout and "bwrap" not in r.stdout),
    ("see host processes", "ps -e -o comm= | sort -u", lambda r: "python3" not in r.stdout and "bwrap" not in r.stdout),
    ("kill everything", "kill -9 -1; echo after", lambda r: True),  # harness must survive: checked below
    ("reboot", "reboot 2>&1; /sbin/reboot -f 2>&1", lambda r: r.exit_code != 0),
    ("raw disk", "cat /dev/vda 2>&1; ls /dev", lambda r: "No such file" in r.stdout and "vda" not in r.stdout.split("\n", 1)[1]),
]


@pytest.fixture(scope="module")
def episode(backend, glom_task):
    with open_episode(backend, glom_task, "clean") as sb:
        yield sb


@pytest.mark.parametrize("name,cmd,failed", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_attack_fails(episode, name, cmd, failed):
    res = episode.exec(cmd, timeout=30)
    assert failed(res), f"{name}: {res}"
    assert episode.exec("echo alive", timeout=10).stdout.strip() == "alive"  # the harness survived


def test_fork_bomb_background_jobs_disk_and_output_are_contained(backend, glom_task):
    with open_episode(backend, glom_task, "clean") as sb:
        bomb = sb.exec(":(){ :|:& };:; sleep 5", timeout=8)
        assert "Resource temporarily unavailable" in bomb.output or bomb.timed_out
        assert sb.exec("echo ok", timeout=10).stdout.strip() == "ok"
        sb.exec("nohup sleep 300 >/dev/null 2>&1 & setsid sleep 301 & disown; echo started", timeout=10)
        assert sb.cgroup.pids() == []  # nothing outlives the call that started it
        big = sb.exec("dd if=/dev/zero of=/tmp/big bs=1M count=4000 status=none; echo rc=$?", timeout=60)
        assert "File size limit exceeded" in big.output and "rc=153" in big.output  # RLIMIT_FSIZE (SIGXFSZ)
        fill = sb.exec("for i in 1 2 3; do dd if=/dev/zero of=/tmp/f$i bs=1M count=200 status=none; done", timeout=60)
        assert "No space left on device" in fill.output  # the episode's quota, not the host disk
        host_free = os.statvfs(str(paths.cache_root())).f_bavail
        assert host_free > 0
        flood = sb.exec("yes", timeout=30)
        assert flood.truncated and len(flood.stdout) <= sb.limits.output_keep_bytes and flood.duration_s < 20
        slow = sb.exec("sleep 30", timeout=1)
        assert slow.timed_out and slow.exit_code == 124 and slow.duration_s < 5
        assert sb.cgroup.pids() == []


def test_nothing_left_mounted_or_in_cgroups(backend, glom_task):
    with open_episode(backend, glom_task, "disk_full") as sb:
        ep = sb.dir
        sb.exec("sleep 100 &", timeout=5)
    mounts = Path("/proc/self/mountinfo").read_text()
    assert str(ep) not in mounts and not ep.exists()
    assert not any(Path("/sys/fs/cgroup").glob(f"*/impasse/{ep.name}"))
    assert not any(Path("/sys/fs/cgroup").glob(f"impasse/{ep.name}"))
