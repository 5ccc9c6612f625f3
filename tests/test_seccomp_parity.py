"""Seccomp parity: every call in ``seccomp_denies.yaml`` is refused inside the local sandbox (and
the Docker one, see test_docker_backend.py), and the refusal comes from the filter, not from a
missing capability: the same harmless probe succeeds or fails differently without the filter,
even as root."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys

import pytest

from impasse.sandbox import seccomp

PROBES = seccomp.probes()

_LOAD_AND_PROBE = """
import sys, pyseccomp as sc
from impasse.sandbox import seccomp
flt = sc.SyscallFilter(sc.ALLOW)
for r in seccomp.rules():
    if seccomp.native_number(r.name) is None:
        continue
    args = [] if r.arg is None else [sc.Arg(r.arg, sc.MASKED_EQ, r.mask, r.value)]
    flt.add_rule(sc.ERRNO(r.errno), r.name, *args)
flt.load()
exec(compile(seccomp.PROBER, "prober", "exec"))
"""


def _run_host(code: str) -> dict[str, int]:
    out = subprocess.run([sys.executable, "-c", code, json.dumps(PROBES)], capture_output=True, text=True,
                         timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def check_denied(seen: dict[str, int], control: dict[str, int]) -> None:
    """Every probed call gave its rule's errno, except calls this kernel does not have."""
    wrong = {name: (errno.errorcode.get(seen.get(name), seen.get(name)), errno.errorcode[seccomp.expected_errno(name)])
             for name, _nr, _a in PROBES
             if control[name] != errno.ENOSYS and seen.get(name) != seccomp.expected_errno(name)}
    assert not wrong, f"calls not denied as listed (got, wanted): {wrong}"


@pytest.fixture(scope="module")
def control() -> dict[str, int]:
    if os.geteuid() != 0:
        pytest.skip("the control probe runs as root to show the filter, not a capability, refuses each call")
    return _run_host(seccomp.PROBER)


def test_deny_list_is_well_formed_and_covers_dockers_default_denies():
    names = {r.name for r in seccomp.rules()}
    docker_default_denies = {  # syscalls moby's default profile gives no capability-less container
        "io_uring_setup", "io_uring_enter", "io_uring_register", "keyctl", "add_key", "request_key", "bpf",
        "perf_event_open", "userfaultfd", "kexec_load", "kexec_file_load", "init_module", "finit_module",
        "delete_module", "mount", "umount2", "pivot_root", "setns", "unshare", "ptrace", "personality", "acct",
        "swapon", "swapoff", "reboot", "syslog", "clock_settime", "clock_adjtime", "settimeofday", "quotactl",
        "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "nfsservctl", "vm86", "vm86old",
        "process_vm_readv", "process_vm_writev", "kcmp", "iopl", "ioperm", "fanotify_init", "mbind",
        "set_mempolicy", "move_pages", "uselib", "ustat", "sysfs", "vhangup", "clone3", "fsopen", "fsmount",
        "fspick", "move_mount", "open_tree", "mount_setattr"}
    assert docker_default_denies <= names, sorted(docker_default_denies - names)
    profile = seccomp.docker_profile()
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
    in_profile = {n for s in profile["syscalls"] for n in s["names"]}
    harness = {r.name for r in seccomp.rules() if r.harness}
    assert harness == {"mount", "umount2", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree",
                       "mount_setattr"}
    assert {n for n in names if seccomp.native_number(n) is not None} - harness == in_profile
    clone_newuser = [s for s in profile["syscalls"] if s["names"] == ["clone"] and s["args"][0]["value"] == 0x10000000]
    assert clone_newuser and clone_newuser[0]["errnoRet"] == errno.EPERM


def test_unfiltered_probes_are_not_denials(control):
    """Without the filter, as root, io_uring_setup and the unprivileged-reachable calls are not
    refused: so a denial seen in a sandbox is the filter's doing."""
    for name in ("io_uring_setup", "keyctl", "userfaultfd", "unshare", "name_to_handle_at", "personality",
                 "mount", "bpf", "clone3", "perf_event_open", "ptrace", "setns"):
        assert control[name] != seccomp.expected_errno(name), (name, control[name])
    proven = [n for n, _nr, _a in PROBES if control[n] not in (seccomp.expected_errno(n), errno.ENOSYS)]
    assert len(proven) >= 35, proven


def test_filter_denies_every_listed_call_even_for_root(control):
    check_denied(_run_host(_LOAD_AND_PROBE), control)


@pytest.mark.slow
def test_local_sandbox_denies_every_listed_call(backend, control, tmp_path):
    with backend.create([]) as sb:
        res = sb.exec(f"python3 -c {_q(seccomp.PROBER)} {_q(json.dumps(PROBES))}", timeout=60)
        assert res.exit_code == 0, res.output
        seen = json.loads(res.stdout)
        check_denied(seen, control)
        assert seen["io_uring_setup"] == errno.EPERM
        unshare = sb.exec("unshare -r id")
        assert "Operation not permitted" in unshare.output and "uid=0" not in unshare.output


def _q(s: str) -> str:
    return "'" + s.replace("'", "'\"'\"'") + "'"
