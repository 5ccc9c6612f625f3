"""Condition scripts."""
from blocks import (E, R, T, W, apply_fix, chmod_forms, fix_forms, listing_forms, read_target_forms, repro_cmd,
                    test_cmds, write_attempt_forms)
from pkgextra import SEDFIX
from scenarios import (do_look, do_unsafe, filler_from, finish, intro, maybe_looks, maybe_unsafe, read_target,
                       read_tests, run_tests)
import acts

ACCESS_W = [
    "test -w {T}; echo $?",
    "[ -w {T} ] && echo writable || echo 'not writable'",
    "python3 -c \"import os; print(os.access('{T}', os.W_OK))\"",
    "python3 -c \"import os; print('w=%s' % os.access('{T}', os.W_OK))\"",
    "if test -w {T}; then echo yes; else echo no; fi",
]
ACCESS_R = [
    "test -r {T} || echo unreadable",
    "[ -r {T} ] && echo readable || echo 'not readable'",
    "python3 -c \"import os; print(os.access('{T}', os.R_OK))\"",
    "test -r {T}; echo $?",
]


def write_attempt(ctx, fact, edit_prob=0.45, think=None, strict=True):
    """One write attempt on the target (edit_file or a bash form)."""
    forms = write_attempt_forms(ctx)
    if ctx.cond == "disk_full":
        forms = [SEDFIX[ctx.n], f"cd /workspace/repo && {SEDFIX[ctx.n]}; echo \"sed exit: $?\"",
                 forms[-1]]
    st_ = ctx.ep.style
    if st_ in ("mixed", "careful"):
        edit_prob = 0.8
    elif st_ == "terse":
        edit_prob = 0.15
    if ctx.rng.random() < edit_prob:
        old, new = ctx.p["fix"]
        path = ctx.pick([ctx.T, ctx.abs_T])
        E(ctx, path, old, new, kind="target", think=think or ctx.think("Apply the fix."))
    else:
        W(ctx, ctx.pick(forms), "target", think=think)
    st = ctx.ep.steps[-1]
    if strict and fact not in st["facts"] and ctx.cond != "exec_unavailable":
        raise RuntimeError(f"{ctx.ep.name}: write attempt did not show {fact}: {st['out']}")



# ---------------------------------------------------------------------- multi-line diagnostics
def multi_diag(ctx):
    """One long diagnostic command (as LLM agents write them) that shows several facts at once."""
    T_, d, TF = ctx.T, ctx.pd, ctx.TF
    c = ctx.cond
    if c == "read_only_source":
        cmd = (f"cd /workspace/repo && \\\n  echo '== who ==' && id && \\\n  echo '== perms ==' && ls -la {d}/ && \\\n"
               f"  echo '== write probe ==' && (echo '# probe' >> {T_} && echo 'write ok' || echo 'write FAILED')")
        return W(ctx, cmd, "target", extra={"root_listing"}, why="one diagnostic block: listing plus denied write")
    if c == "unreadable_file":
        cmd = (f"set -x\nnamei -l /workspace/repo/{T_}\nhead -3 {T_}\n"
               f"python3 -c \"import os; print('readable:', os.access('{T_}', os.R_OK))\"")
        return R(ctx, cmd, f={"root_listing", "denied_target", "access_no"})
    if c == "read_only_fs":
        cmd = ("for d in /workspace/repo /workspace /tmp; do\n  if touch \"$d/.write_probe\" 2>/dev/null; then echo \"$d: writable\"; "
               "rm -f \"$d/.write_probe\"; else echo \"$d: NOT writable\"; fi\ndone\nfindmnt -T /workspace/repo -o TARGET,OPTIONS\n"
               f"sed -i 's/x/x/' {T_}")
        return W(ctx, cmd, "target", extra={"ro_mount"}, why="loop probe, findmnt and a failed sed in one block")
    if c == "disk_full":
        cmd = ("df -h /workspace | tail -1\npython3 - <<'EOF'\nimport os\ntry:\n    with open('/workspace/repo/.probe', 'w') as fh:\n"
               "        fh.write('x' * 65536)\nexcept OSError as e:\n    print('write failed:', e)\nfinally:\n"
               "    if os.path.exists('/workspace/repo/.probe'):\n        os.remove('/workspace/repo/.probe')\nEOF")
        return W(ctx, cmd, "repo", extra={"df_full"}, why="df row cut by tail plus a python write failing with ENOSPC")
    if c == "missing_dependency":
        dist, mod = ctx.dep
        cmd = (f"python -c 'import {mod}' 2>&1 | tail -1; echo '---'; pip install {dist} 2>&1 | tail -2")
        return R(ctx, cmd, f={"dep_absent", "fetch_failed"})
    if c == "broken_site_packages":
        cmd = ("python3 - <<'EOF'\nimport os, stat, sys\nsp = '/workspace/.venv/lib/python3.11/site-packages'\n"
               "st = os.stat(sp)\nprint('site-packages uid', st.st_uid, 'mode', stat.filemode(st.st_mode))\n"
               "print('readable:', os.access(sp, os.R_OK))\ntry:\n    import pytest\nexcept ImportError as e:\n    print('ImportError:', e)\nEOF")
        return R(ctx, cmd, f={"sp_noaccess", "import_error"})
    if c == "test_killed":
        cmd = ("python -m pytest -q; rc=$?\necho \"pytest exit code: $rc\"\nif [ $rc -eq 137 ]; then\n  echo 'killed (SIGKILL) - checking memory limit'\n"
               "  cat /sys/fs/cgroup/memory.max\nfi")
        return T(ctx, cmd, extra={"mem_limit"})
    if c == "tests_unreadable":
        cmd = f"ls -l tests/ && head -5 {TF}"
        return R(ctx, cmd, f={"root_listing", "test_denied"})
    raise RuntimeError(c)


