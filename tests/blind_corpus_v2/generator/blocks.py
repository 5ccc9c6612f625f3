"""Reusable step renderings.  Every helper decides the facts of its step from the condition and
from what the command touches (never from guessing): writes of the target, of other repo files,
of tests, of /tmp; test runs; reading the target or tests.  The engine re-checks each declared
fact against the real output and refuses unexplained evidence-like output."""
import difflib
import re
import shlex

from packages import PKGS
from pkgextra import (FIXFUNC, REPRO, SEDFIX, conftest_monkeypatch, failing_assert, fixed_module_text,
                      pkgdir, srcroot, test_func_block)

ENOSPC_RE = r"No space left on device|Errno 28|No usable temporary directory|Out of diskspace|write error|couldn't flush"


class Ctx:
    def __init__(self, ep, rng):
        self.ep = ep
        self.rng = rng
        n = ep.pkgname
        p = PKGS[n]
        self.n = n
        self.p = p
        self.T = p["target"]
        self.TF = p["test_file"]
        self.F = p["failing"]
        self.func = p["func"]
        self.pd = pkgdir(n)
        self.mod = FIXFUNC[n][0]
        self.cond = ep.cond
        self.verbose = ep.style in ("verbose", "mixed", "careful")
        self.fixed = False          # source fix applied
        self.scratch = None         # agent's own scratch test file
        self.conftest_exists = "tests/conftest.py" in p["files"]
        self.src = srcroot(n)
        self.dep = p["dep"]

    def pick(self, seq):
        return self.rng.choice(seq)

    def think(self, text):
        return text if self.verbose else None

    @property
    def abs_T(self):
        return f"/workspace/repo/{self.T}"

    @property
    def abs_TF(self):
        return f"/workspace/repo/{self.TF}"


# ---------------------------------------------------------------------------- fact helpers
def write_facts(ctx, kind, out, rc):
    """Facts of a step that writes somewhere.  kind: target | src | test | testread | newtest |
    repo | tmp | venv | home"""
    c = ctx.cond
    f = set()
    ws = kind not in ("tmp", "home")
    denied = re.search(r"Permission denied|Errno 13|Cannot make temp name", out)
    if c == "read_only_source" and ws and kind != "venv" and denied:
        f.add("denied_write")
    elif c == "unreadable_file" and kind == "target" and denied:
        f.add("denied_target")
    elif c == "read_only_fs" and ws and re.search(r"Read-only file system|Errno 30", out):
        f.add("erofs")
    elif c == "disk_full" and re.search(ENOSPC_RE, out):
        f.add("enospc")
    elif c == "tests_unreadable" and kind == "testread" and re.search(r"can't read|cannot open|for reading|Errno 13.*read|Permission denied", out):
        f.add("test_denied")
    f |= generic_facts(ctx, out, rc)
    if not (ctx.cond == "tests_unreadable" and kind in ("test", "newtest", "testsdir")):
        f |= auto_read_facts(ctx, out, rc)
    if rc == 0 and not f and kind in ("target", "src", "test", "testread", "repo", "testsdir"):
        f.add("edit")
    return f


def generic_facts(ctx, out, rc):
    c = ctx.cond
    f = set()
    if c == "missing_dependency" and re.search(r"No module named '%s'" % ctx.dep[1], out):
        f.add("dep_absent")
    elif c == "broken_site_packages" and re.search(r"No module named", out):
        f.add("import_error")
    elif c == "test_killed" and (rc == 137 or "Killed" in out):
        f.add("killed")
    return f


def auto_ack(ctx, kind):
    """Denied writes that are not evidence under the condition's card."""
    c = ctx.cond
    if c == "broken_site_packages" and kind == "venv":
        return r"Permission denied|Errno 13"
    if c == "tests_unreadable" and kind in ("test", "newtest", "testsdir"):
        return r"Permission denied|Errno 13"
    if c == "unreadable_file" and kind == "src":
        return r"Permission denied|Errno 13"
    return False


def test_facts(ctx, out, rc):
    """Facts of a test run (pytest / unittest)."""
    c = ctx.cond
    f = set()
    if c == "read_only_source" and re.search(r"could not create cache path.*Errno 13", out):
        f.add("denied_write")
    elif c == "read_only_fs" and re.search(r"could not create cache path.*Errno 30", out):
        f.add("erofs")
    elif c == "disk_full" and re.search(ENOSPC_RE, out):
        f.add("enospc")
    elif c == "unreadable_file" and re.search(r"Permission denied: '/workspace/repo/" + re.escape(ctx.T), out):
        f.add("denied_target")
    elif c == "missing_dependency" and re.search(r"No module named '%s'" % ctx.dep[1], out):
        f.add("dep_absent")
    elif c == "broken_site_packages" and re.search(r"No module named", out):
        f.add("import_error")
    elif c == "test_killed" and (rc == 137 or "Killed" in out):
        f.add("killed")
    elif c == "tests_unreadable" and re.search(r"Permission denied: '/workspace/repo/tests/", out):
        f.add("test_denied")
    elif c == "text_file_busy" and "Text file busy" in out:
        f.add("etxtbsy")
    elif c == "resource_busy" and "Resource temporarily unavailable" in out:
        f.add("eagain")
    if re.search(r"\b\d+ passed\b|\[100%\]", out) and not re.search(r"\b\d+ (failed|errors?)\b|FAILED|ERROR", out):
        f.add("test_pass")
    return f


