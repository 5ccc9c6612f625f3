"""A small bwrap sandbox that reproduces the conditions for real, so that step outputs are
what real tools print.  /workspace is bound from a per-episode scratch copy; commands run as
uid 2000 (agent) via setpriv with no new privileges, no network, like the reference harness.
Outputs are sanitised so that scratch paths under /tmp/bv2 never show.
"""
import os
import re
import shutil
import subprocess
import time

from packages import PKGS

ROOT = "/tmp/bv2"
FAKE = f"{ROOT}/fake"
VENV_TPL = f"{ROOT}/venvtpl/ws/.venv"
TPL = f"{ROOT}/tpl"
EPS = f"{ROOT}/eps"
MEMCG_PARENT = None

AGENT_PATH = "/workspace/.venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _bwrap(ws, tmp, home, cmd, ro_ws=False, net=False, chdir="/workspace/repo", prlimit=None,
           extra_env=None):
    args = ["bwrap", "--ro-bind", "/usr", "/usr",
            "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
            "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--ro-bind", "/etc", "/etc"]
    for f in ("passwd", "group", "shadow", "gshadow", "hostname"):
        args += ["--ro-bind", f"{FAKE}/etc/{f}", f"/etc/{f}"]
    args += ["--bind", f"{FAKE}/root", "/root",
             "--ro-bind", f"{FAKE}/opt", "/opt",
             "--perms", "0755", "--dir", "/home", "--bind", home, "/home/agent",
             ("--ro-bind" if ro_ws else "--bind"), ws, "/workspace",
             "--bind", tmp, "/tmp",
             "--proc", "/proc", "--dev", "/dev",
             "--perms", "0755", "--dir", "/sys", "--perms", "0755", "--dir", "/sys/fs",
             "--ro-bind", os.path.join(os.path.dirname(ws), "cgroup"), "/sys/fs/cgroup",
             "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", "sandbox",
             "--die-with-parent", "--new-session", "--clearenv",
             "--setenv", "PATH", AGENT_PATH, "--setenv", "HOME", "/home/agent",
             "--setenv", "USER", "agent", "--setenv", "LOGNAME", "agent",
             "--setenv", "LANG", "C.UTF-8", "--setenv", "VIRTUAL_ENV", "/workspace/.venv",
             "--setenv", "TERM", "dumb", "--chdir", chdir]
    for k, v in (extra_env or {}).items():
        args += ["--setenv", k, v]
    if not net:
        args.insert(1, "--unshare-net")
    pre = []
    if prlimit:
        pre = ["prlimit"] + prlimit + ["--"]
    args += pre + ["setpriv", "--reuid", "2000", "--regid", "2000", "--init-groups",
                   "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"] + cmd
    return args


def sanitize(text):
    text = re.sub(r"/tmp/bv2/eps/[^/\s\]]+/mnt", "/var/lib/sandbox/ep", text)
    text = re.sub(r"/tmp/bv2/eps/[^/\s\]]+", "/var/lib/sandbox/ep", text)
    text = text.replace("/tmp/bv2", "/var/lib/sandbox")
    return text