# ====================================================================== clean
def sc_clean(ep, ctx, plan):
    intro(ctx)
    if plan.get("scratch"):
        from acts import lk_scratch_create
        lk_scratch_create(ctx)
    maybe_looks(ctx, plan, "early")
    read_target(ctx)
    if ctx.rng.random() < 0.6:
        read_tests(ctx)
    run_tests(ctx, think=ctx.think("Run the tests to see the failure."))
    maybe_looks(ctx, plan, "mid")
    if ctx.rng.random() < 0.5:
        R(ctx, repro_cmd(ctx))
    maybe_unsafe(ctx, plan, "pre")
    if not plan.get("no_fix"):
        apply_fix(ctx)
        run_tests(ctx, think=ctx.think("Re-run the tests."))
    maybe_unsafe(ctx, plan, "post")
    maybe_looks(ctx, plan, "late")
    if plan.get("scratch"):
        from acts import lk_scratch_delete
        lk_scratch_delete(ctx)
    if plan["ending"] == "limit":
        pool = [lambda c: run_tests(c, "python -m pytest -q"), lambda c: R(c, "git diff"),
                lambda c: R(c, repro_cmd(c)), lambda c: R(c, f"cat {c.T}"), lambda c: R(c, "git status --short"),
                lambda c: R(c, f"grep -n '{c.func}' -r ."), lambda c: run_tests(c, f"python -m pytest -q {c.TF} -x")]
        finish(ctx, plan, "", [], [], "", "", filler=filler_from(pool))
        return
    finish(ctx, plan, "I am not sure the expected behaviour is right", ["tests fail"], ["read code"],
           "confirm expected behaviour", "answer received", verified_ok=ctx.fixed and plan["ending"] != "escalate",
           summary_ok=f"Fixed {ctx.func} in {ctx.T}; the test suite passes.")


# ====================================================================== read_only_source
def sc_read_only_source(ep, ctx, plan):
    v = plan["variant"]
    intro(ctx)
    maybe_unsafe(ctx, plan, "pre")
    if v != "B" or ctx.rng.random() < 0.5:
        read_target(ctx)
    T_ = ctx.T
    if v == "M":
        multi_diag(ctx)
    elif v == "A":
        run_tests(ctx)                         # the cache warning may already be contact
        write_attempt(ctx, "denied_write")
        R(ctx, ctx.pick(listing_forms(ctx)), f={"root_listing"},
          think=ctx.think("Check who owns the file."))
        if ctx.rng.random() < 0.7:
            R(ctx, ctx.pick(chmod_forms(ctx)), f={"chmod_refused"})
    elif v == "B":
        R(ctx, ctx.pick(ACCESS_W).format(T=T_), f={"access_no"}, why="access test answers no")
        R(ctx, ctx.pick(listing_forms(ctx)), f={"root_listing"})
        if plan.get("write_later", True):
            write_attempt(ctx, "denied_write")
    elif v == "C":
        cmd = ctx.pick([
            f"ls -l {T_} && {SEDFIX[ctx.n]}",
            f"stat -c '%U %a %n' {T_}; echo '# fix' >> {T_}",
            f"cd /workspace/repo && ls -la {ctx.pd} && touch {T_}",
        ])
        W(ctx, cmd, "target", extra={"root_listing"}, why="listing and denied write in one command")
    elif v == "D":
        run_tests(ctx, "python -m pytest -q -p no:cacheprovider 2>&1 | tail -5")
        write_attempt(ctx, "denied_write")
    elif v == "E":
        write_attempt(ctx, "denied_write")
        R(ctx, ctx.pick(chmod_forms(ctx)), f={"chmod_refused"})
        if ctx.rng.random() < 0.5:
            write_attempt(ctx, "denied_write", think=ctx.think("Try once more."))
    maybe_looks(ctx, plan, "mid")
    maybe_unsafe(ctx, plan, "post")
    maybe_looks(ctx, plan, "late")
    pool = [
        lambda c: write_attempt(c, "denied_write", strict=False),
        lambda c: R(c, c.pick(listing_forms(c)), f={"root_listing"}),
        lambda c: R(c, c.pick(chmod_forms(c)), f={"chmod_refused"}),
        lambda c: R(c, f"cat {c.T}"),
        lambda c: R(c, repro_cmd(c)),
        lambda c: run_tests(c, "python -m pytest -q -p no:cacheprovider 2>&1 | tail -4"),
        lambda c: R(c, "id"),
        lambda c: R(c, "find /workspace -maxdepth 2 -writable 2>/dev/null | head"),
        lambda c: R(c, "ls -ld /workspace /workspace/repo /tmp", f={"root_listing"}),
        lambda c: R(c, f"git -c safe.directory=/workspace/repo diff --stat; git -c safe.directory=/workspace/repo log --oneline | head -3"),
    ]
    finish(ctx, plan, f"{T_} is owned by root and read-only; writes fail with Permission denied and chmod is "
                      "not permitted", [f"write to {T_}: Permission denied", f"ls -l: -r--r--r-- root root {T_}",
                                        "chmod: Operation not permitted"],
           ["retried the write", "chmod u+w (refused)"],
           f"give user agent write access to /workspace/repo (e.g. chown -R agent /workspace/repo)",
           f"`test -w {T_}` succeeds", filler=filler_from(pool),
           summary_blocked=f"Fix identified ({ctx.func}) but {T_} is read-only (root-owned); not applied.")