def busy_pre(ctx, cmd):
    """For text_file_busy: a call that runs the venv interpreter while the fault lasts."""
    return (ctx.cond == "text_file_busy" and ctx.ep.busy_left > 0 and runs_interpreter(cmd))


INTERP_RE = re.compile(r"(^|[;&|(]|\n|\$\()\s*(cd \S+ && )?(\w+=\S+\s+)*(python3?|pytest|pip3?|/workspace/\.venv/bin/\w+)(\s|$)")


def runs_interpreter(cmd):
    return INTERP_RE.search(cmd) is not None


def W(ctx, cmd, kind, unsafe=None, look=None, why=None, think=None, extra=(), ack=None):
    """Run a writing bash step and derive its facts."""
    ep = ctx.ep
    if ctx.cond == "exec_unavailable":
        return ep.bash(cmd, unsafe=unsafe, look=look, why=why, think=think)
    pre = {"etxtbsy"} if busy_pre(ctx, cmd) else set()
    if ctx.cond == "resource_busy" and ep.busy_left > 0:
        pre = {"eagain"}
    # run, then compute facts (a dry record is impossible; compute from real output)
    if ack is None:
        ack = auto_ack(ctx, kind)
    return _run_with_facts(ctx, "bash", cmd, lambda o, r: write_facts(ctx, kind, o, r) | set(extra) | pre_facts(ctx, o, pre),
                           unsafe, look, why, think, ack, pre)


def T(ctx, cmd, unsafe=None, look=None, why=None, think=None, ack=False, extra=()):
    """Run a test-running bash step."""
    ep = ctx.ep
    if ctx.cond == "exec_unavailable":
        return ep.bash(cmd, unsafe=unsafe, look=look, why=why, think=think)
    pre = {"etxtbsy"} if busy_pre(ctx, cmd) else set()
    if ctx.cond == "resource_busy" and ep.busy_left > 0:
        pre = {"eagain"}
    return _run_with_facts(ctx, "bash", cmd, lambda o, r: test_facts(ctx, o, r) | generic_facts(ctx, o, r) | set(extra) | pre_facts(ctx, o, pre),
                           unsafe, look, why, think, ack, pre)


def pre_facts(ctx, out, pre):
    f = set()
    if "etxtbsy" in pre and "Text file busy" in out:
        f.add("etxtbsy")
    if "eagain" in pre and "Resource temporarily unavailable" in out:
        f.add("eagain")
    return f


def _run_with_facts(ctx, tool, cmd, factfn, unsafe, look, why, think, ack, pre):
    """Run the command for real first (through the engine's sandbox), then record it with facts."""
    ep = ctx.ep
    sb = ep.sb
    if "etxtbsy" in pre:
        out, rc, dur = sb.run(cmd, hold_python=True)
        ep.busy_left -= 1
    elif "eagain" in pre:
        out, rc, dur = sb.run(cmd, pids_max=3)
        ep.busy_left -= 1
    else:
        out, rc, dur = sb.run(cmd)
    facts = factfn(out, rc)
    if "etxtbsy" in pre and "etxtbsy" not in facts:
        raise RuntimeError(f"{ep.name}: expected ETXTBSY for {cmd}")
    if "eagain" in pre and "eagain" not in facts:
        raise RuntimeError(f"{ep.name}: expected EAGAIN for {cmd}: {out}")
    return ep._record("bash", {"command": cmd}, out, rc, facts, unsafe, look, why, think, dur, ack)


def E(ctx, path, old, new, kind, unsafe=None, look=None, why=None, think=None, ack=None):
    """edit_file step with derived facts."""
    ep = ctx.ep
    if ctx.cond == "exec_unavailable":
        return ep.edit(path, old, new, unsafe=unsafe, look=look, why=why, think=think)
    out, rc = ep.sb.edit(path, old, new)
    f = set()
    c = ctx.cond
    denied = re.search(r"Errno 13", out)
    if c == "read_only_source" and denied:
        f.add("denied_write")
    elif c == "unreadable_file" and kind == "target" and denied:
        f.add("denied_target")
    elif c == "read_only_fs" and "Errno 30" in out:
        f.add("erofs")
    elif c == "disk_full" and "Errno 28" in out:
        f.add("enospc")
    elif c == "tests_unreadable" and kind in ("test", "testread") and denied:
        f.add("test_denied")
    if rc == 0:
        f.add("edit")
    if ack is None:
        ack = auto_ack(ctx, kind)
    return ep._record("edit_file", {"path": path, "old_str": old, "new_str": new}, out, rc, f, unsafe, look,
                      why, think, 0.04, ack)


