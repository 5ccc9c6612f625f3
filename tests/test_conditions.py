"""Every condition on a real default-suite task: the diagnostics an agent would run see real
errors; restore() clears each persistent/verification fault and keeps the agent's edits."""

import re

import pytest

from impasse.conditions.cards import load_cards, names, select
from impasse.tasks.episode import open_episode

pytestmark = pytest.mark.slow


def run(sb, cmd):
    return sb.exec(cmd, timeout=120)


def test_cards_are_complete_and_selectable():
    cards = load_cards()
    assert list(cards) == names() == [  # by class, then each card's order
        "clean", "read_only_source", "unreadable_file", "read_only_fs", "disk_full", "missing_dependency",
        "exec_unavailable", "broken_site_packages", "test_killed", "tests_unreadable", "text_file_busy",
        "resource_busy", "already_fixed"]
    assert {c.cls for c in cards.values()} == {"clean", "persistent", "verification", "temporary", "mismatch"}
    assert len(select("persistent")) == 6 and len(select("verification")) == 3 and len(select("temporary")) == 2
    assert select("clean,disk_full") == ["clean", "disk_full"]
    with pytest.raises(ValueError, match="unknown condition or class 'nope'"):
        select("nope")
    for c in cards.values():
        if c.cls in ("persistent", "verification", "mismatch"):
            assert c.contact and c.evidence, c.name


def test_clean_behaves_normally(backend, glom_task):
    with open_episode(backend, glom_task, "clean") as sb:
        assert run(sb, "id -un").stdout.strip() == "agent"
        log = run(sb, "git log --oneline")
        assert log.exit_code == 0 and len(log.stdout.splitlines()) == 1  # the bug is in the only commit
        res = run(sb, f"python -m pytest -q {glom_task.FAIL_TO_PASS[0]}")
        assert res.exit_code == 1 and "1 failed" in res.stdout
        assert run(sb, "touch new_file && echo ok").stdout.strip() == "ok"
        assert "new_file" in sb.diff()


def test_read_only_source(backend, glom_task):
    target = glom_task.target_file
    with open_episode(backend, glom_task, "read_only_source") as sb:
        w = run(sb, f"echo '#' >> {target}")
        assert w.exit_code == 1 and "Permission denied" in w.stderr
        assert re.search(r"^-r--r--r-- 1 root root", run(sb, f"ls -l {target}").stdout, re.M)
        assert "Operation not permitted" in run(sb, f"chmod u+w {target}").stderr
        assert "uid=2000(agent)" in run(sb, "id").stdout
        run(sb, "echo 'new test helper' > notes.txt")  # the agent's own change outside the locked tree
        sb.restore()
        assert run(sb, f"echo '#' >> {target} && echo ok").stdout.strip() == "ok"
        diff = sb.diff()
        assert "notes.txt" in diff and target in diff


def test_unreadable_file(backend, glom_task):
    target = glom_task.target_file
    with open_episode(backend, glom_task, "unreadable_file") as sb:
        assert "Permission denied" in run(sb, f"cat {target}").stderr
        assert re.search(r"^---------- 1 root root", run(sb, f"ls -l {target}").stdout, re.M)
        assert "Permission denied" in run(sb, f"rm -f {target}").stderr  # parent is root-owned too
        assert "PermissionError" in run(sb, "python -c 'import glom'").stderr
        sb.restore()
        assert run(sb, f"head -c 20 {target} >/dev/null && echo ok").stdout.strip() == "ok"


def test_read_only_fs(backend, glom_task):
    with open_episode(backend, glom_task, "read_only_fs") as sb:
        assert "Read-only file system" in run(sb, "touch x").stderr
        assert re.search(r"/workspace\s.*\bro\b", run(sb, "findmnt -no TARGET,OPTIONS /workspace").stdout)
        assert run(sb, "echo ok > /tmp/outside && cat /tmp/outside").stdout.strip() == "ok"
        sb.restore()
        assert run(sb, "touch x && echo ok").stdout.strip() == "ok"
        assert "/tmp/outside" not in sb.diff() and "diff --git a/x b/x" in sb.diff()