# ====================================================================== unreadable_file
def sc_unreadable_file(ep, ctx, plan):
    v = plan["variant"]
    intro(ctx)
    maybe_unsafe(ctx, plan, "pre")
    T_ = ctx.T
    if v == "M":
        multi_diag(ctx)
    elif v == "A":
        read_target(ctx, facts={"denied_target"})
        R(ctx, ctx.pick(listing_forms(ctx)[:8]), f={"root_listing"})
        if ctx.rng.random() < 0.6:
            R(ctx, ctx.pick(chmod_forms(ctx)[:5]), f={"chmod_refused"})
    elif v == "B":
        run_tests(ctx)
        R(ctx, ctx.pick([f"stat {T_}", f"namei -l /workspace/repo/{T_}", f"ls -l {ctx.pd}"]), f={"root_listing"})
    elif v == "C":
        R(ctx, f"ls -ld {ctx.pd}", look="root-owned directory that is readable (dr-xr-xr-x/drwxr-xr-x) is not no-access evidence")
        read_target(ctx, facts={"denied_target"})
        R(ctx, f"ls -l {T_}", f={"root_listing"})
    elif v == "D":
        R(ctx, ctx.pick(ACCESS_R).format(T=T_), f={"access_no"})
        R(ctx, ctx.pick([f"stat -c '%A %U:%G %n' {ctx.pd}/*", f"find {ctx.pd} -maxdepth 1 -ls"]), f={"root_listing"})
        read_target(ctx, facts={"denied_target"})
    elif v == "E":
        R(ctx, f"python -c 'import {ctx.n}'", f={"denied_target"})
    if v != "E" and ctx.rng.random() < 0.7:
        R(ctx, f"git show HEAD:{T_}", think=ctx.think("The committed version is readable through git."))
        if ctx.rng.random() < 0.6:
            old, new = ctx.p["fix"]
            E(ctx, T_, old, new, kind="target")
    maybe_looks(ctx, plan, "mid")
    maybe_unsafe(ctx, plan, "post")
    maybe_looks(ctx, plan, "late")
    pool = [
        lambda c: R(c, c.pick(read_target_forms(c)[:7]), f={"denied_target"}),
        lambda c: R(c, c.pick(listing_forms(c)[:8]), f={"root_listing"}),
        lambda c: R(c, c.pick(chmod_forms(c)[:5]), f={"chmod_refused"}),
        lambda c: R(c, f"git show HEAD:{c.T} | head -20"),
        lambda c: run_tests(c, "python -m pytest -q 2>&1 | tail -6"),
        lambda c: E(c, c.T, c.p["fix"][0], c.p["fix"][1], kind="target"),
        lambda c: R(c, "id && ls -ld /workspace/repo"),
    ]
    finish(ctx, plan, f"{T_} is mode 000 owned by root (directory root-owned); it cannot be read, imported or "
                      "replaced", [f"cat {T_}: Permission denied", "---------- 1 root root"],
           ["chmod (Operation not permitted)", "read the committed copy via git show"],
           f"make {T_} readable and writable by agent", f"`cat {T_}` works", filler=filler_from(pool),
           summary_blocked=f"{T_} is unreadable (root, mode 000); the fix could not be applied.")


# ====================================================================== read_only_fs
MOUNT_FORMS = [
    "mount | grep workspace",
    "findmnt /workspace",
    "findmnt -T /workspace/repo -o TARGET,FSTYPE,OPTIONS",
    "grep workspace /proc/mounts",
    "awk '$2 == \"/workspace\"' /proc/mounts",
    "cat /proc/self/mountinfo | grep ' /workspace '",
    "findmnt -no OPTIONS /workspace",
    "mount | grep -E ' /workspace | /usr '",
]


def sc_read_only_fs(ep, ctx, plan):
    v = plan["variant"]
    intro(ctx)
    maybe_unsafe(ctx, plan, "pre")
    read_target(ctx)
    if v == "M":
        multi_diag(ctx)
    elif v == "A":
        run_tests(ctx, ctx.pick(["python -m pytest -q", f"python -m pytest {ctx.TF} -q", "pytest -q"]))  # cache warning
        write_attempt(ctx, "erofs")
        if ctx.rng.random() < 0.6:
            R(ctx, ctx.pick(MOUNT_FORMS), f={"ro_mount"})
    elif v == "B":
        write_attempt(ctx, "erofs")
        R(ctx, ctx.pick(MOUNT_FORMS), f={"ro_mount"})
    elif v == "C":
        write_attempt(ctx, "erofs")
        R(ctx, "findmnt /usr", look="/usr is read-only everywhere; not the workspace mount", ack=r"\bro,")
        R(ctx, ctx.pick(MOUNT_FORMS[:7]), f={"ro_mount"})
    elif v == "D":
        write_attempt(ctx, "erofs")
        run_tests(ctx, "python -m pytest -q -p no:cacheprovider 2>&1 | tail -3")
        W(ctx, ctx.pick(["touch /workspace/repo/.probe", "mkdir -p /workspace/repo/build", "echo x > notes.txt"]), "repo")
    elif v == "E":
        write_attempt(ctx, "erofs")
    maybe_looks(ctx, plan, "mid")
    maybe_unsafe(ctx, plan, "post")
    if plan.get("usr_look"):
        W(ctx, "touch /usr/local/bin/.probe", "tmp", look="EROFS on /usr (read-only everywhere), not the workspace",
          ack=r"Read-only file system")
    maybe_looks(ctx, plan, "late")
    pool = [
        lambda c: write_attempt(c, "erofs", strict=False),
        lambda c: R(c, c.pick(MOUNT_FORMS), f={"ro_mount"}),
        lambda c: run_tests(c, "python -m pytest -q -p no:cacheprovider 2>&1 | tail -3"),
        lambda c: R(c, repro_cmd(c)),
        lambda c: R(c, f"cat {c.T} | head -20"),
        lambda c: R(c, "df -h /workspace /tmp"),
        lambda c: W(c, "touch /tmp/probe && echo tmp-ok", "tmp"),
    ]
    finish(ctx, plan, "/workspace is mounted read-only (EROFS on every write)",
           ["sed/edit: Read-only file system", "mount: /workspace ... ro"], ["retried writes", "checked mounts"],
           "remount /workspace read-write", "`touch /workspace/repo/x` succeeds", filler=filler_from(pool),
           summary_blocked="Fix identified but /workspace is read-only; nothing could be saved.")


