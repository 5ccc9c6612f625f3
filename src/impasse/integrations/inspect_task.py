"""An impasse suite as an inspect_ai task: ``inspect eval impasse/integrations/inspect_task.py``.

- **sandbox** ``impasse``: inspect's sandbox-provider interface over one impasse Env per sample
  and epoch (the task's image + the blocker condition's faults): inspect opens it per sample
  (``sample_init`` resets the Env, so its trajectory starts) and closes it; other solvers may use
  it through ``sandbox()`` (``exec`` / ``read_file`` / ``write_file`` run as the agent, faults
  apply; what they do is not recorded as the agent's steps).
- **solver** :func:`impasse_loop`: impasse's loop drives that Env with inspect's model behind
  impasse's ``Model`` protocol. Each sample epoch is its own episode and trajectory (its id
  carries a fresh suffix, so a re-run never touches an earlier trajectory). An episode that ends
  in a model error, or a harness failure, raises: inspect records the sample as an error, not as
  a score of 0.
- **scorer** :func:`impasse_annotator`: the annotator over the finished trajectory (the Env graded
  the patch in a clean copy at the episode's end).
"""

from __future__ import annotations

import json
import shlex
import uuid
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
from impasse.suites.base import slug

SANDBOX = "impasse"
SCORED = ("resolved", "escalated", "premature_handoff", "post_evidence_unsafe")
TRAJECTORY = "impasse_trajectory"


class EpisodeFailed(RuntimeError):
    """The episode ended in a model error or a harness failure: an error, not a score."""


@sandboxenv(name=SANDBOX)
class ImpasseSandbox(SandboxEnvironment):
    """One impasse Env per sample epoch. Sample metadata: ``instance_id``, ``condition``,
    ``interface``, ``step_limit``, ``run_dir`` (the task puts them there)."""

    def __init__(self, env: Any) -> None:
        self.env = env

    @classmethod
    async def sample_init(cls, task_name: str, config: Any, metadata: dict[str, Any]) -> dict[str, SandboxEnvironment]:
        import impasse.env

        for key in ("instance_id", "condition"):
            if key not in metadata:
                raise ValueError(f"the impasse sandbox needs sample metadata {key!r}")
        try:
            model = str(get_model())
        except Exception:  # noqa: BLE001 - outside an eval (a bare sandbox): no model to name
            model = "inspect"
        episode = f"{metadata.get('sample_id', metadata['instance_id'])}__{uuid.uuid4().hex[:8]}"
        env = impasse.env.make("blockers", task=metadata["instance_id"], condition=metadata["condition"],
                               interface=metadata.get("interface", "tool"), step_limit=int(metadata.get("step_limit", 80)),
                               out=metadata.get("run_dir", "impasse-inspect-run"), episode_id=slug(episode),
                               agent=f"model/{model}", agent_kind="model", header={"harness": "inspect_ai"})
        await anyio.to_thread.run_sync(env.reset)
        return {"default": cls(env)}

    @classmethod
    async def sample_cleanup(cls, task_name: str, config: Any, environments: dict[str, SandboxEnvironment],
                             interrupted: bool) -> None:
        for env in environments.values():
            if isinstance(env, ImpasseSandbox):
                await anyio.to_thread.run_sync(env.env.close)

    async def exec(self, cmd: list[str], input: str | bytes | None = None, cwd: str | None = None,
                   env: dict[str, str] | None = None, user: str | None = None, timeout: int | None = None,
                   timeout_retry: bool = True, concurrency: bool = True) -> ExecResult[str]:
        line = shlex.join(cmd)
        if env:
            line = "env " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " " + line
        if cwd:
            line = f"cd {shlex.quote(cwd)} && {line}"
        stdin = input.encode() if isinstance(input, str) else input
        sb = self.env.sandbox
        res = await anyio.to_thread.run_sync(lambda: sb.exec(line, float(timeout or 60), stdin, user or "agent"))
        if res.timed_out:
            raise TimeoutError(f"command timed out after {timeout or 60}s: {line}")
        return ExecResult(success=res.exit_code == 0, returncode=res.exit_code, stdout=res.stdout, stderr=res.stderr)

    async def write_file(self, file: str, contents: str | bytes) -> None:
        text = contents.decode() if isinstance(contents, bytes) else contents
        await anyio.to_thread.run_sync(self.env.sandbox.write_file, file, text)

    async def read_file(self, file: str, text: bool = True) -> Any:
        content = await anyio.to_thread.run_sync(self.env.sandbox.read_file, file)
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


def _drive(env: Any, model: InspectModel) -> None:
    from impasse.agent import loop

    loop.run(env, model)


@solver
def impasse_loop():
    """impasse's loop driving the sample's Env (the ``impasse`` sandbox) with inspect's model."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        try:
            env = sandbox().as_type(ImpasseSandbox).env  # inspect hands out a proxy around our environment
        except TypeError as e:
            raise ValueError(f"impasse_loop needs the {SANDBOX!r} sandbox (Task(sandbox={SANDBOX!r}))") from e
        model = InspectModel()
        env.note({"type": "inspect_sample", "sample_id": str(state.sample_id), "epoch": state.epoch,
                  "sample_uuid": getattr(state, "uuid", None), "model": model.name})
        state.store.set(TRAJECTORY, str(Path(env.store.rd.trajectory(env.episode_id))))
        await anyio.to_thread.run_sync(_drive, env, model)
        state.messages = chat_messages(env.messages, model.name)
        ending = env.endings[-1] if env.endings else {}
        if ending.get("ending") == "error":
            raise EpisodeFailed(f"impasse episode {env.episode_id} ended in a model error: {ending.get('error')}")
        if env.status != "done":
            raise EpisodeFailed(f"impasse episode {env.episode_id} did not finish ({env.status}); see its trajectory")
        return state

    return solve


@scorer(metrics={name: [mean()] for name in SCORED})
def impasse_annotator():
    """Annotate the finished trajectory (graded by its Env at the episode's end)."""

    async def score(state: TaskState, target: Target) -> Score:
        from impasse.annotate.annotator import annotate
        from impasse.store.trajectory import read_trajectory

        path = Path(state.store.get(TRAJECTORY))
        a = annotate(read_trajectory(path))
        values = {name: float(bool(getattr(a, name))) for name in SCORED}
        return Score(value=values, answer=a.ending, metadata={"annotation": a.to_json(), "trajectory": str(path)})

    return score


@task
def impasse_suite(instances: str, condition: str = "clean", interface: str = "tool", step_limit: int = 80,
                  run_dir: str = "impasse-inspect-run") -> Task:
    """``instances``: comma-separated instance ids of built tasks (``impasse tasks list``)."""
    from impasse.suites.blockers import find_task

    samples = []
    for iid in [s.strip() for s in instances.split(",") if s.strip()]:
        inst = find_task(iid, Path(run_dir) / "instances.jsonl")
        sid = f"{inst.instance_id}__{condition}__{interface}"
        samples.append(Sample(id=sid, input=inst.problem_statement,
                              metadata={"instance_id": inst.instance_id, "condition": condition, "interface": interface,
                                        "step_limit": step_limit, "run_dir": run_dir, "sample_id": sid}))
    if not samples:
        raise ValueError("impasse_suite needs at least one instance id (-T instances=ID[,ID...])")
    return Task(dataset=MemoryDataset(samples), solver=impasse_loop(), scorer=impasse_annotator(), sandbox=SANDBOX)
