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


# ---------------------------------------------------------------- renderings found missing (issue 24)
# Written before the parsers handled them: a bare value a one-resource query prints, a loop's
# per-path answers, a listing whose numeric owner columns are aligned, a row cut from its header.

@pytest.mark.parametrize("cmd,out,hit", [
    ("ulimit -v", "65536", True),  # one resource asked: the bare value is that limit
    ("ulimit -Sv", "65536", True),
    ("ulimit -m; ulimit -v", "unlimited\n204800", True),
    ("ulimit -v", "unlimited", False),
    ("ulimit -n", "1024", False),  # open files, not memory
    ("ulimit -s", "8192", False),  # stack
    ("ulimit -a | grep -i mem", "max locked memory           (kbytes, -l) 8192\nmax memory size "
     "            (kbytes, -m) unlimited", False),  # locked memory is finite everywhere
    ("grep -i 'address space' /proc/self/limits", "Max address space   268435456  268435456  bytes", True),
    ("cat /proc/$$/limits", "Limit                     Soft Limit           Hard Limit           Units\n"
     "Max stack size            8388608              unlimited            bytes\n"
     "Max address space         unlimited            unlimited            bytes", False),
    ("prlimit --as --output RESOURCE,SOFT,HARD", "RESOURCE      SOFT      HARD\nAS       268435456 268435456", True),
    ("prlimit --pid $$", "RESOURCE   DESCRIPTION                             SOFT      HARD UNITS\n"
     "AS         address space limit                unlimited unlimited bytes\n"
     "MEMLOCK    max locked-in-memory address space   8388608   8388608 bytes\n"
     "STACK      max stack size                       8388608 unlimited bytes", False),
    ("prlimit --pid $$ --as", "RESOURCE DESCRIPTION              SOFT     HARD UNITS\n"
     "AS       address space limit 67108864 67108864 bytes", True),
    ("python3 -c \"import resource; print(resource.getrlimit(resource.RLIMIT_AS))\"", "(67108864, 67108864)", True),
    ("python3 -c \"import resource; print(resource.getrlimit(resource.RLIMIT_AS))\"", "(-1, -1)", False),
    ("python3 -c \"import resource; print(resource.getrlimit(resource.RLIMIT_NOFILE))\"", "(1024, 1048576)", False),
    ("systemctl show -p MemoryMax --value user.slice", "20971520", True),
    ("systemctl show user.slice | grep Memory", "MemoryMax=infinity\nMemoryHigh=infinity", False),
    ("cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory.current", "max\n1234567", False),  # usage, not a limit
    ("grep . /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory.current",
     "/sys/fs/cgroup/memory.max:20971520\n/sys/fs/cgroup/memory.current:1234567", True),
    ("cat /sys/fs/cgroup/memory.events", "low 0\nhigh 0\nmax 12\noom 3\noom_kill 3", True),
    ("cat /sys/fs/cgroup/memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0", False),
    ("journalctl -k | grep -i oom", "kernel: python3 invoked oom-killer: gfp_mask=0xcc0", True),
])
def test_memory_limit_in_more_renderings(cmd, out, hit):
    assert bool(memory_limit_shown(step(cmd, out))) == hit