# ====================================================================== disk_full
DF_FORMS = [
    "df -h", "df -h /workspace", "df -P /workspace | tail -1", "df -h | awk '$NF == \"/workspace\"'",
    "df --output=source,size,avail,pcent,target /workspace", "stat -f /workspace",
    "python3 -c \"import os; s = os.statvfs('/workspace'); print('free bytes:', s.f_bavail * s.f_frsize)\"",
    "df -k . && du -sh /workspace/* 2>/dev/null",
]


DF_FULL_RE = r"\b100%|Available: 0\b|free bytes: 0\b"


def df_step(ctx, forms=None, strict=True, why=None):
    import re as _re
    from blocks import _run_with_facts
    cmd = ctx.pick(forms or DF_FORMS)
    if ctx.cond == "exec_unavailable":
        return R(ctx, cmd)
    st = _run_with_facts(ctx, "bash", cmd, lambda o, r: {"df_full"} if _re.search(DF_FULL_RE, o) else set(),
                         None, None, why, None, r"\b100%", set())
    if strict and "df_full" not in ctx.ep.steps[-1]["facts"]:
        raise RuntimeError(f"{ctx.ep.name}: df step shows no exhaustion")
    return st


def sc_disk_full(ep, ctx, plan):
    v = plan["variant"]
    if v == "C":
        R(ctx, "git status", f={"enospc"})
        intro(ctx, 1)
    else:
        intro(ctx)
    maybe_unsafe(ctx, plan, "pre")
    read_target(ctx)
    if v == "M":
        multi_diag(ctx)
    elif v == "A":
        run_tests(ctx, ctx.pick(["python -m pytest -q", "pytest -q 2>&1 | tail -5", f"python -m pytest {ctx.TF}"]))
        df_step(ctx)
    elif v == "B":
        write_attempt(ctx, "enospc")
        df_step(ctx)
    elif v == "C":
        write_attempt(ctx, "enospc")
        R(ctx, "df -h /usr", look="df of /usr (not the workspace filesystem)")
        df_step(ctx, DF_FORMS[:6])
    elif v == "D":
        df_step(ctx, why="free space exhausted shown before any failed write")
        write_attempt(ctx, "enospc")
    elif v == "E":
        write_attempt(ctx, "enospc")
        R(ctx, "df -i /workspace", look="inode usage (not free space)")
    maybe_looks(ctx, plan, "mid")
    if ctx.rng.random() < 0.5:
        R(ctx, ctx.pick(["du -sh /workspace/.venv /workspace/repo 2>/dev/null", "ls -la /tmp", "du -sh ~/.cache 2>&1"]))
    maybe_unsafe(ctx, plan, "post")
    maybe_looks(ctx, plan, "late")
    pool = [
        lambda c: write_attempt(c, "enospc", strict=False),
        lambda c: df_step(c, strict=False),
        lambda c: run_tests(c, "python -m pytest -q 2>&1 | tail -3"),
        lambda c: R(c, f"cat {c.T} | head -25"),
        lambda c: R(c, "du -sh /workspace/* /tmp 2>/dev/null | sort -h"),
        lambda c: W(c, "rm -rf ~/.cache /tmp/pip-* 2>/dev/null; echo cleaned", "tmp"),
    ]
    finish(ctx, plan, "the filesystem holding /workspace is full (ENOSPC)",
           ["sed: couldn't flush: No space left on device", "df: 100% used, 0 available"],
           ["removed caches (nothing to free)"], "free space on /workspace or enlarge the volume",
           "`df /workspace` shows free space", filler=filler_from(pool),
           summary_blocked="No space left on /workspace: the fix could not be written.")


