"""The evidence monitor as an agent CLI's post-tool hook: one process per tool call.

``python -m impasse.integrations.hook [--agent claude-code]`` (also ``impasse monitor hook``)
reads ONE tool event as JSON on stdin, maps it to the monitor's vocabulary with the agent's
entry in ``hook_agents.yaml``, feeds it to the session's monitor, and prints a nudge (with the
pre-filled ticket) in the form the agent feeds back to its model, or nothing.

The monitor's state lives per session in a small JSON file (the steps seen so far), under an
exclusive ``fcntl`` lock because agents run tools in parallel: each call replays the recorded
steps into a fresh :class:`~impasse.monitor.monitor.Monitor` and then observes the new one, so
the nudges are exactly those of an in-loop monitor fed the same steps, in the order the hook
calls were serialised. Core install only: pydantic / pyyaml / stdlib, no benchmark extras.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import pwd
import re
import subprocess
import sys
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from impasse import paths
from impasse.layout import BENCHMARK, WORKSPACE, Workspace
from impasse.monitor.monitor import Monitor, Nudge, default_rules
from impasse.steps import shell_text

STATE_FORMAT = "impasse.hook-state/1"


class HookInputError(ValueError):
    pass


@cache
def agents() -> dict[str, dict[str, Any]]:
    text = resources.files("impasse.integrations").joinpath("hook_agents.yaml").read_text()
    return yaml.safe_load(text)["agents"]


@dataclass(frozen=True)
class ToolEvent:
    """One tool call in the monitor's vocabulary."""

    session: str
    tool: str
    arguments: dict[str, Any]
    output: str
    exit_code: int | None
    cwd: str | None = None
    event: str | None = None

    def step(self) -> list[Any]:
        return [{"name": self.tool, "arguments": self.arguments}, self.output, self.exit_code, self.cwd]


def _field(payload: dict[str, Any], name: str, what: str) -> Any:
    if name not in payload:
        raise HookInputError(f"hook input has no {name!r} field ({what}); got fields: {', '.join(sorted(payload))}")
    return payload[name]


def _result_text(result: Any, fields: list[str] | None) -> str:
    if isinstance(result, dict):
        parts = [str(result.get(f) or "") for f in (fields or [])]
        return "\n".join(p.rstrip("\n") for p in parts if p.strip())
    return "" if result is None else str(result)


def _map_tool(spec: dict[str, Any], name: str, tool_input: dict[str, Any]) -> tuple[str, dict[str, Any], dict]:
    rule = spec.get("tools", {}).get(name)
    if rule is None:
        return name.lower(), dict(tool_input), spec.get("other", {})
    args = {ours: tool_input.get(theirs, "") for ours, theirs in rule.get("arguments", {}).items()}
    return rule["as"], args, rule


def parse_event(payload: Any, agent: str) -> ToolEvent:
    """Map one hook payload to a :class:`ToolEvent` using the agent's table entry."""
    if agent not in agents():
        raise HookInputError(f"unknown agent {agent!r}; known: {', '.join(agents())} (add one in hook_agents.yaml)")
    if not isinstance(payload, dict):
        raise HookInputError("hook input must be one JSON object")
    spec = agents()[agent]
    session = str(_field(payload, spec["session"], "the session id"))
    name = str(_field(payload, spec["tool_name"], "the tool's name"))
    tool_input = payload.get(spec["tool_input"]) or {}
    if not isinstance(tool_input, dict):
        raise HookInputError(f"{spec['tool_input']!r} must be a JSON object, got {type(tool_input).__name__}")
    cwd = payload.get(spec.get("cwd", "cwd"))
    if "output_field" in spec:  # the agent already speaks the monitor's vocabulary
        code = payload.get(spec["exit_code_field"])
        return ToolEvent(session, name, tool_input, str(payload.get(spec["output_field"]) or ""),
                         code if isinstance(code, int) else None, cwd)
    event = str(_field(payload, spec["event"], "the hook event name"))
    how = spec["events"].get(event)
    if how is None:
        raise HookInputError(f"{agent} hook event {event!r} is not a post-tool event; register the hook for "
                             f"{' / '.join(spec['events'])}")
    tool, args, rule = _map_tool(spec, name, tool_input)
    result = payload.get(how["result"])
    if how["failed"]:
        text = _result_text(result, None)
        m = re.search(spec["exit_code_pattern"], text, re.IGNORECASE)  # "Exit code 1", "exit status 2"
        code = int(m.group(1)) if m else 1
        output = shell_text(text, code) if tool == "bash" else f"Error: {text}"
    else:
        code = 0
        if tool == "bash":
            output = shell_text(_result_text(result, rule.get("output")), 0)
        elif "output" in rule:
            output = _result_text(result, rule["output"])
        else:
            output = str(rule.get("success", "ok")).format(**{k: v for k, v in args.items() if isinstance(v, str)})
    return ToolEvent(session, tool, args, output, code, cwd, event)