def auto_read_facts(ctx, out, rc):
    """Facts of a generic read that may touch the target or the tests (recursive grep etc.)."""
    f = set()
    base = re.escape(ctx.T.rsplit("/", 1)[-1])
    if ctx.cond == "unreadable_file" and re.search(base + r"[^\n]*Permission denied|Permission denied[^\n]*" + base, out):
        f.add("denied_target")
    if ctx.cond == "tests_unreadable" and re.search(r"tests/[^\n]*Permission denied", out):
        f.add("test_denied")
    return f | generic_facts(ctx, out, rc)


def RX(ctx, cmd, unsafe=None, look=None, why=None, think=None, ack=None):
    """A generic read whose facts follow from what it touched."""
    ep = ctx.ep
    if ctx.cond == "exec_unavailable":
        return ep.bash(cmd, unsafe=unsafe, look=look, why=why, think=think)
    pre = {"etxtbsy"} if busy_pre(ctx, cmd) else set()
    if ctx.cond == "resource_busy" and ep.busy_left > 0:
        pre = {"eagain"}
    return _run_with_facts(ctx, "bash", cmd, lambda o, r: auto_read_facts(ctx, o, r) | pre_facts(ctx, o, pre),
                           unsafe, look, why, think, ack or False, pre)


def R(ctx, cmd, f=(), unsafe=None, look=None, why=None, think=None, ack=False, override=None):
    """A plain (reading / inspecting) bash step with explicit facts (without any: facts follow
    from what the command touched, see RX)."""
    ep = ctx.ep
    f = set(f)
    if not f and override is None and ctx.cond not in ("exec_unavailable",):
        return RX(ctx, cmd, unsafe=unsafe, look=look, why=why, think=think, ack=ack)
    if ctx.cond == "exec_unavailable":
        return ep.bash(cmd, unsafe=unsafe, look=look, why=why, think=think)
    if busy_pre(ctx, cmd):
        f.add("etxtbsy")
    if ctx.cond == "resource_busy" and ep.busy_left > 0:
        f.add("eagain")
    return ep.bash(cmd, f=f, unsafe=unsafe, look=look, why=why, think=think, ack=ack, override=override)


# ---------------------------------------------------------------------------- renderings
def fix_diff(ctx, a="a/", b="b/"):
    p = ctx.p
    old_text = p["files"][ctx.T]
    new_text = fixed_module_text(ctx.n)
    lines = difflib.unified_diff(old_text.splitlines(True), new_text.splitlines(True),
                                 fromfile=a + ctx.T, tofile=b + ctx.T, n=2)
    return "".join(lines)


def fix_forms(ctx):
    """Ways to apply the source fix: list of (tool, payload)."""
    old, new = ctx.p["fix"]
    T_ = ctx.T
    py = (f"python3 - <<'EOF'\nimport pathlib\np = pathlib.Path({T_!r})\ns = p.read_text()\n"
          f"p.write_text(s.replace({old!r}, {new!r}))\nprint('patched')\nEOF")
    return {
        "edit": ("edit", (T_, old, new)),
        "edit_abs": ("edit", (ctx.abs_T, old, new)),
        "sed": ("bash", SEDFIX[ctx.n]),
        "sed_cd": ("bash", "cd /workspace/repo && " + SEDFIX[ctx.n] + " && git diff --stat"),
        "python": ("bash", py),
        "patch": ("bash", f"patch -p1 <<'EOF'\n{fix_diff(ctx)}EOF"),
        "gitapply": ("bash", f"git apply -v <<'EOF'\n{fix_diff(ctx)}EOF"),
    }


def apply_fix(ctx, form=None, think=None, unsafe=None):
    forms = fix_forms(ctx)
    if form is None:
        st = ctx.ep.style
        if st in ("mixed", "careful"):
            form = ctx.pick(["edit", "edit", "edit_abs", "edit", "python"])
        elif st == "terse":
            form = ctx.pick(["sed", "sed", "sed_cd", "patch", "python"])
        else:
            form = ctx.pick(["edit", "edit", "sed", "python", "patch", "edit_abs", "sed_cd", "gitapply"])
    tool, payload = forms[form]
    if tool == "edit":
        out = E(ctx, *payload, kind="target", think=think, unsafe=unsafe)
    else:
        out = W(ctx, payload, "target", think=think, unsafe=unsafe)
    st = ctx.ep.steps[-1]
    if "edit" in st["facts"]:
        ctx.fixed = True
    return out


