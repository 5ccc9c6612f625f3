"""Several impasse processes on one machine and one cache at once: two runs, editors that make
same-size edits and read them back, sandboxes opened (and stale episodes swept) from another pid
namespace, and a forced rebuild of the very package the runs use. Nothing may disturb another
process's live episode: every edit reported as saved is there, in the episode and in the graded
patch, and there is no harness error."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from impasse.store.trajectory import read_trajectory

pytestmark = pytest.mark.slow

IMPASSE = [sys.executable, "-m", "impasse.cli"]

EDITOR = textwrap.dedent("""
    import sys
    from impasse.env.tools import run_edit
    from impasse.tasks.episode import open_episode
    from impasse.sandbox.local import LocalBackend
    from impasse.tasks.build import all_instances

    inst = next(i for i in all_instances() if i.instance_id == sys.argv[1])
    backend = LocalBackend()
    target = "/workspace/repo/" + inst.target_file
    problems = 0
    for episode in range(int(sys.argv[2])):
        with open_episode(backend, inst, "clean") as sb:
            sb.exec(f"echo '#impasse-000' >> {target}")
            for k in range(1, 7):  # same size every time: only the bytes tell the edits apart
                new = f"#impasse-{k:03d}\\n"
                out = run_edit(sb, target, f"#impasse-{k - 1:03d}\\n", new)
                seen = sb.exec(f"tail -c {len(new)} {target}").stdout
                if out.exit_code != 0 or seen != new or "+" + new.strip() not in sb.diff():
                    problems += 1
                    print(f"episode {episode} edit {k}: {out.output!r} but the file ends {seen!r}", flush=True)
    sys.exit(1 if problems else 0)
""")


def test_concurrent_processes_never_lose_an_edit(glom_tasks, tmp_path):
    inst = glom_tasks[0]
    ids = ",".join(i.instance_id for i in glom_tasks)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    procs = {}
    for k in range(2):
        procs[f"run{k}"] = subprocess.Popen(
            [*IMPASSE, "run", "--tasks", ids, "--conditions", "clean,text_file_busy,read_only_source,already_fixed",
             "--interfaces", "baseline,tool", "--agent", "oracle", "--jobs", "2", "--out", str(tmp_path / f"run{k}")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    for k in range(2):
        procs[f"editor{k}"] = subprocess.Popen([sys.executable, "-c", EDITOR, inst.instance_id, "4"],
                                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    exec_loop = " ".join([*IMPASSE, "sandbox", "exec", inst.instance_id, "--", "true"])
    procs["other-pid-namespace"] = subprocess.Popen(
        ["bash", "-c", f"for i in 1 2 3 4 5 6; do unshare --pid --fork --mount-proc {exec_loop} || exit 1; done"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    procs["rebuild"] = subprocess.Popen(
        [*IMPASSE, "tasks", "build", "glom==25.12.0", "--max-per-package", "2", "--force", "--jobs", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    outputs = {name: p.communicate(timeout=900)[0] for name, p in procs.items()}
    for name, p in procs.items():
        assert p.returncode == 0, f"{name} failed:\n{outputs[name][-3000:]}"

    for k in range(2):
        run = tmp_path / f"run{k}"
        summary = json.loads((run / "summary.json").read_text())
        assert len(summary) == 16 and not [r for r in summary if r["ending"] == "harness_error"]
        for r in summary:
            if r["condition"] in ("clean", "text_file_busy"):
                assert r["resolved"], f"{run.name}/{r['episode_id']}: the oracle's fix was lost"
        for path in (run / "episodes").glob("*.jsonl"):
            t = read_trajectory(path)
            patch = t.grade.get("model_patch", "")
            for s in t.steps:
                if s.tool == "edit_file" and s.output.startswith("Edited"):
                    added = [ln for ln in s.arguments["new_str"].splitlines() if ln.strip()]
                    assert all(ln in patch for ln in added), f"{path.name} step {s.index}: saved edit not graded"
