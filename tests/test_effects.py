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
    ("git apply fix.diff", "does not name"),
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