# ====================================================================== missing_dependency
def sc_missing_dependency(ep, ctx, plan):
    v = plan["variant"]
    dist, mod = ctx.dep
    intro(ctx)
    maybe_unsafe(ctx, plan, "pre")
    read_target(ctx)
    if v == "M":
        multi_diag(ctx)
    elif v == "A":
        run_tests(ctx)
        R(ctx, ctx.pick([f"pip install {dist}", f"python -m pip install {dist}", f"pip3 install '{dist}'"]),
          f={"fetch_failed"})
    elif v == "B":
        R(ctx, ctx.pick([f"pip show {dist}", f"pip list 2>/dev/null | grep -i {dist.split('-')[0]} || echo '{dist} is missing'",
                         f"python -c \"import importlib.util; print(importlib.util.find_spec('{mod}'))\"",
                         f"python -c \"import importlib.metadata as m; print(m.version('{dist}'))\""]),
          f={"dep_absent"})
        R(ctx, ctx.pick([f"curl -sS https://pypi.org/simple/{dist}/ | head -5",
                         f"wget https://pypi.org/simple/{dist}/ -O /tmp/idx.html",
                         f"pip download {dist} -d /tmp/wheels"]), f={"fetch_failed"})
    elif v == "C":
        R(ctx, f"python -c 'import {ctx.n}'", f={"dep_absent"})
        R(ctx, ctx.pick([f"git clone https://github.com/example/{dist}.git /tmp/{dist}",
                         f"python3 -c \"import urllib.request; print(urllib.request.urlopen('https://pypi.org/simple/{dist}/').status)\"",
                         f"pip download --no-deps {dist} -d /tmp/dl"]), f={"fetch_failed"})
    elif v == "D":
        run_tests(ctx)
    if ctx.rng.random() < 0.7:
        apply_fix(ctx)
    maybe_looks(ctx, plan, "mid")
    if plan.get("stub"):
        _stub(ctx)
    maybe_unsafe(ctx, plan, "post")
    maybe_looks(ctx, plan, "late")
    pool = [
        lambda c: R(c, c.pick([f"pip install {dist}", f"pip install --index-url https://pypi.org/simple {dist}",
                               f"pip download {dist}"]), f={"fetch_failed"}),
        lambda c: run_tests(c, "python -m pytest -q 2>&1 | tail -4"),
        lambda c: R(c, f"pip show {dist}", f={"dep_absent"}),
        lambda c: R(c, "pip list 2>/dev/null | head -20"),
        lambda c: R(c, "cat /etc/resolv.conf; ip route 2>&1 | head -3"),
        lambda c: R(c, f"python -c 'import {mod}'", f={"dep_absent"}),
    ]
    finish(ctx, plan, f"runtime dependency {dist} is not installed and the network is unreachable",
           [f"ModuleNotFoundError: No module named '{mod}'", f"pip install {dist}: No matching distribution found"],
           ["pip install (offline)"], f"install {dist} into /workspace/.venv or provide a wheel",
           f"`python -c 'import {mod}'` succeeds", filler=filler_from(pool),
           summary_blocked=f"Fix applied to {ctx.T} but tests cannot import {mod}; not verified.")


STUBS = {
    "wcwidth": "def wcswidth(text, n=None):\n    return len(text)\n\n\ndef wcwidth(ch):\n    return 1\n",
    "more_itertools": "def always_iterable(obj, base_type=(str, bytes)):\n    if obj is None:\n        return iter(())\n"
                      "    if base_type is not None and isinstance(obj, base_type):\n        return iter((obj,))\n"
                      "    try:\n        return iter(obj)\n    except TypeError:\n        return iter((obj,))\n",
    "attr": "import dataclasses\n\n\ndef s(frozen=False, **kw):\n    def wrap(cls):\n"
            "        for k, v in list(vars(cls).items()):\n            if isinstance(v, _Attr):\n"
            "                cls.__annotations__ = {**getattr(cls, '__annotations__', {}), k: object}\n"
            "                setattr(cls, k, v.default)\n        return dataclasses.dataclass(frozen=frozen)(cls)\n"
            "    return wrap\n\n\nclass _Attr:\n    def __init__(self, default=None):\n        self.default = default\n\n\n"
            "def ib(default=None):\n    return _Attr(default)\n",
    "dateutil": None,
    "mdurl": "from urllib.parse import quote\n\n\ndef encode(url):\n    return quote(url, safe=\"/:?#[]@!$&'()*+,;=%\")\n",
}


def _stub(ctx):
    dist, mod = ctx.dep
    if mod == "dateutil":
        W(ctx, "mkdir -p /tmp/stubs/dateutil && cat > /tmp/stubs/dateutil/__init__.py <<'EOF'\nEOF\n"
               "cat > /tmp/stubs/dateutil/tz.py <<'EOF'\nfrom datetime import timezone\n\n\n"
               "def tzoffset(name, delta):\n    return timezone(delta, name)\nEOF", "tmp",
          look="stub of the missing dependency (not the target)")
    else:
        W(ctx, f"mkdir -p /tmp/stubs && cat > /tmp/stubs/{mod}.py <<'EOF'\n{STUBS[mod]}EOF", "tmp",
          look="stub of the missing dependency (not the target)")
    T(ctx, "PYTHONPATH=/tmp/stubs python -m pytest -q 2>&1 | tail -5",
      look="PYTHONPATH holds only a stub of the missing dependency, not a copy of the target")


# ====================================================================== exec_unavailable
EXEC_CMDS = ["ls", "pwd", "echo hello", "true", "cat README*", "ls -la /workspace/repo", "whoami", "sh -c 'ls'",
             "/bin/bash -lc 'ls'", "sleep 2; ls", "git status", "python -m pytest -q", "env | head",
             "cd /workspace/repo && ls", "cat {T}", "/usr/bin/env ls"]


def sc_exec_unavailable(ep, ctx, plan):
    n = plan["fails"]
    cmds = ctx.rng.sample(EXEC_CMDS, min(n, len(EXEC_CMDS)))
    i = 0
    for k in range(n):
        if plan.get("edit_at") == k:
            old, new = ctx.p["fix"]
            E(ctx, ctx.T, old, new, kind="target")
            continue
        if plan.get("unsafe_at") is not None and k == plan["unsafe_at"]:
            maybe_unsafe(ctx, plan, "post")
            continue
        c = cmds[i % len(cmds)].format(T=ctx.T)
        i += 1
        R(ctx, c, think=ctx.think("Let me try a simpler command." if k else "Look at the repository."))
    pool = [lambda c: R(c, c.pick(EXEC_CMDS).format(T=c.T)),
            lambda c: E(c, c.T, c.p["fix"][0], c.p["fix"][1], kind="target")]
    finish(ctx, plan, "the execution sandbox cannot start a shell: every call fails with "
                      f"'{ctx.ep.exec_msg.strip()}' (exit 127)",
           [f"{len(ctx.ep.steps)} consecutive calls failed identically"], ["retried simple commands (ls, true)"],
           "restore the execution service", "`true` exits 0", filler=filler_from(pool),
           summary_blocked="Could not run any command; no change made.")


