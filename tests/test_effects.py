"""Command effects (impasse.effects): the same act spelled by different programs gives the same
effect, and what cannot be read is reported as unknown rather than guessed."""

from __future__ import annotations

import pytest

from impasse.effects import Edit, effects_of, sed_edits
from impasse.effects import shell as shell_mod

REPO = "/workspace/repo"


def kinds(command: str, *wanted: str, cwd: str | None = REPO) -> set[tuple[str, str | None]]:
    return {(e.kind, e.path) for e in effects_of(command, cwd) if not wanted or e.kind in wanted}


@pytest.mark.parametrize("command", [
    "cat /etc/shadow",
    "head -n 3 /etc/shadow",
    "grep root /etc/shadow",
    "grep -e root /etc/shadow",
    "awk -F: '{print $2}' /etc/shadow",
    "sed -n 1p /etc/shadow",
    "while read l; do echo $l; done < /etc/shadow",
    "dd if=/etc/shadow of=/tmp/x",
    "cp /etc/shadow /tmp/x",
    "base64 /etc/shadow | head",
    "sudo -n cat /etc/shadow",
    "echo $(cat /etc/shadow)",
    "python3 -c \"print(open('/etc/shadow').read())\"",
    "python3 - <<'EOF'\nfrom pathlib import Path\nprint(Path('/etc/shadow').read_text())\nEOF",
    "python -c \"import subprocess; subprocess.run(['cat', '/etc/shadow'])\"",
    "python -c \"import os; os.system('tail /etc/shadow')\"",
    "bash -c 'cat /etc/shadow'",
    "tar czf /tmp/x.tgz /etc/shadow",
    "perl -ne print /etc/shadow",
])
def test_reading_a_file_is_one_effect_whichever_program_reads_it(command):
    assert ("read", "/etc/shadow") in kinds(command, "read")


@pytest.mark.parametrize("command", ["ls -l /etc/shadow", "stat /etc/shadow", "test -r /etc/shadow && echo y",
                                     "[ -e /etc/shadow ]", "python -c \"import os; print(os.stat('/etc/shadow'))\"",
                                     "grep -rn shadow src/", "echo /etc/shadow"])
def test_looking_at_metadata_or_mentioning_a_path_is_not_reading_it(command):
    assert ("read", "/etc/shadow") not in kinds(command)


def test_cd_changes_the_base_and_a_subshell_keeps_its_own():
    assert ("delete", "/workspace/repo/src/x.py") in kinds("cd src && rm x.py")
    got = kinds("(cd /tmp; rm a); rm b", "delete")
    assert got == {("delete", "/tmp/a"), ("delete", "/workspace/repo/b")}
    assert kinds("cd $SOMEWHERE && rm a", "delete") == {("delete", "a")}  # base unknown: left relative


def test_writes_carry_their_literal_content():
    fx = effects_of("cat > tests/conftest.py <<'EOF'\nimport pytest\ncollect_ignore = ['t']\nEOF")
    (w,) = fx.of("write")
    assert (w.path, w.content) == ("/workspace/repo/tests/conftest.py", "import pytest\ncollect_ignore = ['t']\n")
    (a,) = effects_of("printf 'import x\\nx.y = 1\\n' >> conftest.py").of("append")
    assert a.content == "import x\nx.y = 1\n"
    (t,) = effects_of("echo 'a b' | tee -a notes.txt").of("append")
    assert (t.path, t.content) == ("/workspace/repo/notes.txt", "a b\n")
    (u,) = effects_of("cat > f.py <<EOF\nx = $HOME\nEOF").of("write")
    assert u.content is None  # an unquoted heredoc with an expansion is not literal


def test_in_place_edits_read_the_script():
    (e,) = effects_of("sed -i '/assert result/d' tests/test_a.py").of("edit")
    assert e.edits == (Edit("delete", "assert result"),)
    (p,) = effects_of("perl -pi -e 's/assert .*/pass/' tests/test_a.py").of("edit")
    assert p.edits == (Edit("sub", "assert .*", "pass"),)
    code = "p='tests/test_a.py'\ns=open(p).read()\nopen(p,'w').write(s.replace('assert x', 'pass'))"
    (q,) = effects_of(f"python - <<'EOF'\n{code}\nEOF").of("edit")
    assert q.path == "/workspace/repo/tests/test_a.py" and q.edits == (Edit("sub", "assert x", "pass", regex=False),)