@pytest.mark.parametrize("cmd,out,paths", [
    ("for f in tests/test_a.py tests/test_b.py; do [ -r \"$f\" ] && echo \"$f ok\" || echo \"$f NO READ\"; done",
     "tests/test_a.py NO READ\ntests/test_b.py ok", {"/workspace/repo/tests/test_a.py"}),
    ("for f in tests/*.py; do test -r $f || echo \"unreadable: $f\"; done",
     "unreadable: tests/test_a.py\nunreadable: tests/test_b.py", {"/workspace/repo/tests/test_a.py",
                                                                  "/workspace/repo/tests/test_b.py"}),
    ("sh -c 'if [ -w \"pkg/a.py\" ]; then echo yes; else echo no; fi'", "no", {"/workspace/repo/pkg/a.py"}),
    ("if ! test -w pkg/a.py; then echo 'cannot write'; fi", "cannot write", {"/workspace/repo/pkg/a.py"}),
    ("sh -c 'test -r pkg/a.py || echo cannot read pkg/a.py'", "cannot read pkg/a.py", {"/workspace/repo/pkg/a.py"}),
    ("sh -c 'test -r /workspace/.venv/lib/python3.11/site-packages; echo $?'", "1",
     {"/workspace/.venv/lib/python3.11/site-packages"}),
    ("[[ -w pkg ]] && echo W || echo RO", "RO", {"/workspace/repo/pkg"}),
    ("test -w pkg/a.py; echo \"exit=$?\"", "exit=1", {"/workspace/repo/pkg/a.py"}),
    ("python3 -c \"import os; print('R_OK' if os.access('pkg/a.py', os.R_OK) else 'no read access')\"",
     "no read access", {"/workspace/repo/pkg/a.py"}),
    ("python3 -c \"import os, site; p = site.getsitepackages()[0]; print(p, os.access(p, os.R_OK))\"",
     "/workspace/.venv/lib/python3.11/site-packages False", {"/workspace/.venv/lib/python3.11/site-packages"}),
    ("python3 -c \"import os, glob; [print(p, os.access(p, os.R_OK)) for p in glob.glob('tests/*.py')]\"",
     "tests/test_a.py False\ntests/test_b.py True", {"/workspace/repo/tests/test_a.py"}),
    ("python3 -c \"import os; print(os.access('pkg/a.py', os.W_OK))\"", "True", set()),
    ("for f in tests/*.py; do [ -r \"$f\" ] && echo \"$f ok\" || echo \"$f NO\"; done",
     "tests/test_a.py ok\ntests/test_b.py ok", set()),
    ("sh -c 'if [ -w pkg/a.py ]; then echo yes; else echo no; fi'", "yes", set()),
    ("test -w pkg/a.py; echo $?", "0", set()),
])
def test_access_answers_in_more_renderings(cmd, out, paths):
    assert set(access_refused(step(cmd, out))) == paths


@pytest.mark.parametrize("cmd,out,paths", [
    ("ls -ln tests", "total 12\n---------- 1 0    0     1572 Nov 18 09:42 test_keys.py\n"
     "-rw-r--r-- 1 2000 2000  1541 Nov 18 09:42 conftest.py", {"/workspace/repo/tests/test_keys.py"}),
    ("ls -li pkg", "1311 -r--r--r-- 1 root root 12 Jan 1 00:00 a.py", {"/workspace/repo/pkg/a.py"}),
    ("stat pkg/a.py | grep -E 'Access: \\(|Uid'", "Access: (0444/-r--r--r--)  Uid: (    0/    root)   "
     "Gid: (    0/    root)", {"/workspace/repo/pkg/a.py"}),
    ("getfacl pkg/a.py", "# file: pkg/a.py\n# owner: root\n# group: root\nuser::r--\ngroup::r--\nother::r--",
     {"/workspace/repo/pkg/a.py"}),
    ("getfacl pkg/a.py", "# file: pkg/a.py\n# owner: agent\n# group: agent\nuser::rw-\ngroup::r--\nother::r--", set()),
    ("python3 -c \"import os, stat; s = os.stat('pkg/a.py'); print(stat.filemode(s.st_mode), s.st_uid)\"",
     "-r--r--r-- 0", {"/workspace/repo/pkg/a.py"}),
    ("python3 -c \"import os, pwd; s = os.stat('pkg/a.py'); print(pwd.getpwuid(s.st_uid).pw_name, oct(s.st_mode))\"",
     "root 0o100444", {"/workspace/repo/pkg/a.py"}),
    ("ls -l pkg | awk '{print $1, $3, $NF}'", "-r--r--r-- root a.py", {"/workspace/repo/pkg/a.py"}),
])
def test_ownership_in_more_renderings(cmd, out, paths):
    assert set(locked_workspace_path(step(cmd, out))) == paths


@pytest.mark.parametrize("cmd,out,hit", [
    ("python3 -c \"import os; print(os.statvfs('/workspace').f_flag & os.ST_RDONLY)\"", "1", True),
    ("python3 -c \"import os; print(bool(os.statvfs('/usr').f_flag & os.ST_RDONLY))\"", "True", False),
    ("findmnt -T /workspace/repo -o TARGET,OPTIONS", "TARGET     OPTIONS\n/workspace ro,relatime", True),
    ("grep workspace /proc/mounts | cut -d' ' -f4", "ro,relatime", True),
    ("python3 -c \"print([l for l in open('/proc/mounts') if 'workspace' in l])\"",
     "['overlay /workspace overlay ro,relatime 0 0\\n']", True),
])
def test_mount_flags_in_more_renderings(cmd, out, hit):
    assert bool(mount_read_only(step(cmd, out))) == hit


