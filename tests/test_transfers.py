"""Exact transfers on the local backend: >= 2,000 agent-side writes and reads under concurrent
load, every read checked against what was written (see tests/transfer_stress.py); and a transfer
that keeps arriving cut is a harness error, never an empty success."""

import pytest
from transfer_stress import stress

from impasse.sandbox.base import SandboxError, read_as_agent

pytestmark = pytest.mark.slow


def test_two_thousand_transfers_under_load_arrive_exactly(backend, glom_task, capsys):
    from impasse.tasks.episode import open_episode

    counts = stress(lambda: open_episode(backend, glom_task, "clean"))
    with capsys.disabled():
        print(f"\nlocal backend: {counts}")
    assert counts["transfers"] >= 2000 and counts["silent_mismatches"] == 0


def test_a_read_that_keeps_arriving_cut_is_a_harness_error(backend, glom_task):
    from impasse.tasks.episode import open_episode

    with open_episode(backend, glom_task, "clean") as sb:
        sb.write_file(f"{sb.workdir}/x.txt", "all of it\n")
        real = sb.exec

        def cut(cmd, *a, **kw):  # an exec stream that drops its output (what podman's attach did)
            res = real(cmd, *a, **kw)
            return type(res)(res.exit_code, "", res.stderr, res.truncated, res.timed_out, res.duration_s)

        sb.exec = cut
        with pytest.raises(SandboxError, match="returned 0 characters where the file holds 10"):
            read_as_agent(sb, "x.txt", 10**6)


def test_a_large_write_to_a_shell_that_cannot_start_is_the_agents_error(backend, glom_task):
    """The shell exits before it reads its input (exec_unavailable): the write fails as the agent's
    (the masked shell's message), never a BrokenPipeError in the harness (the main job met one)."""
    from impasse.sandbox.base import FileAccessError
    from impasse.tasks.episode import open_episode

    with open_episode(backend, glom_task, "exec_unavailable") as sb:
        for size in range(65_000, 400_000, 13_331):  # around and past the pipe's buffer
            with pytest.raises(FileAccessError, match="failed to execute"):
                sb.write_file(f"{sb.workdir}/{glom_task.target_file}", "x" * size + "\n")