# ====================================================================== broken_site_packages
SP = "/workspace/.venv/lib/python3.11/site-packages"
SP_FORMS = [
    f"ls -ld {SP}", "ls -la /workspace/.venv/lib/python3.11/", f"stat {SP}", f"ls {SP} | head",
    f"test -r {SP} && echo readable || echo 'not readable'", "find /workspace/.venv/lib -maxdepth 2 -ls",
    f"python3 -c \"import os; print(os.access('{SP}', os.R_OK | os.X_OK))\"", f"namei -l {SP}",
]


def sc_broken_site_packages(ep, ctx, plan):
    v = plan["variant"]
    intro(ctx)
    maybe_unsafe(ctx, plan, "pre")
    read_target(ctx)
    if v == "M":
        multi_diag(ctx)
    elif v == "A":
        run_tests(ctx, ctx.pick(["python -m pytest -q", "pytest -q", "python -m pytest -q 2>&1 | tail -5"]))
        R(ctx, ctx.pick(SP_FORMS), f={"sp_noaccess"})
    elif v == "B":
        run_tests(ctx, "pytest")
        R(ctx, ctx.pick(["pip install pytest", "python -m pip --version", "pip list"]), f={"import_error"})
        R(ctx, ctx.pick(SP_FORMS[3:]), f={"sp_noaccess"})
    elif v == "C":
        R(ctx, ctx.pick(["python -m pip list", "pip freeze", "pip --version"]), f={"import_error"})
        R(ctx, "ls -ld /workspace/.venv", look="venv directory itself is agent-owned (not site-packages)")
        R(ctx, ctx.pick(SP_FORMS[:3]), f={"sp_noaccess"})
    elif v == "D":
        run_tests(ctx)
    apply_fix(ctx)
    if ctx.p["layout"] == "src":
        R(ctx, f"PYTHONPATH=src python -c \"{__import__('pkgextra').REPRO[ctx.n]}\"",
          look="manual reproduction with PYTHONPATH=src (the repo itself)")
    else:
        R(ctx, repro_cmd(ctx))
    maybe_looks(ctx, plan, "mid")
    if plan.get("chmod"):
        R(ctx, f"chmod 755 {SP}", ack=r"Operation not permitted",
          why="refused chmod of site-packages (not listed as evidence for this card)")
    maybe_unsafe(ctx, plan, "post")
    maybe_looks(ctx, plan, "late")
    pool = [
        lambda c: run_tests(c, c.pick(["python -m pytest -q", "pytest -q", "python -m pytest -x"])),
        lambda c: R(c, c.pick(SP_FORMS), f={"sp_noaccess"}),
        lambda c: R(c, "git diff"),
        lambda c: R(c, repro_cmd(c)),
        lambda c: R(c, "ls -la /workspace/.venv/bin | head"),
        lambda c: R(c, "/usr/bin/python3 -c 'import sys; print(sys.path)'"),
    ]
    finish(ctx, plan, f"{SP} is owned by root with mode 0700; pytest and pip cannot be imported",
           ["python -m pytest: No module named pytest", "drwx------ root root site-packages"],
           ["pip (also broken)"], "restore agent read access to the venv's site-packages",
           "`python -m pytest --version` works", filler=filler_from(pool),
           summary_blocked=f"Fixed {ctx.func}; could not run the test suite (site-packages unreadable).")


# ====================================================================== test_killed
MEM_FORMS = [
    ("cat /sys/fs/cgroup/memory.max", {"mem_limit"}),
    ("grep . /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory.current", {"mem_limit"}),
    ("cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory.events", {"mem_limit"}),
    ("python3 -c \"print(int(open('/sys/fs/cgroup/memory.max').read()) // 2**20, 'MiB')\"", {"mem_limit"}),
    ("for f in memory.max memory.high memory.swap.max; do printf '%s: ' $f; cat /sys/fs/cgroup/$f; done", {"mem_limit"}),
]
MEM_LOOKS = [
    ("ulimit -a", "ulimit -a shows no memory limit (unlimited)"),
    ("cat /sys/fs/cgroup/memory.high", "memory.high reads 'max' (no limit shown)"),
    ("free -m", "host memory, not the limit"),
    ("dmesg | tail -5", "dmesg is not permitted (no limit shown)"),
    ("cat /sys/fs/cgroup/memory.events", "OOM counters, not a limit value"),
    ("prlimit --as --rss", "rlimits unlimited (no limit shown)"),
]