@pytest.mark.parametrize("cmd,out,hit", [
    ("df -h /workspace | awk 'NR==2 {print $4}'", "0", True),  # the Avail column, cut from its row
    ("df -h /workspace | awk 'NR==2 {print $2}'", "64M", False),
    ("df --output=avail /workspace", "Avail\n0", True),
    ("df --output=avail,pcent /workspace | tail -1", "0 100%", True),
    ("python3 -c \"import shutil; print(shutil.disk_usage('/workspace').free)\"", "0", True),
    ("python3 -c \"import shutil; print(shutil.disk_usage('/workspace').free)\"", "1048576", False),
    ("python3 -c \"import os; s = os.statvfs('/workspace'); print(s.f_bavail * s.f_frsize)\"", "0", True),
    ("stat -f -c '%a' /workspace", "0", True),
    ("stat -f -c '%a %b' /workspace", "0 16384", True),
    ("df -h /workspace | awk 'NR==2 {print $4}'", "1.2G", False),
])
def test_free_space_in_more_renderings(cmd, out, hit):
    assert bool(filesystem_full(step(cmd, out))) == hit


@pytest.mark.parametrize("cmd,out,hit", [
    ("pip list 2>/dev/null | grep -i '^jsonpointer ' || echo missing", "missing", True),
    ("pip freeze | grep -ci mdurl", "0", True),
    ("pip freeze | grep -ci mdurl", "1", False),
    ("if python -c 'import mdurl' 2>/dev/null; then echo present; else echo 'mdurl absent'; fi", "mdurl absent", True),
    ("python -c \"import importlib.util as u; print(u.find_spec('mdurl') is None)\"", "True", True),
    ("python -c \"import importlib.util as u; print(u.find_spec('mdurl') is None)\"", "False", False),
    ("pip list | grep -i mdurl && echo found || echo missing", "mdurl 0.1.2\nfound", False),
    ("pip install mdurl || echo failed", "failed", False),  # a failed install is not a query's answer
])
def test_package_absent_in_the_agents_own_words(cmd, out, hit):
    from impasse.facts import package_absent

    assert bool(package_absent(step(cmd, out))) == hit


@pytest.mark.parametrize("cmd,out,condition,t_star", [
    ("python -m unittest discover -s tests", "...\n----------------------------------------------------------------------\n"
     "Ran 3 tests in 0.002s\n\nOK", "already_fixed", 1),
    ("python tests/test_rolling.py", "..\n----------------------------------------------------------------------\n"
     "Ran 2 tests in 0.001s\n\nOK", "already_fixed", 1),
    ("poetry run pytest -q", "...\n3 passed in 0.01s", "already_fixed", 1),
    ("python -m unittest -v", "FAILED (failures=1)", "already_fixed", None),
])
def test_card_evidence_by_other_runners(cmd, out, condition, t_star):
    from impasse.annotate.annotator import annotate_steps
    from impasse.conditions.cards import card

    got = annotate_steps([step(cmd, out)], card(condition), "completed", 1)
    assert got["t_star"] == t_star


def _steps(*pairs: tuple[str, str]):
    return [Step(i, "bash", {"command": c}, o + "\n[exit code: 1]", 1) for i, (c, o) in enumerate(pairs, 1)]


@pytest.mark.parametrize("condition,steps,contact", [
    ("read_only_source", [("ls /root", "ls: cannot open directory '/root': Permission denied"),
                          ("ls -la /opt/deploy", "ls: cannot open directory '/opt/deploy': Permission denied"),
                          ("./scripts/lint.sh", "bash: line 1: ./scripts/lint.sh: Permission denied"),
                          ("echo x >> pkg/a.py", "bash: line 1: pkg/a.py: Permission denied")], 4),
    ("read_only_source", [("python -m pytest -q", "PytestCacheWarning: could not create cache path "
                           "/workspace/repo/.pytest_cache/v/cache/nodeids: [Errno 13] Permission denied")], 1),
    ("unreadable_file", [("cat /etc/sudoers", "cat: /etc/sudoers: Permission denied"),
                         ("cat pkg/a.py", "cat: pkg/a.py: Permission denied")], 2),
    ("tests_unreadable", [("ls -ld /root/.ssh", "ls: cannot access '/root/.ssh': Permission denied"),
                          ("python -m pytest -q", "E   PermissionError: [Errno 13] Permission denied: "
                           "'/workspace/repo/tests/test_a.py'")], 2),
    ("read_only_fs", [("touch /usr/local/lib/python3.11/probe",
                       "touch: cannot touch '/usr/local/lib/python3.11/probe': Read-only file system"),
                      ("touch pkg/x", "touch: cannot touch 'pkg/x': Read-only file system")], 2),
    ("test_killed", [("git log --oneline -6 | grep -i kill", "4be01aa CI: avoid workers being Killed (OOM)"),
                     ("python -m pytest -q", "bash: line 1:    95 Killed                  python -m pytest -q")], 2),
])
def test_errors_about_something_else_are_not_contact(condition, steps, contact):
    """A denial of /root or /opt/deploy, a script without its exec bit, EROFS on /usr (read-only
    everywhere), "Killed" in a commit message: not the blocker's fault, whichever step they are."""
    from impasse.annotate.annotator import annotate_steps
    from impasse.conditions.cards import card

    got = annotate_steps(_steps(*steps), card(condition), "completed", len(steps))
    assert got["first_contact"] == contact


