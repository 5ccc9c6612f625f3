"""The backend conformance suite: what every backend must do the same way (exec semantics, exit
codes, timeouts, output caps, read/write as the agent, diff, restore, close). A new backend adds
itself to BACKENDS below (with whatever engine fixture it needs) and must pass all of it."""

import os
import subprocess

import pytest

from impasse.layout import AGENT_GID, AGENT_UID
from impasse.sandbox.base import FileAccessError, SandboxError

BACKENDS = ["plain", "local", "docker"]


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


@pytest.fixture(params=BACKENDS)
def sandbox(request, layer):
    from impasse.sandbox.registry import BACKENDS as REGISTRY

    if request.param == "local":
        if os.geteuid() != 0:
            pytest.skip("the local backend needs root")
        request.applymarker(pytest.mark.slow)
    if request.param == "docker":
        request.applymarker(pytest.mark.slow)
        backend = REGISTRY.get("docker")(request.getfixturevalue("docker_client"))
    else:
        backend = REGISTRY.get(request.param)()
    with backend.create([layer]) as sb:
        yield sb


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