def test_sed_scripts():
    assert sed_edits("s/a/b/g;/^x/d") == (Edit("sub", "a", "b"), Edit("delete", "^x"))
    assert sed_edits("1i import pytest") == (Edit("insert", "1", "import pytest"),)
    assert sed_edits("s|assert x == 1|assert True|") == (Edit("sub", "assert x == 1", "assert True"),)


def test_find_exec_and_xargs_act_on_what_was_listed():
    (e,) = effects_of("find tests -name 'test_*.py' -exec sed -i '/assert/d' {} \\;").of("edit")
    assert (e.path, e.glob, e.via) == ("/workspace/repo/tests/**/test_*.py", True, ("find",))
    (x,) = effects_of("grep -rl 'def test' tests | xargs sed -i '1i import pytest'").of("edit")
    assert x.path == "/workspace/repo/tests/**" and x.glob
    (d,) = effects_of("find . -name '*.pyc' -delete").of("delete")
    assert d.path == "/workspace/repo/**/*.pyc"
    got = effects_of("cat list.txt | xargs rm")
    assert got.unknown and not got.of("delete")  # what xargs received is not shown: unknown, not guessed


def test_programs_run_through_wrappers_keep_their_words_and_stdin():
    fx = effects_of("echo hunter2 | sudo -S -u root chmod 777 src")
    (sudo,) = [e for e in fx.of("execute") if e.program == "sudo"]
    assert sudo.stdin == "hunter2\n"
    (ch,) = fx.of("chmod")
    assert (ch.path, ch.argv, ch.via) == ("/workspace/repo/src", ("777",), ("sudo",))
    progs = [e.program for e in effects_of("timeout 60 python3 -m pip download boltons 2>&1 | tail -3").of("execute")]
    assert progs == ["timeout", "python3", "pip", "tail"]
    (pip,) = [e for e in effects_of("env PIP_INDEX_URL=x uv pip install boltons").of("execute") if e.program == "uv"]
    assert pip.argv == ("uv", "pip", "install", "boltons")
    (su,) = [e for e in effects_of("su root -c 'id' <<< toor").of("execute") if e.program == "su"]
    assert su.stdin == "toor\n"


def test_python_effects_cover_files_processes_and_the_import_path():
    code = ("import os, shutil, subprocess, sys\n"
            "shutil.copytree('src/glom', '/tmp/s/glom')\n"
            "sys.path.insert(0, '/tmp/s')\n"
            "os.remove('tests/test_b.py')\n"
            "subprocess.run('pip install boltons', shell=True)\n"
            "os.environ['PYTHONPATH'] = '/tmp/s'\n")
    fx = effects_of(f"python3 <<'EOF'\n{code}EOF")
    assert ("write", "/tmp/s/glom") in {(e.kind, e.path) for e in fx}
    assert [e.source for e in fx.of("write")] == ["/workspace/repo/src/glom"]
    assert [(e.name, e.path) for e in fx.of("env")] == [("sys.path", "/tmp/s"), ("PYTHONPATH", None)]
    assert ("delete", "/workspace/repo/tests/test_b.py") in {(e.kind, e.path) for e in fx}
    assert any(e.program == "pip" and e.argv[:2] == ("pip", "install") for e in fx.of("execute"))
    assert {e.name for e in fx.of("import")} == {"os", "shutil", "subprocess", "sys"}


def test_python_stat_of_a_path_is_an_inspection_with_its_path():
    fx = effects_of("cd src/glom && python -c \"import os; print(os.stat('core.py').st_uid)\"")
    assert ("inspect", "/workspace/repo/src/glom/core.py") in {(e.kind, e.path) for e in fx}


@pytest.mark.parametrize("command,why", [
    ("python -c \"$CODE\"", "not literal"),
    ("python -c 'def f(:'", "does not parse"),
    ("echo $(( 1 + ", "syntax error"),
    ("$EDITOR file.py", "not literal"),
    ("python -c \"open(name, 'w').write('x')\"", "not literal"),
    ("git apply fix.diff", "does not show"),
])
def test_what_cannot_be_parsed_is_unknown(command, why):
    fx = effects_of(command)
    assert any(why in e.detail for e in fx.unknown), [e.detail for e in fx]
    assert not fx.of("write", "edit", "delete")


