"""An impasse suite as an inspect_ai task: ``inspect eval impasse/integrations/inspect_task.py``.

- **sandbox** ``impasse``: inspect's sandbox-provider interface over impasse's own episode
  sandbox (the task's image + the blocker condition's faults); inspect creates and closes it per
  sample, and its ``exec`` / ``read_file`` / ``write_file`` run as the agent user with faults.
- **solver** :func:`impasse_loop`: impasse's agent loop and tools (bash, edit_file,
  task_complete, escalate_to_human; plus the monitor for ``interface=monitor``) on that sandbox,
  with inspect's model behind impasse's ``Model`` protocol; the trajectory is written in
  impasse's format under ``run_dir``.
- **scorer** :func:`impasse_annotator`: grades the patch in a clean copy and annotates the
  trajectory (resolved, escalated, t*, unsafe requests, ...).

Kept thin on purpose: it calls only ``impasse.tasks.episode.open_episode``,
``impasse.sandbox.registry.get_backend``, ``impasse.suites.blockers.run_task``, ``impasse.agent.loop`` (Loop, LoopConfig,
prompts and its ending exceptions), ``impasse.grade.grade`` and ``impasse.annotate.annotate``.
"""

from __future__ import annotations

import json
import shlex
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import get_model
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import ToolInfo, ToolParams
from inspect_ai.util import ExecResult, SandboxEnvironment, sandbox, sandboxenv

from impasse.agent.loop import ModelResponse
from impasse.integrations.inspect_export import chat_messages

SANDBOX = "impasse"


def _instance(instance_id: str, run_dir: Path | None = None):
    from impasse.store.rundir import RunDir
    from impasse.suites.blockers import run_task

    return run_task(RunDir(run_dir or Path(tempfile.gettempdir())), instance_id)


@sandboxenv(name=SANDBOX)
class ImpasseSandbox(SandboxEnvironment):
    """One impasse episode sandbox per sample (sample metadata: ``instance_id``, ``condition``)."""

    def __init__(self, episode: Any) -> None:
        self.episode = episode

    @classmethod
    async def sample_init(cls, task_name: str, config: Any, metadata: dict[str, str]) -> dict[str, SandboxEnvironment]:
        from impasse.sandbox.registry import get_backend
        from impasse.tasks.episode import open_episode

        for key in ("instance_id", "condition"):
            if key not in metadata:
                raise ValueError(f"the impasse sandbox needs sample metadata {key!r}")
        inst = _instance(metadata["instance_id"])
        sb = await anyio.to_thread.run_sync(open_episode, get_backend("local"), inst, metadata["condition"])
        return {"default": cls(sb)}

    @classmethod
    async def sample_cleanup(cls, task_name: str, config: Any, environments: dict[str, SandboxEnvironment],
                             interrupted: bool) -> None:
        for env in environments.values():
            if isinstance(env, ImpasseSandbox):
                await anyio.to_thread.run_sync(env.episode.close)

    async def exec(self, cmd: list[str], input: str | bytes | None = None, cwd: str | None = None,
                   env: dict[str, str] | None = None, user: str | None = None, timeout: int | None = None,
                   timeout_retry: bool = True, concurrency: bool = True) -> ExecResult[str]:
        line = shlex.join(cmd)
        if env:
            line = "env " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " " + line
        if cwd:
            line = f"cd {shlex.quote(cwd)} && {line}"
        stdin = input.encode() if isinstance(input, str) else input
        res = await anyio.to_thread.run_sync(lambda: self.episode.exec(line, float(timeout or 60), stdin,
                                                                        user or "agent"))
        if res.timed_out:
            raise TimeoutError(f"command timed out after {timeout or 60}s: {line}")
        return ExecResult(success=res.exit_code == 0, returncode=res.exit_code, stdout=res.stdout, stderr=res.stderr)

    async def write_file(self, file: str, contents: str | bytes) -> None:
        text = contents.decode() if isinstance(contents, bytes) else contents
        await anyio.to_thread.run_sync(self.episode.write_file, file, text)

    async def read_file(self, file: str, text: bool = True) -> Any:
        content = await anyio.to_thread.run_sync(self.episode.read_file, file)
        return content if text else content.encode()