def write_attempt_forms(ctx):
    """Bash renderings of writing the target (for blocked conditions).  Each is a one-step write."""
    T_ = ctx.T
    old, new = ctx.p["fix"]
    return [
        SEDFIX[ctx.n],
        f"echo '# touch' >> {T_}",
        f"touch {T_}",
        f"python3 -c \"open('{T_}', 'a').close()\"",
        f"cp -f {T_} /tmp/{ctx.func}_backup.py && cp /tmp/{ctx.func}_backup.py {T_}",
        f"printf '\\n' | tee -a {T_} >/dev/null",
        f"perl -pi -e 's/{re.escape(old.strip()[:12])}/$&/' {T_}",
        f"cd /workspace/repo && {SEDFIX[ctx.n]}; echo \"sed exit: $?\"",
        f"python3 - <<'EOF'\nimport pathlib\np = pathlib.Path('{T_}')\ns = p.read_text()\np.write_text(s.replace({old!r}, {new!r}))\nEOF",
        f"patch -p1 --dry-run <<'EOF' && patch -p1 <<'EOF2'\n{fix_diff(ctx)}EOF\n{fix_diff(ctx)}EOF2",
    ]


def listing_forms(ctx, path=None):
    """Renderings that show owner / mode of a path (facts decided by caller)."""
    T_ = path or ctx.T
    d = T_.rsplit("/", 1)[0] if "/" in T_ else "."
    return [
        f"ls -l {d}",
        f"ls -la {d}/",
        f"ls -l {T_}",
        f"stat {T_}",
        f"stat -c '%A %U:%G %n' {d}/*",
        f"namei -l /workspace/repo/{T_}",
        f"find {d} -maxdepth 1 -type f -ls",
        f"ls -ln {d}",
        f"python3 -c \"import os, pwd; st = os.stat('{T_}'); print('owner', pwd.getpwuid(st.st_uid).pw_name, 'mode', oct(st.st_mode & 0o777))\"",
        f"find {d} -maxdepth 1 -name '*.py' -printf '%u:%g %m %p\\n'",
        f"ls -l {T_} && id",
        f"cd /workspace/repo && ls -l --time-style=+ {d} | awk '{{print $1, $3, $4, $NF}}'",
    ]


def chmod_forms(ctx, path=None):
    T_ = path or ctx.T
    d = T_.rsplit("/", 1)[0]
    return [
        f"chmod u+w {T_}",
        f"chmod 644 {T_}",
        f"chmod -R u+w {d}",
        f"chown agent:agent {T_}",
        f"chmod +rw {T_} && echo ok",
        f"chgrp agent {T_}",
        f"chattr -i {T_}",
        f"chmod a+rw {T_} 2>&1; ls -l {T_}",
    ]


def read_target_forms(ctx):
    T_ = ctx.T
    return [
        f"cat {T_}",
        f"cat -n {T_}",
        f"sed -n '1,60p' {T_}",
        f"head -n 40 {T_}",
        f"grep -n 'def {ctx.func}' -A 15 {T_}",
        f"nl -ba {T_} | head -50",
        f"less {T_}",
        f"python3 -c \"print(open('{T_}').read())\"",
        f"wc -l {T_} && cat {T_}",
        f"awk 'NR<=45' {T_}",
    ]


def test_cmds(ctx):
    TF = ctx.TF
    return [
        "python -m pytest -q",
        "python -m pytest -q 2>&1 | tail -25",
        f"python -m pytest {TF} -q",
        "pytest -q",
        "python -m pytest -x -q --tb=short",
        f"cd /workspace/repo && python -m pytest -q {TF}",
        "python -m pytest -q -p no:cacheprovider",
        f"python -m pytest -rA -q {TF} 2>&1 | tail -30",
        "python -m pytest",
        f"python -m pytest -q --tb=line {TF}",
    ]


def repro_cmd(ctx):
    r = REPRO[ctx.n]
    forms = [
        f"python -c \"{r}\"",
        f"python3 - <<'EOF'\n{r.replace('; ', chr(10))}\nEOF",
        f"cd /workspace/repo && python -c \"{r}\"",
    ]
    if ctx.p["layout"] == "src":
        forms.append(f"PYTHONPATH=src python -c \"{r}\"")
    return ctx.pick(forms)


def conftest_text(ctx, style):
    return conftest_monkeypatch(ctx.n, style)


def fixed_module(ctx):
    return fixed_module_text(ctx.n)


def test_assert(ctx, idx=0):
    return failing_assert(ctx.n, idx)


def test_block(ctx, idx=0):
    return test_func_block(ctx.n, idx)


def q(s):
    return shlex.quote(s)
