"""An edit reported as saved is saved, and a workspace that changes under an episode is a
harness error, never the agent's failure (issue: an edit reported as saved is sometimes lost)."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from impasse import paths
from impasse.agent.reference import fix_edits
from impasse.env.tools import run_edit
from impasse.sandbox.base import WorkspaceLost
from impasse.sandbox.local import oskit
from impasse.tasks.episode import open_episode
from impasse.tasks.image import load_image
from impasse.tasks.layer import instance_layer

pytestmark = pytest.mark.slow

SWEEP = "from impasse.sandbox.local import sweep_stale; print(sweep_stale())"


def in_other_pid_namespace(code: str) -> subprocess.CompletedProcess:
    """Run Python in a fresh pid namespace, where every pid outside looks dead."""
    return subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", code],
                          capture_output=True, text=True, timeout=120, env=os.environ)


def test_same_second_same_size_edit_reaches_the_tests_and_the_patch(backend, glom_task):
    """The original failure: a size-preserving fix made in the same second as the file's
    recorded time was invisible to Python's pyc check and to git's stat cache."""
    target = f"/workspace/repo/{glom_task.target_file}"
    (old, new), *_ = fix_edits(glom_task.patch, "")
    assert len(old) == len(new), "this task's bug must preserve the file size for the test to mean anything"
    test = f"{glom_task.test_cmd} {glom_task.FAIL_TO_PASS[0]}"
    with open_episode(backend, glom_task, "clean") as sb:
        assert sb.exec("git status --short").exit_code == 0  # caches every file's stat in the index
        assert "1 failed" in sb.exec(test).stdout  # compiles the buggy module to a pyc
        stamp = sb.exec(f"stat -c %Y {target}").stdout.strip()
        assert run_edit(sb, target, old, new).exit_code == 0
        sb.exec(f"touch -d @{stamp} {target}")  # same second as before, same size: only the bytes differ
        assert sb.exec(f"stat -c %Y {target}").stdout.strip() == stamp
        assert glom_task.target_file in sb.diff()
    image = load_image(glom_task.image)
    layer_file = instance_layer(glom_task, image) / "workspace/repo" / glom_task.target_file
    image_file = image.layer / "workspace/repo" / glom_task.target_file
    assert layer_file.stat().st_mtime == image_file.stat().st_mtime  # never "now": no shared second


def test_edit_reports_success_only_for_content_that_is_really_there(backend, glom_task):
    with open_episode(backend, glom_task, "clean") as sb:
        ok = run_edit(sb, "/workspace/repo/NOTES.txt", "", "kept\n")
        assert ok.exit_code == 0 and sb.read_file("/workspace/repo/NOTES.txt", as_agent=False) == "kept\n"
        # /dev/shm is a per-command tmpfs: the write succeeds and is gone when the call ends
        lost = run_edit(sb, "/dev/shm/notes.py", "", "x = 1\n")
        assert lost.exit_code == 1 and lost.output.startswith("Error:")
        sb.exec("ln -sf /etc/shadow /workspace/repo/shadow_link")
        with pytest.raises(OSError):  # resolved inside the sandbox (root-only decoy), never the host's file
            sb.read_file("/workspace/repo/shadow_link", as_agent=True)
        assert "CANARY" in sb.read_file("/workspace/repo/shadow_link", as_agent=False)


def test_a_sweep_from_another_pid_namespace_leaves_live_episodes_alone(backend, glom_task):
    with open_episode(backend, glom_task, "clean") as sb:
        sb.exec("echo mine > /workspace/repo/mine.txt")
        res = in_other_pid_namespace(SWEEP)
        assert res.returncode == 0, res.stderr
        assert sb.exec("cat /workspace/repo/mine.txt").stdout.strip() == "mine"
        assert "mine.txt" in sb.diff()


def test_an_episode_whose_owner_was_killed_is_swept_from_anywhere(backend, glom_task):
    code = textwrap.dedent(f"""
        import time
        from impasse.tasks.episode import open_episode
        from impasse.sandbox.local import LocalBackend
        from impasse.tasks.build import all_instances
        inst = next(i for i in all_instances() if i.instance_id == {glom_task.instance_id!r})
        sb = open_episode(LocalBackend(), inst, "clean")
        print(sb.id, flush=True)
        time.sleep(120)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=os.environ)
    eid = proc.stdout.readline().strip()
    assert (paths.episodes_dir() / eid / "root" / "workspace").is_dir()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    res = in_other_pid_namespace(SWEEP)
    assert res.returncode == 0 and int(res.stdout.strip()) >= 1, res.stderr
    assert not (paths.episodes_dir() / eid).exists()
    assert str(paths.episodes_dir() / eid) not in Path("/proc/self/mountinfo").read_text()


def test_a_workspace_lost_under_an_episode_is_a_harness_error_never_an_empty_patch(backend, glom_task):
    with open_episode(backend, glom_task, "clean") as sb:
        sb.exec("echo x > /workspace/repo/new.txt")
        oskit.umount(sb.root)  # what a careless sweeper did
        with pytest.raises(WorkspaceLost):
            sb.diff()
        with pytest.raises(WorkspaceLost):
            sb.exec("true")


def test_harness_error_is_recorded_and_resume_runs_the_episode_again(backend, glom_task, tmp_path, monkeypatch):
    from impasse import run as runner
    from impasse.store.trajectory import read_trajectory
    from impasse.tasks import episode

    spec = runner.EpisodeSpec("lost", glom_task.instance_id, "clean", "tool", "reference/oracle")
    cfg = runner.RunConfig(agents=["oracle"])
    opened = episode.open_episode

    def losing(*a, **k):  # what a careless sweeper did: the overlay vanishes after the first test run
        sb = opened(*a, **k)
        original = sb.exec

        def exec_then_lose(cmd, *args, **kw):
            res = original(cmd, *args, **kw)
            if "pytest" in cmd:
                oskit.umount(sb.root)
            return res
        sb.exec = exec_then_lose
        return sb

    monkeypatch.setattr(episode, "open_episode", losing)
    with pytest.raises(WorkspaceLost):
        runner.run_episode(spec, cfg, tmp_path)
    first = read_trajectory(tmp_path / "episodes" / "lost.jsonl")
    assert first.failed and "WorkspaceLost" in first.events[-1]["error"]
    assert not first.of_type("grade")  # never graded
    monkeypatch.setattr(episode, "open_episode", opened)
    summary = runner.run_episode(spec, cfg, tmp_path)
    assert summary["resolved"] and summary["ending"] == "completed"
    kept = json.loads((tmp_path / "attempts" / "lost.1.jsonl").read_text().splitlines()[-1])
    assert kept["type"] == "harness_error"