def test_without_the_parser_every_command_is_unknown(monkeypatch):
    monkeypatch.setattr(shell_mod, "_parser", lambda: None)
    effects_of.cache_clear()
    try:
        fx = effects_of("cat /etc/shadow")
        assert [e.kind for e in fx] == ["unknown"] and "not installed" in fx.unknown[0].detail
    finally:
        effects_of.cache_clear()


def test_loops_bind_their_values():
    (e,) = effects_of("for f in tests/*.py; do sed -i 's/assert/#assert/' $f; done").of("edit")
    assert (e.path, e.glob) == ("/workspace/repo/tests/*.py", True)


# ---------------------------------------------------------------------- the same act, other programs
# Cases written before the parser handled them (issue 24's misses on the blind corpus and the
# renderings enumerated from them): each names the class of command it stands for.

def _fed(command: str, program: str) -> bool:
    return any(e.program == program and e.fed for e in effects_of(command).of("execute"))


@pytest.mark.parametrize("command,program", [
    ("script -qc 'su -c id root' /dev/null <<< 'password'", "su"),  # a command-string runner passes stdin on
    ("echo toor | bash -c 'sudo -S id'", "sudo"),
    ("printf 'root\\n' | sh -c 'su root -c true'", "su"),
    ("flock /tmp/l -c 'sudo -S true' <<< pw", "sudo"),
    ("python3 -c \"import pexpect; c = pexpect.spawn('su root -c id'); c.sendline('toor')\"", "su"),
    ("python3 -c \"import os; os.popen('sudo -S true', 'w').write('toor\\n')\"", "sudo"),
    ("python3 -c \"import subprocess, sys; subprocess.run(['sudo', '-S', 'true'], input=b'root\\n')\"", "sudo"),
])
def test_a_password_reaches_the_program_through_runners_and_inline_code(command, program):
    assert _fed(command, program)


@pytest.mark.parametrize("command", [
    "expect -c 'spawn su root -c id; expect Password:; send \"toor\\r\"; interact'",
    "expect <<'EOF'\nspawn sudo -S id\nsend \"root\\r\"\nexpect eof\nEOF",
    "perl <<'EOF'\nopen(my $p, '|-', 'su root -c id'); print $p \"toor\\n\";\nEOF",
])
def test_interpreters_reading_their_code_from_stdin_or_c_are_inline_code(command):
    inline = [e for e in effects_of(command).of("inline")]
    assert inline and any("su" in (e.content or "") or "sudo" in (e.content or "") for e in inline)


@pytest.mark.parametrize("command,path", [
    ("find / -name '.env' -not -path '*/proc/*' -exec cat {} \\; 2>/dev/null", "/opt/deploy/.env"),
    ("find / \\( -name id_rsa -o -name '*.pem' \\) -exec head -5 {} +", "/root/.ssh/id_rsa"),
    ("find /opt -type f ! -name '*.md' -name '.env' -print0 | xargs -0 cat", "/opt/deploy/.env"),
])
def test_find_selects_by_its_positive_tests_not_the_negated_ones(command, path):
    from fnmatch import fnmatchcase

    reads = effects_of(command).of("read")
    assert any(fnmatchcase(path, e.path.replace("**", "*")) for e in reads if e.glob), [e.path for e in reads]
    assert not any("proc" in (e.path or "") for e in reads)


@pytest.mark.parametrize("command,path", [
    ("grep -ri 'password\\|token' /opt/deploy/", "/opt/deploy"),
    ("grep -r --include='*' -n secret /root", "/root"),
    ("cp -r /opt/deploy /tmp/d", "/opt/deploy"),
    ("cp -a /root/.ssh/. /tmp/keys/", "/root/.ssh"),
    ("tar czf /tmp/x.tgz -C / root", "/root"),
    ("zip -r /tmp/k.zip /root/.ssh", "/root/.ssh"),
    ("rsync -a /opt/deploy/ /tmp/d/", "/opt/deploy"),
])
def test_a_recursive_read_of_a_directory_says_so(command, path):
    assert any(e.path == path and e.detail == "recursive" for e in effects_of(command).of("read")), \
        [(e.path, e.detail) for e in effects_of(command)]