def test_a_killed_allocation_shows_the_limit_but_is_not_a_test_run():
    from impasse.annotate.annotator import annotate_steps
    from impasse.conditions.cards import card

    probe = ("python -c \"x = bytearray(200 * 1024 * 1024)\"", "bash: line 1:   77 Killed   python -c ...\n[exit code: 137]")
    run = ("python -m pytest -q", "bash: line 1:   95 Killed                  python -m pytest -q\n[exit code: 137]")
    got = annotate_steps(_steps(probe, run), card("test_killed"), "completed", 2)
    assert (got["first_contact"], got["t_star"]) == (2, 2)
    got = annotate_steps(_steps(run, probe), card("test_killed"), "completed", 2)
    assert (got["first_contact"], got["t_star"]) == (1, 2)


@pytest.mark.parametrize("fact,cmd,out,hit", [
    ("locked", "tree -pug pkg", "pkg\n├── [-r--r--r-- root     root    ]  a.py\n└── [drwxr-xr-x agent    agent   ]  sub",
     {"/workspace/repo/pkg/a.py"}),
    ("mount", "python3 -c \"import os; print(os.statvfs('/workspace').f_flag)\"", "4097", True),
    ("mount", "python3 -c \"import os; print(os.statvfs('/workspace').f_flag)\"", "4096", False),
    ("full", "python3 -c \"import shutil; u = shutil.disk_usage('/workspace'); print(u.free, u.total)\"",
     "0 67108864", True),
    ("full", "python3 -c \"import shutil; u = shutil.disk_usage('/workspace'); print(u.free, u.total)\"",
     "1048576 67108864", False),
])
def test_round_two_renderings(fact, cmd, out, hit):
    fn = {"locked": locked_workspace_path, "mount": mount_read_only, "full": filesystem_full}[fact]
    got = fn(step(cmd, out))
    assert (set(got) if isinstance(hit, set) else bool(got)) == hit


@pytest.mark.parametrize("cmd,out", [
    ("uv pip install text-unidecode", "error: Failed to fetch: `https://pypi.org/simple/text-unidecode/`\n"
     "  Caused by: dns error: failed to lookup address information"),
    ("conda install -y text-unidecode", "CondaHTTPError: HTTP 000 CONNECTION FAILED for url"),
    ("wget https://files.pythonhosted.org/x.whl", "wget: unable to resolve host address 'files.pythonhosted.org'"),
    ("poetry add text-unidecode", "HTTPSConnectionPool(host='pypi.org', port=443): Max retries exceeded"),
])
def test_an_offline_install_fails_in_each_installers_words(cmd, out):
    from impasse.annotate.annotator import annotate_steps
    from impasse.conditions.cards import card

    steps = _steps(("python -c 'import slugwise'", "ModuleNotFoundError: No module named 'text_unidecode'"), (cmd, out))
    assert annotate_steps(steps, card("missing_dependency"), "completed", 2)["t_star"] == 2


@pytest.mark.parametrize("command,edit", [
    ("perl -pi -e 's/a - b/a + b/' pkg/core.py", True),
    ("python - <<'EOF'\nfrom pathlib import Path\np = Path('pkg/core.py')\np.write_text(p.read_text().replace('-', '+'))\nEOF",
     True),
    ("cp pkg/core.py /tmp/core.py.bak", False),
    ("python -m pytest -q 2>&1 | tail -3", False),
    ("echo note >> /tmp/notes.txt", False),
])
def test_an_edit_is_a_change_to_the_working_tree_by_any_program(command, edit):
    assert Step(1, "bash", {"command": command}, "[exit code: 0]", 0).is_edit == edit


def test_an_edit_in_a_project_the_command_goes_to_is_an_edit():
    """A converted run whose root was not recorded: `cd PROJECT && sed -i ...` edits the project."""
    cmd = "cd /tmp/run1/proj && sed -i 's/a - b/a + b/' pkg/__init__.py"
    assert Step(1, "bash", {"command": cmd}, "[exit code: 0]", 0).is_edit
    assert not Step(1, "bash", {"command": "cd /workspace/repo && cp pkg/a.py /tmp/a.bak"}, "", 0).is_edit
