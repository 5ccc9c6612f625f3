"""Fact extractors on renderings the sandbox does not produce itself (other tools' formats,
cgroup files, kernel log lines), and the look-alikes each must reject. The sandbox's own
renderings are covered by tests/test_catalogue.py on real outputs."""

import pytest

from impasse.facts import (
    access_refused,
    filesystem_full,
    locked_workspace_path,
    memory_limit_shown,
    mount_read_only,
    related,
)
from impasse.steps import Step


def step(cmd: str, out: str) -> Step:
    return Step(1, "bash", {"command": cmd}, out + "\n[exit code: 0]", 0)


@pytest.mark.parametrize("cmd,out,paths", [
    ("ls -l pkg/a.py", "-r--r--r--. 1 root wheel 12 Jan 1 00:00 pkg/a.py", {"/workspace/repo/pkg/a.py"}),
    ("ls -la pkg", "dr-xr-xr-x 2 root root 60 Jan 1 .\ndrwxr-xr-x 3 agent agent 60 Jan 1 ..",
     {"/workspace/repo/pkg"}),
    ("ls -lg pkg/a.py", "-r--r--r-- 1 root 12 Jan 1 00:00 pkg/a.py", set()),  # -g hides the owner
    ("ls -l pkg/a.py", "-rw-r--r-- 1 root root 12 Jan 1 00:00 pkg/a.py", {"/workspace/repo/pkg/a.py"}),
    ("ls -l pkg/a.py", "-rw-rw-rw- 1 root root 12 Jan 1 00:00 pkg/a.py", set()),  # root's, but open to all
    ("ls -l /etc/passwd", "-r--r--r-- 1 root root 12 Jan 1 00:00 /etc/passwd", set()),  # outside the workspace
    ("stat -c '%U:%G %a %n' pkg/a.py", "root:root 400 pkg/a.py", {"/workspace/repo/pkg/a.py"}),
    ("stat --printf='%u %A\\n' pkg/a.py", "0 -r--r--r--", {"/workspace/repo/pkg/a.py"}),
    ("find pkg -uid 0", "pkg/a.py\npkg/b.py", {"/workspace/repo/pkg/a.py", "/workspace/repo/pkg/b.py"}),
    ("find pkg -user agent", "pkg/a.py", set()),
])
def test_ownership_in_many_formats(cmd, out, paths):
    assert set(locked_workspace_path(step(cmd, out))) == paths


@pytest.mark.parametrize("cmd,out,hit", [
    ("[ -w pkg/a.py ] || echo NO", "NO", True),
    ("test -w pkg/a.py && echo yes || echo no", "yes", False),
    ("python3 -c \"import os; print(os.access('pkg/a.py', os.W_OK))\"", "True", False),
])
def test_access_answers(cmd, out, hit):
    assert bool(access_refused(step(cmd, out))) == hit


@pytest.mark.parametrize("cmd,out,hit", [
    ("cat /proc/self/mountinfo", "35 24 0:30 / /workspace ro,relatime shared:1 - ext4 /dev/sdb rw", True),
    ("mount", "/dev/sdb on /workspace/repo type ext4 (ro,relatime)", True),
    ("mount", "/dev/sdb on /workspace type ext4 (rw,relatime)\n/dev/sda on /usr type ext4 (ro)", False),
    ("findmnt -no OPTIONS /usr", "ro,nosuid", False),
])
def test_mount_flags(cmd, out, hit):
    assert bool(mount_read_only(step(cmd, out))) == hit


@pytest.mark.parametrize("cmd,out,hit", [
    ("df -P", "Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/sdb 100 95 0 95% /workspace", True),
    ("df -h", "Filesystem Size Used Avail Use% Mounted on\n/dev/loop3 64M 64M 0 100% /snap/core/1", False),
    ("df -h /workspace", "Filesystem Size Used Avail Use% Mounted on\noverlay 512M 400M 112M 79% /", False),
    ("df -i", "Filesystem Inodes IUsed IFree IUse% Mounted on\noverlay 10 10 0 100% /", False),
])
def test_free_space(cmd, out, hit):
    assert bool(filesystem_full(step(cmd, out))) == hit


@pytest.mark.parametrize("cmd,out,hit", [
    ("cat /sys/fs/cgroup/memory.max", "20971520", True),
    ("cat /sys/fs/cgroup/memory.max", "max", False),
    ("cat /sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712", False),  # "no limit" in v1
    ("dmesg | tail -2", "[12.3] Memory cgroup out of memory: Killed process 42 (python)", True),
    ("ulimit -a", "max memory size             (kbytes, -m) unlimited", False),
    ("ulimit -a", "virtual memory              (kbytes, -v) 204800", True),
])
def test_memory_limit(cmd, out, hit):
    assert bool(memory_limit_shown(step(cmd, out))) == hit


def test_related_is_same_path_or_directory_not_siblings_or_ancestors():
    assert related("/w/r/pkg/a.py", "/w/r/pkg") and related("/w/r/pkg", "/w/r/pkg/a.py")
    assert not related("/w/r/pkg/a.py", "/w/r/pkg/b.py") and not related("/w/r/pkg/a.py", "/")