class InspectModel:
    """impasse's ``Model`` protocol (sync ``query``) over inspect's current model. ``query`` runs
    in the loop's worker thread and calls back into inspect's event loop for each generation."""

    kind = "model"

    def __init__(self) -> None:
        self.model = get_model()
        self.name = str(self.model)

    def query(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelResponse:
        infos = [ToolInfo(name=t["function"]["name"], description=t["function"]["description"],
                          parameters=ToolParams.model_validate(t["function"]["parameters"])) for t in tools]
        out = anyio.from_thread.run(lambda: self.model.generate(chat_messages(messages, self.name), tools=infos))
        msg = out.message
        calls = [{"id": c.id, "type": "function", "function": {"name": c.function, "arguments": json.dumps(c.arguments)}}
                 for c in msg.tool_calls or []]
        message: dict[str, Any] = {"role": "assistant", "content": msg.text or None}
        if calls:
            message["tool_calls"] = calls
        usage = out.usage.model_dump() if out.usage else None
        return ModelResponse(message, usage)


def _play(loop: Any) -> dict[str, Any]:
    from impasse.agent.loop import AgentError, Completed, Escalated, StepLimitReached

    try:
        loop.run()
    except Completed as e:
        return {"ending": "completed", "verified": e.verified, "summary": e.summary}
    except Escalated as e:
        return {"ending": "escalated", "ticket": e.ticket.model_dump(), "accepted": False}
    except StepLimitReached:
        return {"ending": "step_limit"}
    except AgentError as e:
        return {"ending": "error", "error": str(e)}
    raise AssertionError("the loop ends only by an exception")  # pragma: no cover


@solver
def impasse_loop(interface: str = "tool", step_limit: int = 80, run_dir: str = "impasse-inspect-run"):
    """impasse's loop and tools as the solver, on the sample's impasse sandbox."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        from impasse.agent.loop import Loop, LoopConfig, system_prompt, task_prompt
        from impasse.conditions.cards import card
        from impasse.env.tools import tools_named
        from impasse.monitor.monitor import Monitor
        from impasse.store.trajectory import TrajectoryWriter
        from impasse.suites.blockers import INTERFACES

        try:
            env = sandbox().as_type(ImpasseSandbox)  # inspect hands out a proxy around our environment
        except TypeError as e:
            raise ValueError(f"impasse_loop needs the {SANDBOX!r} sandbox (Task(sandbox={SANDBOX!r}))") from e
        sb, meta = env.episode, state.metadata
        model = InspectModel()
        path = Path(run_dir) / "episodes" / f"{state.sample_id}.jsonl"
        header = {"episode_id": str(state.sample_id), "instance_id": meta["instance_id"],
                  "condition": meta["condition"], "condition_class": card(meta["condition"]).cls,
                  "interface": interface, "agent": f"model/{model.name}", "agent_kind": "model",
                  "step_limit": step_limit, "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        writer = TrajectoryWriter(path, header)
        monitor = Monitor(diff_provider=sb.diff) if interface == "monitor" else None

        def after_step(call, output, exit_code):
            nudge = monitor.observe(call, output, exit_code) if monitor else None
            return nudge.to_json() if nudge else None

        tools = tools_named(list(INTERFACES[interface].tools), sb.workdir)
        loop = Loop(model, sb, writer, tools, LoopConfig(step_limit=step_limit), after_step)
        loop.add_message({"role": "system", "content": system_prompt(sb.workdir, "escalate_to_human" in
                                                                     INTERFACES[interface].tools)})
        loop.add_message({"role": "user", "content": task_prompt(state.input_text, sb.workdir)})
        try:
            ending = await anyio.to_thread.run_sync(_play, loop)
            patch = await anyio.to_thread.run_sync(sb.diff)
            writer.append({"type": "ending", "phase": 1, "steps": loop.steps, **ending, "workspace_diff": patch})
        finally:
            writer.close()
        state.messages = chat_messages(loop.messages, model.name)
        state.store.set("impasse_trajectory", str(path))
        state.store.set("impasse_patch", patch)
        return state

    return solve


SCORED = ("resolved", "escalated", "premature_handoff", "post_evidence_unsafe")


@scorer(metrics={name: [mean()] for name in SCORED})
def impasse_annotator(run_dir: str = "impasse-inspect-run"):
    """Grade the patch in a clean copy of the task, then annotate the trajectory."""

    async def score(state: TaskState, target: Target) -> Score:
        from impasse.annotate.annotator import annotate
        from impasse.grade import grade
        from impasse.sandbox.registry import get_backend
        from impasse.store.trajectory import TrajectoryWriter, read_trajectory

        path = Path(state.store.get("impasse_trajectory"))
        inst = _instance(state.metadata["instance_id"])
        result = await anyio.to_thread.run_sync(lambda: grade(get_backend("local"), inst, state.store.get("impasse_patch"),
                                                              cache_dir=Path(run_dir) / "grades"))
        writer = TrajectoryWriter(path)
        writer.append({"type": "grade", **result})
        writer.append({"type": "final"})
        writer.close()
        a = annotate(read_trajectory(path))
        values = {name: float(bool(getattr(a, name))) for name in SCORED}
        return Score(value=values, answer=a.ending, metadata={"annotation": a.to_json(), "trajectory": str(path)})

    return score


@task
def impasse_suite(instances: str, condition: str = "clean", interface: str = "tool", step_limit: int = 80,
                  run_dir: str = "impasse-inspect-run") -> Task:
    """``instances``: comma-separated instance ids of built tasks (``impasse tasks list``)."""
    samples = []
    for iid in [s.strip() for s in instances.split(",") if s.strip()]:
        inst = _instance(iid)
        samples.append(Sample(id=f"{iid}__{condition}__{interface}", input=inst.problem_statement,
                              metadata={"instance_id": iid, "condition": condition, "interface": interface}))
    if not samples:
        raise ValueError("impasse_suite needs at least one instance id (-T instances=ID[,ID...])")
    return Task(dataset=MemoryDataset(samples), solver=impasse_loop(interface, step_limit, run_dir),
                scorer=impasse_annotator(run_dir), sandbox=SANDBOX)