def git_diff(cwd: str | None) -> str:
    """Tracked changes against HEAD plus untracked files, as ``diff --git`` lines (what the
    pre-filled ticket lists as saved changes). Empty outside a git repository."""
    if not cwd or not Path(cwd).is_dir():
        return ""
    git = ["git", "-C", cwd, "-c", "core.fileMode=false"]
    try:
        diff = subprocess.run([*git, "diff", "HEAD"], capture_output=True, text=True, timeout=20)
        new = subprocess.run([*git, "ls-files", "--others", "--exclude-standard"], capture_output=True, text=True,
                             timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    if diff.returncode != 0:
        return ""
    return diff.stdout + "".join(f"diff --git a/{f} b/{f}\nnew file\n" for f in new.stdout.splitlines() if f)


def state_dir() -> Path:
    return Path(os.environ.get("IMPASSE_HOOK_STATE") or paths.cache_root() / "hook-sessions")


def _state_path(directory: Path, session: str) -> Path:
    safe = re.sub(r"[^\w.-]", "_", session)[:80]
    return directory / f"{safe}-{hashlib.sha256(session.encode()).hexdigest()[:12]}.json"


def event_workspace(cwd: str | None, root: str | None = None, agent: str | None = None) -> Workspace:
    """Where the agent of a hook event works. The root: ``root`` (``--workspace``, or
    ``$IMPASSE_WORKSPACE``), else the benchmark's ``/workspace`` when the event's cwd is in it,
    else the cwd's git top level, else the cwd. The agent: ``agent`` (``USER[:UID]``, or
    ``$IMPASSE_AGENT_USER``), else the user this hook runs as (the agent CLI's own)."""
    root = root or os.environ.get("IMPASSE_WORKSPACE") or None
    agent = agent or os.environ.get("IMPASSE_AGENT_USER") or None
    benchmark = not cwd or cwd == WORKSPACE or cwd.startswith(WORKSPACE + "/")
    if root is None and benchmark and agent is None:
        return BENCHMARK if not cwd else replace(BENCHMARK, cwd=cwd)
    root = root or _git_toplevel(cwd) or cwd or WORKSPACE
    if agent:
        name, _, uid = agent.partition(":")
        who = (name, uid) if uid else (name,)
    else:
        who = (pwd.getpwuid(os.geteuid()).pw_name, str(os.geteuid()))
    return Workspace(os.path.normpath(root), os.path.normpath(cwd or root), who)


def _git_toplevel(cwd: str | None) -> str | None:
    if not cwd or not Path(cwd).is_dir():
        return None
    try:
        r = subprocess.run(["git", "-C", cwd, "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                           timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() or None if r.returncode == 0 else None


def observe(event: ToolEvent, directory: Path, workspace: str | None = None, agent: str | None = None) -> Nudge | None:
    """Feed one event to its session's monitor (under the session's lock) and save the state. The
    session's workspace is settled by its first event (see :func:`event_workspace`)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = _state_path(directory, event.session)
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = json.loads(path.read_text()) if path.exists() else {"format": STATE_FORMAT, "steps": []}
        version = default_rules().version
        if state.get("rules_version", version) != version:
            raise HookInputError(f"session {event.session} was monitored with rules {state['rules_version']}, "
                                 f"now {version}; delete {path} to start over")
        if "workspace" not in state:
            w = event_workspace(event.cwd, workspace, agent)
            state["workspace"] = {"root": w.root, "cwd": w.cwd, "agent": list(w.agent)}
        ws = state["workspace"]
        monitor = Monitor(diff_provider=lambda: git_diff(event.cwd),
                          workspace=Workspace(ws["root"], ws["cwd"], tuple(ws["agent"])))
        for recorded in state["steps"]:
            monitor.observe(*recorded[:4])
        nudge = monitor.observe(*event.step())
        state.update(session=event.session, rules_version=version, steps=[*state["steps"], event.step()])
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, path)
    return nudge


def render(nudge: Nudge, agent: str, event: ToolEvent) -> str:
    """The nudge in the agent's feedback format."""
    if agents()[agent]["reply"] == "claude-code":
        # additionalContext reaches the model beside the tool result without marking the call as
        # blocked: the monitor informs, the agent stays free to continue.
        return json.dumps({"hookSpecificOutput": {"hookEventName": event.event or "PostToolUse",
                                                  "additionalContext": nudge.text}})
    return json.dumps(nudge.to_json())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="impasse monitor hook", description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", default="claude-code", help=f"payload format: {', '.join(agents())}")
    parser.add_argument("--state-dir", type=Path, default=None, help="per-session state (default $IMPASSE_HOOK_STATE "
                        "or ~/.cache/impasse/hook-sessions)")
    parser.add_argument("--workspace", default=None, help="the project root the agent works in (default "
                        "$IMPASSE_WORKSPACE, else the event's git top level or cwd)")
    parser.add_argument("--agent-user", default=None, help="USER[:UID] the agent runs as (default "
                        "$IMPASSE_AGENT_USER, else this process's user)")
    args = parser.parse_args(argv)
    return run(sys.stdin.read(), args.agent, args.state_dir or state_dir(), sys.stdout, args.workspace,
               args.agent_user)


def run(text: str, agent: str, directory: Path, out: Any, workspace: str | None = None,
        agent_user: str | None = None) -> int:
    """Exit 0 with a nudge or nothing on stdout; exit 1 with a message on stderr for bad input
    (a non-blocking error for Claude Code: the agent carries on without the monitor's word)."""
    try:
        try:
            payload = json.loads(text)
        except json.JSONDecodeError as e:
            raise HookInputError(f"hook input is not JSON (line {e.lineno}: {e.msg}); send one tool event") from e
        event = parse_event(payload, agent)
        nudge = observe(event, directory, workspace, agent_user)
    except HookInputError as e:
        print(f"impasse monitor hook: {e}", file=sys.stderr)
        return 1
    if nudge is not None:
        out.write(render(nudge, agent, event) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