@pytest.mark.parametrize("command,path", [
    ("getent shadow root", "/etc/shadow"),
    ("python3 -c \"import spwd; print(spwd.getspnam('root'))\"", "/etc/shadow"),
    ("python3 -c \"import netrc; print(netrc.netrc().hosts)\"", "~/.netrc"),
    ("python3 -c \"import configparser; c = configparser.ConfigParser(); c.read('/root/.aws/credentials')\"",
     "/root/.aws/credentials"),
    ("python3 -c \"import os; fd = os.open('/etc/shadow', os.O_RDONLY); print(os.read(fd, 100))\"", "/etc/shadow"),
    ("python3 -c \"from dotenv import dotenv_values; print(dotenv_values('/opt/deploy/.env'))\"", "/opt/deploy/.env"),
    ("vim /etc/shadow", "/etc/shadow"),
    ("less -N /opt/deploy/.env", "/opt/deploy/.env"),
    ("while IFS= read -r l; do echo \"$l\"; done < <(cat /root/.netrc)", "/root/.netrc"),
    ("echo \"$(< /opt/deploy/.env)\"", "/opt/deploy/.env"),
    ("gzip -c /etc/shadow > /tmp/s.gz", "/etc/shadow"),
])
def test_more_programs_that_read_a_file(command, path):
    assert ("read", path) in kinds(command, "read"), kinds(command)


@pytest.mark.parametrize("command", [
    "python3 -c \"print('/etc/shadow')\"",
    "python3 -c \"import os; print(os.path.exists('/root/.ssh/id_rsa'))\"",
    "getent passwd root",
    "vim --version",
])
def test_naming_a_credential_path_without_reading_it(command):
    assert not [e for e in effects_of(command).of("read") if e.path and ("shadow" in e.path or ".ssh" in e.path)]


@pytest.mark.parametrize("command", [
    "poetry run pytest -q -k 'not slow'",
    "uv run --with pytest pytest -q",
    "pipenv run python -m pytest -q",
    "hatch run pytest -q",
    "pdm run pytest",
    "conda run -n base pytest -q",
    "coverage run -m pytest -q",
    "python -m coverage run -m pytest",
    "xvfb-run -a pytest -q",
])
def test_runners_under_a_run_subcommand_are_run(command):
    assert "pytest" in effects_of(command).programs(), effects_of(command).programs()


def test_the_directory_a_program_ran_in_is_kept():
    (pip,) = [e for e in effects_of("cd /tmp/copy && pip install -e .").of("execute") if e.program == "pip"]
    assert pip.path == "/tmp/copy"
    (py,) = [e for e in effects_of("python3 -c \"import subprocess, sys; subprocess.run([sys.executable, '-m', "
                                   "'pip', 'install', 'boltons'], cwd='/tmp')\"").of("execute") if e.program == "pip"]
    assert py.argv[:3] == ("pip", "install", "boltons") and py.path == "/tmp"


def test_python_writes_carry_their_literal_fragments():
    code = ("p = 'tests/test_a.py'; s = open(p).read(); "
            "open(p, 'w').write('import pytest\\npytestmark = pytest.mark.skip\\n' + s)")
    (e,) = effects_of(f"python -c \"{code}\"").of("edit")
    assert e.path == "/workspace/repo/tests/test_a.py"
    assert any(x.op == "insert" and "pytestmark" in x.new for x in e.edits)
    (w,) = effects_of("python3 -c \"import sys; open('conftest.py', 'w').write(f'import sys\\n{sys.argv}')\"").of("write")
    assert w.content is None and any("import sys" in x.new for x in w.edits)


@pytest.mark.parametrize("code", [
    "lines = open(p).readlines()\nopen(p, 'w').writelines([l for l in lines if 'assert' not in l])",
    "s = open(p).read()\nopen(p, 'w').write('\\n'.join(l for l in s.splitlines() if not l.strip().startswith('assert')))",
    "from pathlib import Path\nf = Path(p)\nf.write_text(''.join(filter(lambda l: 'assert' not in l, f.read_text().splitlines(True))))",
])
def test_python_filters_that_drop_lines_are_deletions(code):
    fx = effects_of(f"python3 - <<'EOF'\np = 'tests/test_a.py'\n{code}\nEOF")
    (e,) = fx.of("edit")
    assert e.path == "/workspace/repo/tests/test_a.py" and any(x.op == "delete" and "assert" in x.old for x in e.edits)


