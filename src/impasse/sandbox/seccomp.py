"""The syscall deny list (``seccomp_denies.yaml``) as a libseccomp BPF program (local backend)
and as an OCI/Docker seccomp JSON profile (Docker backend): one list, so both backends refuse
the same calls with the same errno. Also the probe a test runs inside a sandbox to check it."""

from __future__ import annotations

import errno
import hashlib
import json
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

DENIES = Path(__file__).with_name("seccomp_denies.yaml")


@dataclass(frozen=True)
class Rule:
    name: str
    errno: int
    arg: int | None = None
    mask: int = 0
    value: int = 0
    probe: tuple | None = None
    harness: bool = False


@cache
def rules() -> tuple[Rule, ...]:
    """The deny list, validated: unknown errno names or malformed conditions fail loudly."""
    data = yaml.safe_load(DENIES.read_text())
    out = []
    for i, entry in enumerate(data["deny"]):
        name = entry.get("name")
        code = getattr(errno, entry.get("errno", "EPERM"), None)
        if not isinstance(name, str) or code is None:
            raise ValueError(f"{DENIES.name} entry {i}: needs a syscall `name` and a known `errno` name, got {entry}")
        when = entry.get("when") or {}
        mask = int(when.get("mask", 0))
        out.append(Rule(name, code, when.get("arg"), mask, int(when.get("value", mask)),
                        tuple(entry["probe"]) if "probe" in entry else None, bool(entry.get("harness"))))
    return tuple(out)


def digest() -> str:
    return hashlib.sha256(DENIES.read_bytes()).hexdigest()[:12]


def native_number(name: str) -> int | None:
    """This architecture's number for ``name``, or None if the architecture has no such call."""
    import pyseccomp as sc

    try:
        nr = sc.resolve_syscall(sc.Arch.NATIVE, name)
    except Exception:  # noqa: BLE001 - libseccomp raises for names it has never heard of
        return None
    return nr if nr >= 0 else None


def write_bpf(path: Path) -> Path:
    """Compile the list into a BPF program at ``path`` (for bwrap's ``--seccomp FD``)."""
    import pyseccomp as sc

    flt = sc.SyscallFilter(sc.ALLOW)
    for r in rules():
        if native_number(r.name) is None:
            continue
        if r.arg is None:
            flt.add_rule(sc.ERRNO(r.errno), r.name)
        else:
            flt.add_rule(sc.ERRNO(r.errno), r.name, sc.Arg(r.arg, sc.MASKED_EQ, r.mask, r.value))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    with open(tmp, "wb") as fh:
        flt.export_bpf(fh)
    os.replace(tmp, path)
    return path


def docker_profile() -> dict:
    """The same list as an OCI seccomp profile (``--security-opt seccomp=<json>``), less the
    ``harness`` entries (see the list's header: left to the missing CAP_SYS_ADMIN, as in Docker)."""
    syscalls = []
    for r in rules():
        if native_number(r.name) is None or r.harness:
            continue
        entry: dict = {"names": [r.name], "action": "SCMP_ACT_ERRNO", "errnoRet": r.errno}
        if r.arg is not None:
            # OCI: for MASKED_EQ, `value` is the mask and `valueTwo` the value compared with.
            entry["args"] = [{"index": r.arg, "value": r.mask, "valueTwo": r.value, "op": "SCMP_CMP_MASKED_EQ"}]
        syscalls.append(entry)
    return {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86",
                                                                  "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64"],
            "syscalls": syscalls}


def docker_profile_json() -> str:
    return json.dumps(docker_profile(), separators=(",", ":"))


# --------------------------------------------------------------------------- probing

PROBER = r'''
import ctypes, json, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
keep = []
def arg(a):
    if isinstance(a, str) and a.startswith("str:"):
        b = ctypes.create_string_buffer(a[4:].encode()); keep.append(b); return ctypes.cast(b, ctypes.c_void_p)
    if isinstance(a, str) and a.startswith("buf:"):
        b = ctypes.create_string_buffer(int(a[4:])); keep.append(b); return ctypes.cast(b, ctypes.c_void_p)
    return ctypes.c_long(a)
out = {}
for name, nr, args in json.loads(sys.stdin.read() or sys.argv[1]):
    ctypes.set_errno(0)
    rc = libc.syscall(ctypes.c_long(nr), *[arg(a) for a in args])
    out[name] = 0 if rc >= 0 else ctypes.get_errno()
print(json.dumps(out))
'''


def probes() -> list[tuple[str, int, list]]:
    """(name, number, args) of every rule that has a probe and exists on this architecture."""
    seen, out = set(), []
    for r in rules():
        nr = native_number(r.name)
        if r.probe is None or nr is None or r.name in seen:
            continue
        seen.add(r.name)
        out.append((r.name, nr, list(r.probe)))
    return out


def expected_errno(name: str) -> int:
    return next(r.errno for r in rules() if r.name == name)
