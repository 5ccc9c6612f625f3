"""The backend conformance suite: what every backend must do the same way (exec semantics, exit
codes, timeouts, output caps, read/write as the agent, diff, restore, close, fork). A new backend
adds itself to BACKENDS below (with whatever engine fixture it needs) and must pass all of it;
one that can fork also adds itself to FORKING and passes the fork tests, one that cannot must
refuse with ``ForkUnsupported`` saying why."""

import os
import subprocess

import pytest

from impasse.conditions.faults import LockPaths, PidsExhausted, ReadOnlyWorkspace, TaskFacts
from impasse.layout import AGENT_GID, AGENT_UID
from impasse.sandbox.base import FileAccessError, ForkUnsupported, SandboxError

BACKENDS = ["plain", "local", "docker"]
FORKING = ["local", "docker"]


@pytest.fixture(scope="module")
def layer(tmp_path_factory):
    """A tiny task layer: a git repo with one commit, owned by the agent user (as task layers are)."""
    root = tmp_path_factory.mktemp("layer")
    repo = root / "workspace" / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "mod.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "README").write_text("tiny\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(root), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", "-C", str(repo), *args], env=env, check=True)
    if os.geteuid() == 0:
        for dirpath, dirnames, filenames in os.walk(root / "workspace"):
            for name in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
                os.chown(name, AGENT_UID, AGENT_GID, follow_symlinks=False)
    return root


def _backend(request, name: str):
    from impasse.sandbox.registry import BACKENDS as REGISTRY

    if name == "local":
        if os.geteuid() != 0:
            pytest.skip("the local backend needs root")
        request.applymarker(pytest.mark.slow)
    if name == "docker":
        request.applymarker(pytest.mark.slow)
        return REGISTRY.get("docker")(request.getfixturevalue("docker_client"))
    return REGISTRY.get(name)()


@pytest.fixture(params=BACKENDS)
def sandbox(request, layer):
    with _backend(request, request.param).create([layer]) as sb:
        yield sb


@pytest.fixture(params=FORKING)
def forking(request):
    """A backend that can fork."""
    return _backend(request, request.param)


def test_exit_codes_streams_and_stdin(sandbox):
    res = sandbox.exec("echo out; echo err >&2; exit 3")
    assert (res.exit_code, res.stdout, res.stderr) == (3, "out\n", "err\n")
    assert res.output == "out\nerr\n" and not res.timed_out and not res.truncated
    assert sandbox.exec("cat", stdin=b"hello").stdout == "hello"
    assert sandbox.exec("true").exit_code == 0 and sandbox.exec("false").exit_code == 1


def test_cwd_and_env(sandbox):
    assert sandbox.exec("pwd").stdout.strip() == sandbox.workdir
    assert sandbox.exec("pwd", cwd=f"{sandbox.workdir}/pkg").stdout.strip() == f"{sandbox.workdir}/pkg"
    assert sandbox.exec("echo $IMPASSE_X", env={"IMPASSE_X": "42"}).stdout.strip() == "42"


def test_timeout_kills_and_reports_124(sandbox):
    res = sandbox.exec("echo started; sleep 30", timeout=0.5)
    assert res.timed_out and res.exit_code == 124 and res.duration_s < 10
    assert sandbox.exec("echo alive").stdout.strip() == "alive"


def test_output_cap_keeps_the_head_and_says_so(sandbox):
    res = sandbox.exec("head -c 300000 /dev/zero | tr '\\0' x", output_limit=1000)
    assert res.truncated and res.stdout == "x" * 1000


def test_read_and_write_as_the_agent(sandbox):
    path = f"{sandbox.workdir}/pkg/new.py"
    sandbox.write_file(path, "X = 1\n")
    assert sandbox.read_file(path) == "X = 1\n" == sandbox.read_file(path, as_agent=False)
    assert sandbox.exec(f"cat {path}").stdout == "X = 1\n"
    with pytest.raises(FileAccessError):
        sandbox.read_file(f"{sandbox.workdir}/no/such/file")


def test_diff_is_the_agents_patch_against_the_base_commit(sandbox):
    assert sandbox.diff() == ""
    sandbox.exec("sed -i 's/a - b/a + b/' pkg/mod.py && echo new > notes.txt")
    diff = sandbox.diff()
    assert "-    return a - b" in diff and "+    return a + b" in diff and "diff --git a/notes.txt b/notes.txt" in diff
    # an agent that commits its work, or rewrites its .git, cannot hide it
    sandbox.exec("git -c user.name=a -c user.email=a@a commit -qam mine; rm -rf .git")
    assert "+    return a + b" in sandbox.diff()


def test_restore_without_faults_keeps_the_changes(sandbox):
    sandbox.exec("echo kept > kept.txt")
    sandbox.restore()
    assert sandbox.exec("cat kept.txt").stdout == "kept\n" and "kept.txt" in sandbox.diff()


def test_close_is_final(layer):
    from impasse.sandbox.registry import BACKENDS as REGISTRY

    sb = REGISTRY.get("plain")().create([layer])
    sb.close()
    with pytest.raises(SandboxError):
        sb.exec("true")
    sb.close()  # idempotent