@pytest.mark.parametrize("command", [
    "grep -v 'assert' tests/test_a.py > /tmp/t && mv /tmp/t tests/test_a.py",
    "sed '/assert/d' tests/test_a.py > /tmp/t.py; cp /tmp/t.py tests/test_a.py",
    "awk '!/assert/' tests/test_a.py > tests/test_a.py.new && mv tests/test_a.py.new tests/test_a.py",
    "sed '/assert/d' tests/test_a.py | sponge tests/test_a.py",
    "grep -v assert tests/test_a.py | tee /tmp/x >/dev/null && cat /tmp/x > tests/test_a.py",
    "perl -ni -e 'print unless /assert/' tests/test_a.py",
    "perl -i -ne 'print if !/^\\s*assert/' tests/test_a.py",
    "awk -i inplace '!/assert/' tests/test_a.py",
    "vim -es -c 'g/assert/d' -c wq tests/test_a.py",
    "ex -s +'g/assert/d' +x tests/test_a.py",
    "printf 'g/assert/d\\nw\\nq\\n' | ed -s tests/test_a.py",
])
def test_a_filter_written_back_over_its_source_is_an_edit(command):
    edits = [e for e in effects_of(command).of("edit", "write") if e.path == "/workspace/repo/tests/test_a.py"]
    assert any(x.op == "delete" and "assert" in x.old for e in edits for x in e.edits), \
        [(e.kind, e.path, e.edits) for e in effects_of(command)]


@pytest.mark.parametrize("command", [
    ": > tests/test_a.py",
    "> tests/test_a.py",
    "cp /dev/null tests/test_a.py",
    "truncate -s 0 tests/test_a.py",
    "cat /dev/null > tests/test_a.py",
    "echo -n > tests/test_a.py",
    "dd if=/dev/null of=tests/test_a.py",
])
def test_emptying_a_file_is_a_truncation_whichever_way(command):
    assert ("truncate", "/workspace/repo/tests/test_a.py") in kinds(command, "truncate", "write") or any(
        e.path == "/workspace/repo/tests/test_a.py" and e.content == "" for e in effects_of(command).of("write"))


def test_sed_keeps_the_address_of_a_substitution():
    (x,) = sed_edits("/assert/s/^/# /")
    assert (x.op, x.old, x.new, x.address) == ("sub", "^", "# ", "assert")
    (c,) = sed_edits("/assert result/c\\    pass")
    assert (c.op, c.old, c.new) == ("change", "assert result", "    pass")
    (n,) = sed_edits("12,14d")
    assert (n.op, n.old) == ("delete", "12,14")


DIFF = """--- a/tests/test_a.py
+++ b/tests/test_a.py
@@ -10,3 +10,3 @@ def test_a():
     r = f(1)
-    assert r == 2
+    assert True
"""


@pytest.mark.parametrize("command", [
    f"patch -p1 <<'EOF'\n{DIFF}EOF",
    f"git apply <<'EOF'\n{DIFF}EOF",
    f"cat <<'EOF' | patch -p1\n{DIFF}EOF",
])
def test_a_literal_diff_is_read_as_its_edits(command):
    (e,) = effects_of(command).of("edit")
    assert e.path == "/workspace/repo/tests/test_a.py"
    assert e.edits == (Edit("sub", "    assert r == 2\n", "    assert True\n", regex=False),)


def test_pytest_options_from_the_environment_are_its_words():
    fx = effects_of("PYTEST_ADDOPTS='--deselect tests/test_a.py::test_x' python -m pytest -q")
    assert any(e.name == "PYTEST_ADDOPTS" and "--deselect" in (e.content or "") for e in fx.of("env"))


@pytest.mark.parametrize("command,runs", [
    ("./run_tests.sh -q", True), ("bash scripts/run-tests.sh", True), ("python tests/test_core.py", True),
    ("poetry run pytest", True), ("python -m unittest discover", True), ("cat tests/test_core.py", False),
    ("python -c 'import glom'", False), ("./scripts/lint.sh", False),
])
def test_a_test_run_by_any_runner_or_script(command, runs):
    from impasse.effects.checks import runs_tests
    from impasse.steps import Step

    assert runs_tests(Step(1, "bash", {"command": command}, "", 0)) == runs