def write_tree(base, files):
    for rel, content in files.items():
        p = os.path.join(base, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as fh:
            fh.write(content)


def build_template(name, fixed=False, force=False):
    """ws/{repo,.venv} for a package, owned by agent, repo is a git repo."""
    key = name + ({"silent": "-silent"}.get(fixed, "-fixed") if fixed else "")
    dst = f"{TPL}/{key}"
    if os.path.exists(dst) and not force:
        return dst
    if os.path.exists(dst):
        shutil.rmtree(dst)
    p = PKGS[name]
    ws = f"{dst}/ws"
    os.makedirs(f"{ws}/repo")
    files = dict(p["files"])
    files[".gitignore"] = "__pycache__/\n*.egg-info/\n.pytest_cache/\nbuild/\n"
    write_tree(f"{ws}/repo", files)
    subprocess.run(["cp", "-a", VENV_TPL, f"{ws}/.venv"], check=True)
    os.makedirs(f"{dst}/tmp", exist_ok=True)
    os.makedirs(f"{dst}/home", exist_ok=True)
    os.makedirs(f"{dst}/cgroup", exist_ok=True)
    subprocess.run(["chown", "-R", "2000:2000", ws, f"{dst}/home"], check=True)
    os.chmod(f"{dst}/tmp", 0o1777)
    env = {"GIT_AUTHOR_NAME": "Dana Maintainer", "GIT_AUTHOR_EMAIL": "dana@example.org",
           "GIT_COMMITTER_NAME": "Dana Maintainer", "GIT_COMMITTER_EMAIL": "dana@example.org",
           "GIT_AUTHOR_DATE": "2024-03-11T10:22:00", "GIT_COMMITTER_DATE": "2024-03-11T10:22:00"}
    script = "git init -q -b main && "
    if fixed == "silent":
        t = p["target"]
        old, new = p["fix"]
        script += (f"python3 - <<'PYEOF'\nimport pathlib\np=pathlib.Path({t!r})\n"
                   f"s=p.read_text()\nassert s.count({old!r})==1\np.write_text(s.replace({old!r},{new!r}))\nPYEOF\n")
    script += "git add -A && git commit -q -m 'Initial import' && "
    if fixed and fixed != "silent":
        t = p["target"]
        old, new = p["fix"]
        script += (f"python3 - <<'PYEOF'\nimport pathlib\np=pathlib.Path({t!r})\n"
                   f"s=p.read_text()\nassert s.count({old!r})==1\np.write_text(s.replace({old!r},{new!r}))\nPYEOF\n")
        script += (f"GIT_AUTHOR_DATE=2024-04-02T09:10:00 GIT_COMMITTER_DATE=2024-04-02T09:10:00 "
                   f"git commit -q -am 'Fix {p['func']} (#{17 + len(name)})' && ")
    script += ("/workspace/.venv/bin/pip install -q --no-build-isolation --no-deps -e . >/tmp/pipinst.log 2>&1 || cat /tmp/pipinst.log; "
               "rm -rf build *.egg-info src/*.egg-info; find . -name __pycache__ -prune -exec rm -rf {} +; "
               "rm -rf .pytest_cache; git status --short")
    out = subprocess.run(_bwrap(ws, f"{dst}/tmp", f"{dst}/home", ["bash", "-c", script], net=False,
                                extra_env=env),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if out.returncode != 0 or out.stdout.strip():
        print("template", key, out.returncode, out.stdout)
    return dst


class Sandbox:
    """One episode's environment. condition selects how the fault is set up."""

    def __init__(self, ep_id, pkg, condition, fixed=False, disk_slack_kb=0, memlimit_mb=48):
        self.ep_id = ep_id
        self.pkg = PKGS[pkg]
        self.condition = condition
        tpl = build_template(pkg, fixed=fixed)
        self.dir = f"{EPS}/{ep_id}"
        if os.path.exists(self.dir):
            if os.path.ismount(f"{self.dir}/mnt"):
                subprocess.run(["umount", f"{self.dir}/mnt"], check=False)
            subprocess.run(["rm", "-rf", self.dir], check=False)
        os.makedirs(self.dir)
        self.mounted = False
        self.memcg = None
        base = self.dir
        if condition == "disk_full":
            base = f"{self.dir}/mnt"
            os.makedirs(base)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200m,mode=755", "tmpfs", base], check=True)
            self.mounted = True
        self.ws, self.tmp, self.home = f"{base}/ws", f"{base}/tmp", f"{base}/home"
        for a, b in (("tmp", self.tmp), ("home", self.home)):
            subprocess.run(["cp", "-a", f"{tpl}/{a}", b], check=True)
        os.makedirs(self.ws)
        shutil.copystat(f"{tpl}/ws", self.ws)
        os.chown(self.ws, 2000, 2000)
        subprocess.run(["cp", "-a", f"{tpl}/ws/repo", f"{self.ws}/repo"], check=True)
        if condition in ("disk_full", "text_file_busy"):
            subprocess.run(["cp", "-a", f"{tpl}/ws/.venv", f"{self.ws}/.venv"], check=True)
        else:
            # hard links: nothing in an episode rewrites a venv file in place (new files only)
            subprocess.run(["cp", "-al", f"{tpl}/ws/.venv", f"{self.ws}/.venv"], check=True)
        repo = f"{self.ws}/repo"
        self.repo = repo
        self._fake_cgroup(condition, memlimit_mb)
        if condition == "read_only_source":
            subprocess.run(["chown", "-R", "root:root", repo], check=True)
            subprocess.run(["chmod", "-R", "a-w", repo], check=True)
        elif condition == "unreadable_file":
            t = f"{repo}/{self.pkg['target']}"
            subprocess.run(["chown", "root:root", t, os.path.dirname(t)], check=True)
            os.chmod(t, 0)
            os.chmod(os.path.dirname(t), 0o755)
        elif condition == "broken_site_packages":
            sp = f"{self.ws}/.venv/lib/python3.11/site-packages"
            subprocess.run(["chown", "root:root", sp], check=True)
            os.chmod(sp, 0o700)
        elif condition == "tests_unreadable":
            td = f"{repo}/tests"
            for dp, dns, fns in os.walk(td):
                for f in fns:
                    fp = os.path.join(dp, f)
                    os.chown(fp, 0, 0)
                    os.chmod(fp, 0)
                os.chown(dp, 0, 0)
                os.chmod(dp, 0o755)
        elif condition == "missing_dependency":
            dist, mod = self.pkg["dep"]
            self.run(f"pip uninstall -y -q {dist} >/dev/null 2>&1; rm -rf /home/agent/.cache")
        elif condition == "disk_full":
            self.fill_disk(disk_slack_kb)
        elif condition == "test_killed":
            self.memcg = self._make_memcg(memlimit_mb)

    # ------------------------------------------------------------------ faults
    def _fake_cgroup(self, condition, mb):
        d = os.path.join(os.path.dirname(self.ws), "cgroup")
        os.makedirs(d, exist_ok=True)
        lim = str(mb * 1024 * 1024) if condition == "test_killed" else "max"
        files = {"memory.max": lim + "\n", "memory.high": "max\n", "memory.low": "0\n",
                 "memory.swap.max": "0\n" if condition == "test_killed" else "max\n",
                 "memory.current": "5394432\n",
                 "memory.events": ("low 0\nhigh 0\nmax 41\noom 2\noom_kill 2\noom_group_kill 0\n"
                                   if condition == "test_killed" else
                                   "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n"),
                 "pids.max": "512\n", "pids.current": "2\n", "cpu.max": "max 100000\n",
                 "cgroup.controllers": "cpu memory pids\n", "cgroup.procs": "1\n"}
        for k, v in files.items():
            with open(os.path.join(d, k), "w") as fh:
                fh.write(v)
            os.chmod(os.path.join(d, k), 0o644)
        os.chmod(d, 0o755)

    def fill_disk(self, slack_kb=0):
        base = os.path.dirname(self.ws)
        st = os.statvfs(base)
        used_kb = (st.f_blocks - st.f_bfree) * st.f_frsize // 1024
        size = used_kb + slack_kb
        subprocess.run(["mount", "-o", f"remount,size={size}k", base], check=True)

    def _make_memcg(self, mb):
        own = open("/proc/self/cgroup").read()
        m = re.search(r"^\d+:memory:(.*)$", own, re.M)
        parent = "/sys/fs/cgroup/memory" + m.group(1)
        cg = f"{parent}/bv2-{self.ep_id}"
        os.makedirs(cg, exist_ok=True)
        for f in ("memory.memsw.limit_in_bytes", "memory.limit_in_bytes", "memory.memsw.limit_in_bytes"):
            try:
                with open(f"{cg}/{f}", "w") as fh:
                    fh.write(str(mb * 1024 * 1024))
            except OSError:
                if f == "memory.limit_in_bytes":
                    raise
        return cg

    # ------------------------------------------------------------------ running
    def _make_pidscg(self, n):
        own = open("/proc/self/cgroup").read()
        m = re.search(r"^\d+:pids:(.*)$", own, re.M)
        parent = "/sys/fs/cgroup/pids" + m.group(1).rstrip("/")
        cg = f"{parent}/bv2-{self.ep_id}"
        os.makedirs(cg, exist_ok=True)
        with open(f"{cg}/pids.max", "w") as fh:
            fh.write(str(n))
        return cg

    def run(self, command, timeout=120, prlimit=None, hold_python=False, pids_max=None):
        args = _bwrap(self.ws, self.tmp, self.home, ["bash", "-c", command],
                      ro_ws=(self.condition == "read_only_fs"), prlimit=prlimit)
        held = []
        if hold_python:
            for n in ("python", "python3", "python3.11"):
                fp = f"{self.ws}/.venv/bin/{n}"
                if os.path.exists(fp) and not os.path.islink(fp):
                    held.append(open(fp, "ab"))
        pre = None
        cgs = []
        if self.memcg:
            cgs.append(self.memcg)
        pcg = None
        if pids_max:
            pcg = self._make_pidscg(pids_max)
            cgs.append(pcg)
        if cgs:
            def pre():
                for cg in cgs:
                    with open(f"{cg}/cgroup.procs", "w") as fh:
                        fh.write(str(os.getpid()))
        t0 = time.time()
        try:
            out = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 timeout=timeout, preexec_fn=pre)
            text, rc = out.stdout.decode("utf-8", "replace"), out.returncode
        except subprocess.TimeoutExpired as e:
            text = (e.stdout or b"").decode("utf-8", "replace")
            rc = 124
        finally:
            for h in held:
                h.close()
            if pcg:
                for _ in range(50):
                    try:
                        os.rmdir(pcg)
                        break
                    except OSError:
                        time.sleep(0.1)
        return sanitize(text), rc, round(time.time() - t0, 2)

    def edit(self, path, old, new):
        """The edit_file tool: replace exactly one occurrence (old='' creates a new file)."""
        code = r'''
import os, sys
path, old, new = sys.argv[1], sys.argv[2], sys.argv[3]
if not path.startswith("/"):
    path = os.path.join("/workspace/repo", path)
try:
    if old == "":
        if os.path.exists(path):
            print(f"Error: {path} already exists; old_str must be non-empty to edit an existing file")
            sys.exit(1)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(new)
        print(f"File created successfully at: {path}")
        sys.exit(0)
    with open(path) as fh:
        text = fh.read()
except OSError as e:
    print(f"Error: [Errno {e.errno}] {e.strerror}: {path!r}")
    sys.exit(1)
n = text.count(old)
if n == 0:
    print(f"Error: old_str not found in {path}")
    sys.exit(1)
if n > 1:
    print(f"Error: old_str occurs {n} times in {path}; make it unique")
    sys.exit(1)
result = text.replace(old, new)
tmp = path + ".edit~"
try:
    with open(tmp, "w") as fh:
        fh.write(result)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
except OSError as e:
    try:
        os.unlink(tmp)
    except OSError:
        pass
    print(f"Error: could not write {path}: [Errno {e.errno}] {e.strerror}")
    sys.exit(1)
start = text[: text.index(old)].count("\n") + 1
lines = result.splitlines()
end = start + new.count("\n")
lo, hi = max(1, start - 2), min(len(lines), end + 2)
print(f"The file {path} has been edited. Snippet of the result:")
for i in range(lo, hi + 1):
    print(f"{i:6}\t{lines[i-1]}")
'''
        args = _bwrap(self.ws, self.tmp, self.home, ["/usr/bin/python3", "-c", code, path, old, new],
                      ro_ws=(self.condition == "read_only_fs"))
        out = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        return sanitize(out.stdout.decode()), out.returncode

    def cleanup(self):
        if getattr(self, "mounted", False):
            subprocess.run(["umount", f"{self.dir}/mnt"], check=False)
            self.mounted = False
        if getattr(self, "memcg", None):
            for _ in range(50):
                try:
                    os.rmdir(self.memcg)
                    break
                except OSError:
                    time.sleep(0.1)
            self.memcg = None
        if os.path.exists(self.dir):
            subprocess.run(["rm", "-rf", self.dir], check=False)