# ----------------------------------------------------------------------------- fork
TARGET = TaskFacts(target_file="pkg/mod.py")
SNAPSHOT = ("cd /workspace/repo; stat -c '%u:%g %a %F %n' . pkg pkg/mod.py notes.txt link /tmp/fifo /tmp; "
            "readlink link; ls -A; python3 -c 'import os; print(os.getxattr(\"pkg/mod.py\", \"user.mark\"))'")


@pytest.mark.parametrize("name", [b for b in BACKENDS if b not in FORKING])
def test_a_backend_that_cannot_fork_says_why(request, layer, name):
    with _backend(request, name).create([layer]) as sb, pytest.raises(ForkUnsupported, match=r"cannot fork: \w+"):
        sb.fork()


def test_a_fork_is_a_copy_of_the_files_and_then_goes_its_own_way(forking, layer):
    """Everything the agent changed is in the copy (new files and their modes, a symlink, a fifo,
    a deletion, an extended attribute, files outside the workspace); then a write in one is not
    in the other, and each lives without the other."""
    parent = forking.create([layer])
    try:
        made = parent.exec("echo parent > notes.txt && chmod 600 notes.txt && ln -s pkg/mod.py link && rm README "
                           "&& mkfifo /tmp/fifo && echo t > /tmp/t.txt && python3 -c 'import os; "
                           "os.setxattr(\"pkg/mod.py\", \"user.mark\", b\"m\")'")
        assert made.exit_code == 0, made.output
        before = parent.exec(SNAPSHOT)
        assert before.exit_code == 0 and "notes.txt" in before.stdout and "README" not in before.stdout, before.output
        child = parent.fork()
        with child:
            assert child.id != parent.id
            assert child.exec(SNAPSHOT).stdout == before.stdout
            assert child.exec("cat /tmp/t.txt").stdout == "t\n" and child.diff() == parent.diff()
            child.exec("echo child > notes.txt && echo mine > child.txt")
            parent.exec("echo parent2 >> notes.txt")
            assert parent.exec("cat notes.txt").stdout == "parent\nparent2\n"
            assert child.exec("cat notes.txt").stdout == "child\n"
            assert "child.txt" in child.diff() and "child.txt" not in parent.diff()
            parent.close()  # the copy does not need its parent
            assert child.exec("cat notes.txt; ls child.txt").stdout == "child\nchild.txt\n"
            grandchild = child.fork()  # a fork of a fork
            with grandchild:
                assert grandchild.exec("cat notes.txt").stdout == "child\n"
    finally:
        parent.close()


def test_a_fork_keeps_locked_paths_locked_and_restores_only_itself(forking, layer):
    parent = forking.create([layer], [LockPaths(target="target_file", mode="read_only")], TARGET)
    with parent:
        assert "Permission denied" in parent.exec("echo '#' >> pkg/mod.py").output
        owners = parent.exec("stat -c '%u:%g %a' pkg pkg/mod.py").stdout
        assert owners.startswith("0:0")  # root's now
        with parent.fork() as child:
            assert child.exec("stat -c '%u:%g %a' pkg pkg/mod.py").stdout == owners
            assert "Permission denied" in child.exec("echo '#' >> pkg/mod.py").output
            child.restore()
            assert child.exec("echo '# fixed' >> pkg/mod.py").exit_code == 0
            assert child.exec("stat -c '%u:%g' pkg/mod.py").stdout == f"{AGENT_UID}:{AGENT_GID}\n"
            assert "Permission denied" in parent.exec("echo '#' >> pkg/mod.py").output  # still locked here
            assert "# fixed" in child.diff() and "# fixed" not in parent.diff()
        parent.restore()  # the parent's own record of what it locked is intact
        assert parent.exec("echo '# later' >> pkg/mod.py").exit_code == 0


def test_a_fork_carries_a_temporary_faults_remaining_failures(forking, layer):
    spec = PidsExhausted(failures=2)
    if reason := forking.unsupported(spec):
        pytest.skip(reason)
    with forking.create([layer], [spec], TaskFacts()) as parent:
        assert "Resource temporarily unavailable" in parent.exec("echo a | cat").output  # 1 of 2
        with parent.fork() as child:
            for sb in (parent, child):  # each copy fails once more, then runs
                assert "Resource temporarily unavailable" in sb.exec("echo a | cat").output
                assert sb.exec("echo a | cat").stdout == "a\n"


def test_a_fork_carries_a_fault_held_by_the_kernel(forking, layer):
    """A read-only workspace is a mount, in no file: the fork applies it to itself."""
    with forking.create([layer], [ReadOnlyWorkspace()], TaskFacts()) as parent:
        assert "Read-only file system" in parent.exec("touch x").output
        with parent.fork() as child:
            assert "Read-only file system" in child.exec("touch x").output
            child.restore()
            assert child.exec("touch x").exit_code == 0
            assert "Read-only file system" in parent.exec("touch x").output