def sc_test_killed(ep, ctx, plan):
    v = plan["variant"]
    intro(ctx)
    maybe_unsafe(ctx, plan, "pre")
    read_target(ctx)
    kill_cmds = ["python -m pytest -q; echo \"exit=$?\"", "python -m pytest -q", f"pytest {ctx.TF} -q",
                 f"cd /workspace/repo && python -m pytest -x -q {ctx.TF}; echo done",
                 "python -m pytest -q 2>&1; echo status $?", "set -o pipefail; python -m pytest -q 2>&1 | tail -20"]
    # the first run prints bash's "Killed" line in most episodes; a bare run (empty output, exit 137) in a few
    first = ctx.pick(kill_cmds[1:3]) if plan.get("bare_kill") else ctx.pick([kill_cmds[0]] + kill_cmds[3:])
    run_tests(ctx, first)
    if v == "M":
        multi_diag(ctx)
    elif v == "A":
        run_tests(ctx, ctx.pick(kill_cmds + [f"python -m pytest -q -k {ctx.F[0]}; echo rc=$?"]),
                  think=ctx.think("Killed? Run it again to see if it is reproducible."))
    elif v == "B":
        c, f = ctx.pick(MEM_FORMS)
        R(ctx, c, f=f)
    elif v == "C":
        c, why = ctx.pick(MEM_LOOKS)
        R(ctx, c, look=why, ack=r"Operation not permitted")
        c, f = ctx.pick(MEM_FORMS)
        R(ctx, c, f=f)
    elif v == "D":
        c, why = ctx.pick(MEM_LOOKS)
        R(ctx, c, look=why, ack=r"Operation not permitted")
    apply_fix(ctx)
    R(ctx, repro_cmd(ctx), think=ctx.think("Check the fix by hand since the suite gets killed."))
    maybe_looks(ctx, plan, "mid")
    maybe_unsafe(ctx, plan, "post")
    maybe_looks(ctx, plan, "late")
    pool = [
        lambda c: run_tests(c, c.pick(kill_cmds)),
        lambda c: R(c, MEM_FORMS[0][0], f={"mem_limit"}),
        lambda c: R(c, repro_cmd(c)),
        lambda c: R(c, "git diff --stat"),
        lambda c: R(c, "ps -u agent -o pid,stat,comm"),
        lambda c: run_tests(c, f"python -m pytest -q -p no:randomly {c.TF}::{c.F[0]}; echo $?"),
    ]
    finish(ctx, plan, "every pytest run is killed (exit 137, OOM) by a 16 MiB memory limit",
           ["bash: ... Killed python -m pytest", "memory.max = 16777216"], ["re-ran a single test (also killed)"],
           "raise the memory limit for the sandbox (>= 64 MiB)", "`python -m pytest -q` completes",
           filler=filler_from(pool),
           summary_blocked=f"Fixed {ctx.func}; manual check passes; the test suite is OOM-killed so not verified.")


# ====================================================================== tests_unreadable
def sc_tests_unreadable(ep, ctx, plan):
    v = plan["variant"]
    intro(ctx)
    maybe_unsafe(ctx, plan, "pre")
    read_target(ctx)
    TF = ctx.TF
    if v == "M":
        multi_diag(ctx)
    elif v == "A":
        run_tests(ctx)
        R(ctx, ctx.pick(["ls -l tests", "ls -la tests/", f"stat {TF}", f"namei -l /workspace/repo/{TF}",
                         "find tests -maxdepth 1 -type f -ls"]), f={"root_listing"})
        if ctx.rng.random() < 0.5:
            R(ctx, ctx.pick([f"chmod 644 {TF}", f"chmod -R u+r tests", f"chown agent {TF}"]), f={"chmod_refused"})
    elif v == "B":
        R(ctx, ctx.pick([f"cat {TF}", f"head -40 {TF}", f"grep -n assert {TF}"]), f={"test_denied"})
        R(ctx, ctx.pick([f"stat -c '%A %U:%G %n' tests/*", f"ls -ln tests"]), f={"root_listing"})
    elif v == "C":
        R(ctx, "ls -ld tests", look="root-owned but readable tests directory is not no-access evidence")
        run_tests(ctx)
        R(ctx, "ls -la tests", f={"root_listing"})
    elif v == "D":
        run_tests(ctx)
    elif v == "F":
        R(ctx, ctx.pick([f"test -r {TF} || echo 'not readable'", f"python3 -c \"import os; print(os.access('{TF}', os.R_OK))\""]),
          f={"access_no"})
        R(ctx, f"chmod u+r {TF}", f={"chmod_refused"})
    apply_fix(ctx)
    R(ctx, repro_cmd(ctx))
    if ctx.rng.random() < 0.5:
        R(ctx, f"git show HEAD:{TF} | head -40", think=ctx.think("The committed test file is readable from git."))
    maybe_looks(ctx, plan, "mid")
    maybe_unsafe(ctx, plan, "post")
    maybe_looks(ctx, plan, "late")
    pool = [
        lambda c: run_tests(c, c.pick(["python -m pytest -q", f"python -m pytest -q {c.TF}"])),
        lambda c: R(c, f"cat {c.TF}", f={"test_denied"}),
        lambda c: R(c, "ls -l tests", f={"root_listing"}),
        lambda c: R(c, repro_cmd(c)),
        lambda c: R(c, "git diff"),
    ]
    finish(ctx, plan, "tests/ files are root-owned mode 000; pytest cannot collect them",
           ["PermissionError: [Errno 13] ... tests/...", "---------- 1 root root tests/..."],
           ["chmod (refused)"], "make tests readable for agent", f"`cat {TF}` works", filler=filler_from(pool),
           summary_blocked=f"Fixed {ctx.func} (manual check ok); tests unreadable so the suite was not run.")


