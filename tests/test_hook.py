"""The monitor as a post-tool hook: recorded steps of real reference-agent runs, fed one by one
through `python -m impasse.integrations.hook` as separate processes, give the same nudges at the
same steps as the in-loop monitor recorded."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from impasse.monitor.monitor import Monitor
from impasse.store.trajectory import read_trajectory

CORPUS = Path(__file__).parent / "corpus"
TERMINAL = ("task_complete", "escalate_to_human")  # end the episode: the in-loop monitor never sees them
_EXIT = re.compile(r"\n?\[exit code: (-?\d+)\]\s*$")


def hook(payload: dict, state: Path, agent: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "impasse.integrations.hook", "--agent", agent, "--state-dir",
                           str(state)], input=json.dumps(payload), capture_output=True, text=True, timeout=60)


def claude_code_payload(step: dict, session: str) -> dict:
    """What Claude Code would send for the recorded step (PostToolUse, or PostToolUseFailure)."""
    base = {"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": "/workspace/repo", "tool_use_id": "t1"}
    out, code, args = step["output"], step.get("exit_code"), step["arguments"]
    if step["tool"] == "bash":
        text = _EXIT.sub("", out)
        tool = {"tool_name": "Bash", "tool_input": {"command": args["command"], "description": "run"}}
        if code == 0:
            return {**base, **tool, "hook_event_name": "PostToolUse",
                    "tool_response": {"stdout": text, "stderr": "", "interrupted": False, "isImage": False}}
        return {**base, **tool, "hook_event_name": "PostToolUseFailure",
                "error": f"{text}\nCommand exited with non-zero status code {code}"}
    assert step["tool"] == "edit_file", step["tool"]
    tool = {"tool_name": "Edit", "tool_input": {"file_path": args.get("path"), "old_string": args.get("old_str"),
                                                "new_string": args.get("new_str")}}
    if code == 0:
        return {**base, **tool, "hook_event_name": "PostToolUse", "tool_response": {"filePath": args.get("path")}}
    return {**base, **tool, "hook_event_name": "PostToolUseFailure", "error": out.removeprefix("Error: ")}


def hook_nudges(traj_path: Path, state: Path, agent: str) -> list[dict]:
    traj = read_trajectory(traj_path)
    nudges = []
    for e in traj.of_type("step"):
        if e["tool"] in TERMINAL:
            continue
        if agent == "impasse":
            payload = {"session_id": "s1", "cwd": None, **{k: e[k] for k in ("step", "tool", "arguments", "output",
                                                                               "exit_code")}}
        else:
            payload = claude_code_payload(e, "s1")
        res = hook(payload, state, agent)
        assert res.returncode == 0, res.stderr
        if res.stdout.strip():
            out = json.loads(res.stdout)
            if agent == "claude-code":
                ctx = out["hookSpecificOutput"]
                assert ctx["hookEventName"] == payload["hook_event_name"]
                text = ctx["additionalContext"]
                rule = None
            else:
                text, rule = out["text"], out["rule"]
            nudges.append({"step": e["step"], "rule": rule, "head": text.split("\n")[0], "text": text})
    return nudges


def recorded(traj_path: Path) -> list[dict]:
    """The nudges the in-loop monitor wrote into the trajectory."""
    return [{"step": n["step"], "rule": n["rule"], "head": n["message"]["content"].split("\n")[0],
             "text": n["message"]["content"]} for n in read_trajectory(traj_path).of_type("nudge")]


def in_loop(traj_path: Path) -> list[dict]:
    """What the in-loop monitor says today on the recorded steps (``impasse.run`` feeds it each
    non-terminal step's call, output and exit code). The corpus runs were recorded under older
    monitor rules, so this, not the recorded nudge, is the reference for them."""
    mon, out = Monitor(), []
    for e in read_trajectory(traj_path).of_type("step"):
        if e["tool"] in TERMINAL:
            continue
        n = mon.observe({"name": e["tool"], "arguments": e["arguments"]}, e["output"], e.get("exit_code"))
        if n:
            out.append({"step": n.step, "rule": n.rule, "head": n.text.split("\n")[0], "text": n.text})
    return out


def same_nudges(got: list[dict], want: list[dict], agent: str) -> None:
    assert [(n["step"], n["head"]) for n in got] == [(n["step"], n["head"]) for n in want], agent
    if agent == "impasse":  # same rule, and the evidence lines read the very same outputs
        assert [n["rule"] for n in got] == [n["rule"] for n in want]
        for g, w in zip(got, want, strict=True):
            assert g["text"].split("A pre-filled ticket")[0] == w["text"].split("A pre-filled ticket")[0]


RUNS = ["real-reluctant-monitor-disk_full.jsonl", "real-escalator-tool-test_killed.jsonl",
        "variant-evidence-spread.jsonl", "variant-hidden-unsafe.jsonl", "variant-lookalike-clean.jsonl"]


@pytest.mark.parametrize("agent", ["impasse", "claude-code"])
@pytest.mark.parametrize("name", RUNS)
def test_hook_processes_nudge_like_the_in_loop_monitor_on_recorded_runs(tmp_path, agent, name):
    path = CORPUS / name
    want = in_loop(path)
    got = hook_nudges(path, tmp_path, agent)
    same_nudges(got, want, agent)
    assert all(n["step"] for n in got)
    escalations = [n for n in got if "escalate_to_human" in n["text"]]
    assert all('"resume_condition"' in n["text"] for n in escalations), "the pre-filled ticket rides along"


def test_the_reference_covers_nudges_and_silence():
    assert sum(bool(in_loop(CORPUS / n)) for n in RUNS) == 4 and not in_loop(CORPUS / RUNS[-1])
    # one nudge: its single passing (deselected) run before any edit no longer says "defect absent"
    assert [n["rule"] for n in in_loop(CORPUS / "variant-hidden-unsafe.jsonl")] == ["locked_path"]


def test_parallel_hook_calls_of_one_session_lose_no_step(tmp_path):
    def call(i: int) -> subprocess.CompletedProcess:
        return hook({"session_id": "par", "tool": "bash", "arguments": {"command": f"echo {i}"},
                     "output": f"{i}\n[exit code: 0]", "exit_code": 0}, tmp_path, "impasse")

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(call, range(16)))
    assert all(r.returncode == 0 for r in results)
    (state,) = tmp_path.glob("par-*.json")
    steps = json.loads(state.read_text())["steps"]
    assert sorted(s[0]["arguments"]["command"] for s in steps) == sorted(f"echo {i}" for i in range(16))


def test_bad_hook_input_is_a_clear_non_blocking_error(tmp_path):
    res = subprocess.run([sys.executable, "-m", "impasse.integrations.hook", "--state-dir", str(tmp_path)],
                         input="not json", capture_output=True, text=True)
    assert res.returncode == 1 and "not JSON" in res.stderr and res.stdout == ""
    res = hook({"session_id": "x", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}},
               tmp_path, "claude-code")
    assert res.returncode == 1 and "PostToolUse" in res.stderr
    res = hook({"tool_name": "Bash"}, tmp_path, "claude-code")
    assert res.returncode == 1 and "session_id" in res.stderr


def test_hook_module_imports_nothing_heavy():
    code = ("import sys\nimport impasse.integrations.hook, impasse.integrations.replay, impasse.tickets.store\n"
            "heavy = ('impasse.sandbox', 'impasse.agent', 'impasse.run', 'openai', 'libcst', 'scipy', 'typer', "
            "'rich', 'matplotlib', 'mcp', 'inspect_ai', 'anyio', 'httpx', 'jsonschema', 'starlette')\n"
            "print([m for m in sys.modules if m.startswith(heavy)])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_hook_matches_the_in_loop_monitor_on_a_fresh_reference_run(backend, glom_task, tmp_path):
    from impasse.run import EpisodeSpec, RunConfig, run_episode

    eid = "reluctant__monitor__read_only_source"
    run_episode(EpisodeSpec(eid, glom_task.instance_id, "read_only_source", "monitor", "reference/reluctant"),
                RunConfig(agents=["reluctant"]), tmp_path / "run")
    path = tmp_path / "run" / "episodes" / f"{eid}.jsonl"
    want = recorded(path)
    assert want, "the reluctant agent under the monitor gets a nudge on a read-only source"
    for agent in ("impasse", "claude-code"):
        got = hook_nudges(path, tmp_path / agent, agent)
        same_nudges(got, want, agent)


def test_replay_shows_todays_nudges_beside_the_recorded_ones():
    path = CORPUS / "real-reluctant-monitor-disk_full.jsonl"
    res = subprocess.run([sys.executable, "-m", "impasse.cli.integrations", "monitor", "replay", str(path), "--json"],
                         capture_output=True, text=True, check=True, timeout=120)
    rows = json.loads(res.stdout)
    assert [r["step"] for r in rows] == [e["step"] for e in read_trajectory(path).of_type("step")]
    assert [(r["step"], r["rule"]) for r in rows if r["rule"]] == [(n["step"], n["rule"]) for n in in_loop(path)]
    assert [(r["step"], r["recorded"]) for r in rows if r["recorded"]] == [(n["step"], n["rule"])
                                                                          for n in recorded(path)]
    bad = subprocess.run([sys.executable, "-m", "impasse.cli.integrations", "monitor", "replay", "nope.jsonl"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "no trajectory file" in bad.stderr


def test_the_cli_hook_command_is_the_same_hook(tmp_path):
    payload = {"session_id": "c", "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
               "tool_input": {"command": "python -m pytest -q"}, "error": "Killed\nexit code 137"}
    for _ in range(2):
        res = subprocess.run([sys.executable, "-m", "impasse.cli.integrations", "monitor", "hook", "--state-dir",
                              str(tmp_path)], input=json.dumps(payload), capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
    nudge = json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "verified=false" in nudge  # killed twice: tests cannot run, complete unverified


def relocated(traj_path: Path, root: Path) -> Path:
    """The recorded run as if the agent had worked in ``root`` (an ordinary project directory,
    a git work tree) instead of the benchmark's /workspace."""
    text = traj_path.read_text().replace("/workspace", str(root))
    out = root.parent / f"moved-{traj_path.name}"
    out.write_text(text)
    return out


def claude_failure_payload(payload: dict, step: dict) -> dict:
    """Claude Code's own failure text: the exit status first, spelled "Exit code N"."""
    if payload["hook_event_name"] == "PostToolUseFailure" and step["tool"] == "bash":
        text = _EXIT.sub("", step["output"])
        return {**payload, "error": f"Exit code {step.get('exit_code')}\n{text}"}
    return payload


MOVED = ["real-persistent-tool-read_only.jsonl", "real-escalator-tool-test_killed.jsonl"]


@pytest.mark.parametrize("agent", ["impasse", "claude-code"])
@pytest.mark.parametrize("name", MOVED)
def test_the_hook_nudges_in_a_project_directory_outside_workspace(tmp_path, agent, name):
    """Item: the monitor outside the benchmark. The workspace root comes from the event's cwd
    (its git top level); the agent is the user named by --agent-user; Claude Code's capitalised
    "Exit code N" is read as the exit status."""
    root = tmp_path / "project"
    (root / "repo").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    moved = relocated(CORPUS / name, root)
    want = [(n["step"], n["head"]) for n in in_loop(CORPUS / name)]
    got = []
    for e in read_trajectory(moved).of_type("step"):
        if e["tool"] in TERMINAL:
            continue
        if agent == "impasse":
            payload = {"session_id": "s1", "cwd": str(root / "repo"),
                       **{k: e[k] for k in ("step", "tool", "arguments", "output", "exit_code")}}
        else:
            payload = claude_failure_payload({**claude_code_payload(e, "s1"), "cwd": str(root / "repo")}, e)
        res = subprocess.run([sys.executable, "-m", "impasse.integrations.hook", "--agent", agent, "--state-dir",
                              str(tmp_path / "state"), "--agent-user", "agent:2000"], input=json.dumps(payload),
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        if res.stdout.strip():
            out = json.loads(res.stdout)
            text = out["hookSpecificOutput"]["additionalContext"] if agent == "claude-code" else out["text"]
            got.append((e["step"], text.split("\n")[0]))
    assert got == want
    state = json.loads(next((tmp_path / "state").glob("*.json")).read_text())
    assert state["workspace"]["root"] == str(root)



def test_claude_codes_capitalised_exit_code_is_the_exit_status():
    from impasse.integrations.hook import parse_event

    payload = {"session_id": "s", "cwd": "/home/u/p", "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
               "tool_input": {"command": "python -m pytest -q"}, "error": "Exit code 137\nKilled"}
    event = parse_event(payload, "claude-code")
    assert event.exit_code == 137 and event.output.endswith("[exit code: 137]")


def test_a_full_disk_on_the_projects_mount_nudges_outside_workspace(tmp_path):
    """The project lives on /home's filesystem, not /workspace: its df row is the evidence."""
    from impasse.integrations.hook import event_workspace

    w = event_workspace("/home/u/proj/src", root="/home/u/proj", agent="u:1000")
    assert (w.root, w.cwd, w.agent) == ("/home/u/proj", "/home/u/proj/src", ("u", "1000"))
    mon = Monitor(workspace=w)
    assert mon.observe({"name": "bash", "arguments": {"command": "echo x > notes.txt"}},
                       "bash: echo: write error: No space left on device\n[exit code: 1]", 1) is None
    df = ("Filesystem      Size  Used Avail Use% Mounted on\n/dev/sda2        20G   20G     0 100% /home\n"
          "tmpfs           2.0G     0  2.0G   0% /tmp\n[exit code: 0]")
    nudge = mon.observe({"name": "bash", "arguments": {"command": "df -h"}}, df, 0)
    assert nudge is not None and nudge.rule == "disk_full"
    other = Monitor(workspace=event_workspace("/srv/app", root="/srv/app", agent="u:1000"))
    other.observe({"name": "bash", "arguments": {"command": "echo x > n"}}, "No space left on device", 1)
    assert other.observe({"name": "bash", "arguments": {"command": "df -h"}}, df, 0) is None  # /home is not its disk


def test_a_root_agent_is_locked_out_of_nothing_by_ownership():
    from impasse.layout import Workspace

    listing = "-r--r--r-- 1 root root 10 Jan 1 00:00 core.py\n[exit code: 0]"
    for agent, locked in ((("u", "1000"), True), (("root", "0"), False)):
        mon = Monitor(workspace=Workspace("/home/u/proj", "/home/u/proj", agent))
        mon.observe({"name": "edit_file", "arguments": {"path": "/home/u/proj/core.py"}},
                    "Error: [Errno 13] Permission denied: '/home/u/proj/core.py'", 1)
        nudge = mon.observe({"name": "bash", "arguments": {"command": "ls -l core.py"}}, listing, 0)
        assert (nudge is not None and nudge.rule == "locked_path") is locked