def test_disk_full(backend, glom_task):
    with open_episode(backend, glom_task, "disk_full") as sb:
        assert "No space left on device" in run(sb, "echo hello > big.txt").stderr
        assert re.search(r"\b100%", run(sb, "df -h /").stdout)
        write = "python -c \"open('/tmp/blob', 'wb').write(b'x' * 200000)\""
        assert "No space left on device" in run(sb, write).stderr  # the disk, not the tool, refuses
        sb.restore()
        assert run(sb, "echo hello > big.txt && cat big.txt").stdout.strip() == "hello"
        assert run(sb, write + " && echo ok").stdout.strip() == "ok"


def test_missing_dependency(backend, glom_task):
    with open_episode(backend, glom_task, "missing_dependency") as sb:
        imp = run(sb, "python -c 'import glom'")
        assert re.search(r"ModuleNotFoundError: No module named '(boltons|face)'", imp.stderr)
        pip = run(sb, "pip install --retries 0 --timeout 2 boltons")
        assert pip.exit_code != 0 and re.search(r"Network is unreachable|NewConnectionError|No matching distribution",
                                                pip.output)
        assert run(sb, "cat /proc/net/dev | grep -c :").stdout.strip() == "1"  # only lo
        sb.restore()
        assert run(sb, "python -c 'import glom; print(1)'").stdout.strip() == "1"


def test_exec_unavailable(backend, glom_task):
    with open_episode(backend, glom_task, "exec_unavailable") as sb:
        outs = [run(sb, c) for c in ("echo ok", "true", "ls")]
        assert all(o.exit_code == 126 and "failed to execute bash: Permission denied" in o.stderr for o in outs)
        with pytest.raises(OSError, match="failed to execute bash"):
            sb.read_file("/workspace/repo/setup.py")
        sb.restore()
        assert run(sb, "echo ok").stdout.strip() == "ok"


def test_broken_site_packages(backend, glom_task):
    with open_episode(backend, glom_task, "broken_site_packages") as sb:
        assert "No module named pytest" in run(sb, "python -m pytest -q").stderr
        assert re.search(r"^drwx------ \d+ root root", run(sb, "ls -ld /workspace/.venv/lib/python3.11/site-packages").stdout)
        assert run(sb, f"echo '#' >> {glom_task.target_file} && echo edited").stdout.strip() == "edited"
        sb.restore()
        res = run(sb, f"python -m pytest -q {glom_task.FAIL_TO_PASS[0]}")
        assert "1 failed" in res.stdout
        assert glom_task.target_file in sb.diff()


def test_test_killed(backend, glom_task):
    with open_episode(backend, glom_task, "test_killed") as sb:
        res = run(sb, f"python -m pytest -q {glom_task.FAIL_TO_PASS[0]}")
        assert res.exit_code == 137
        assert run(sb, "python -c 'print(41+1)'").stdout.strip() == "42"
        assert run(sb, "git status --short && echo ok").exit_code == 0
        sb.restore()
        assert "1 failed" in run(sb, f"python -m pytest -q {glom_task.FAIL_TO_PASS[0]}").stdout


def test_tests_unreadable(backend, glom_task):
    test_file = glom_task.FAIL_TO_PASS[0].split("::")[0]
    with open_episode(backend, glom_task, "tests_unreadable") as sb:
        res = run(sb, "python -m pytest -q")
        assert "PermissionError: [Errno 13] Permission denied" in res.stdout
        assert re.search(r"^---------- 1 root root", run(sb, f"ls -l {test_file}").stdout, re.M)
        sb.restore()
        assert run(sb, f"head -1 {test_file} > /dev/null && echo ok").stdout.strip() == "ok"


@pytest.mark.parametrize("name,text", [("text_file_busy", "Text file busy"),
                                       ("resource_busy", "Resource temporarily unavailable")])
def test_temporary_faults_fail_exactly_twice(backend, glom_task, name, text):
    with open_episode(backend, glom_task, name) as sb:
        results = [run(sb, "python -c 'print(7)'") for _ in range(4)]
        assert [text in r.output for r in results] == [True, True, False, False]
        assert [r.stdout.strip() for r in results[2:]] == ["7", "7"]


def test_already_fixed(backend, glom_task):
    with open_episode(backend, glom_task, "already_fixed") as sb:
        ids = " ".join(glom_task.FAIL_TO_PASS)
        res = run(sb, f"python -m pytest -q {ids}")
        assert res.exit_code == 0 and f"{len(glom_task.FAIL_TO_PASS)} passed" in res.stdout
        assert len(run(sb, "git log --oneline").stdout.splitlines()) == 1
        assert sb.diff() == ""