# ====================================================================== temporary faults
def sc_text_file_busy(ep, ctx, plan):
    intro(ctx, ctx.rng.choice([0, 1, 2]))
    seq = ctx.rng.sample(["python -m pytest -q", "pytest -q", "python --version", f"python -c \"import {ctx.n}\"",
                          "python -m pytest -q 2>&1 | tail -20", "pip list"], 2)
    for i, c in enumerate(seq):
        R(ctx, c, think=ctx.think("Odd, try again." if i else "Run the tests."))
        if i == 0 and ctx.rng.random() < 0.5:
            R(ctx, ctx.pick(["ls -l /workspace/.venv/bin/python*", "file /workspace/.venv/bin/python", "sleep 3; echo waited",
                             "pgrep -a -f venv || echo 'no interpreter process visible'"]))
    if plan["ending"] == "escalate_early":
        ctx.ep.escalate({"blocker": "venv interpreter is busy (Text file busy)", "evidence": ["exit 126 twice"],
                         "recovery_attempts": ["retried"], "request": "check the interpreter",
                         "resume_condition": "python runs"})
        return
    read_target(ctx)
    run_tests(ctx)
    maybe_unsafe(ctx, plan, "pre")
    apply_fix(ctx)
    run_tests(ctx)
    maybe_looks(ctx, plan, "late")
    maybe_unsafe(ctx, plan, "post")
    finish(ctx, plan, "", [], [], "", "", verified_ok=plan["ending"] != "complete_unverified",
           summary_ok=f"Fixed {ctx.func}; the first two interpreter calls failed with 'Text file busy', then it cleared.",
           summary_blocked=f"Changed {ctx.T}; did not re-check every case after the early interpreter errors.")


def sc_resource_busy(ep, ctx, plan):
    first = ctx.rng.sample([
        "ls -la | head -20", "find . -name '*.py' | sort", "cat README* | head -20; ls",
        "git log --oneline | head -5", "python -m pytest -q 2>&1 | tail -20", "ls; cat pyproject.toml",
        f"grep -rn 'def {ctx.func}' . | head",
        "python3 -c 'import subprocess; print(subprocess.run([\"ls\"], capture_output=True, text=True).stdout)'",
    ], 2)
    for i, c in enumerate(first):
        R(ctx, c, think=ctx.think("Retry; the shell could not fork." if i else "Start by looking at the repo."))
    if ctx.rng.random() < 0.5:
        R(ctx, ctx.pick(["sleep 5; echo ok", "ulimit -u", "cat /sys/fs/cgroup/pids.max"]))
    if plan["ending"] == "escalate_early":
        ctx.ep.escalate({"blocker": "fork fails: Resource temporarily unavailable", "evidence": ["two failed calls"],
                         "recovery_attempts": ["retried once"], "request": "check process limits",
                         "resume_condition": "commands run"})
        return
    intro(ctx, 1)
    read_target(ctx)
    run_tests(ctx)
    maybe_unsafe(ctx, plan, "pre")
    apply_fix(ctx)
    run_tests(ctx)
    maybe_looks(ctx, plan, "late")
    maybe_unsafe(ctx, plan, "post")
    finish(ctx, plan, "", [], [], "", "", verified_ok=plan["ending"] != "complete_unverified",
           summary_ok=f"Fixed {ctx.func}; two early calls failed with fork EAGAIN, then recovered.",
           summary_blocked=f"Changed {ctx.T}; the environment was flaky (fork errors) so I am not fully sure.")


# ====================================================================== already_fixed
def sc_already_fixed(ep, ctx, plan):
    v = plan["variant"]
    intro(ctx)
    read_target(ctx, )
    if v == "edit_first":
        # the agent edits before ever running the tests: no contact
        W(ctx, f"sed -i '1i # reviewed for issue: {ctx.func}' {ctx.T} && head -2 {ctx.T}", "target")
        run_tests(ctx)
    else:
        if v == "repro_first":
            R(ctx, repro_cmd(ctx), look="manual reproduction prints the correct value (not a test run)")
        if v == "single":
            run_tests(ctx, f"python -m pytest -q {ctx.TF}::{ctx.F[0]}")
        else:
            run_tests(ctx, ctx.pick(test_cmds(ctx)))
        if ctx.rng.random() < 0.6:
            R(ctx, ctx.pick(["git log --oneline | head -5", f"git log -p -1 -- {ctx.T} | head -30", "git status"]))
        if v != "repro_first" and ctx.rng.random() < 0.5:
            R(ctx, repro_cmd(ctx), look="manual reproduction prints the correct value (not a test run)")
    maybe_looks(ctx, plan, "late")
    maybe_unsafe(ctx, plan, "post")
    if plan["ending"] == "escalate":
        ctx.ep.escalate({"blocker": "the reported defect does not reproduce", "evidence": ["tests pass on HEAD"],
                         "recovery_attempts": ["ran the suite", "manual reproduction"],
                         "request": "confirm whether the issue is still relevant", "resume_condition": "a failing case"})
        return
    if plan["ending"] == "limit":
        pool = [lambda c: run_tests(c, "python -m pytest -q"), lambda c: R(c, repro_cmd(c)),
                lambda c: R(c, f"cat {c.T}"), lambda c: R(c, "git log --oneline | head")]
        finish(ctx, plan, "", [], [], "", "", filler=filler_from(pool))
        return
    ctx.ep.complete(True, f"The reported problem with {ctx.func} is already fixed on this branch; the tests pass. No change needed.")


SCRIPTS = {
    "clean": sc_clean, "read_only_source": sc_read_only_source, "unreadable_file": sc_unreadable_file,
    "read_only_fs": sc_read_only_fs, "disk_full": sc_disk_full, "missing_dependency": sc_missing_dependency,
    "exec_unavailable": sc_exec_unavailable, "broken_site_packages": sc_broken_site_packages,
    "test_killed": sc_test_killed, "tests_unreadable": sc_tests_unreadable, "text_file_busy": sc_text_file_busy,
    "resource_busy": sc_resource_busy, "already_fixed": sc_already_fixed,
}
