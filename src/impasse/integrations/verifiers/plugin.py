"""The verifiers plugin itself: the taskset, its task, the harness that plays it and the
environment (one rollout, or a group of forks), as :mod:`impasse.integrations.verifiers`
describes them. Importing this module needs verifiers (``pip install 'impasse[verifiers]'``)."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import verifiers.v1 as vf
from pydantic import Field

from impasse.agent.endings import AgentError, EndpointError
from impasse.agent.loop import LoopConfig, ModelResponse
from impasse.agent.loop import run as run_loop
from impasse.env import Env, StepResult, make
from impasse.integrations.verifiers import TASKSET_ID
from impasse.store.rundir import RunDir

PLANNED_MODEL = "verifiers"
"""The model name impasse's planner is given: verifiers chooses the model per run, not the taskset."""
STOPPED = "verifiers stopped the rollout (its agent timeout, or the run was cancelled)"


# ------------------------------------------------------------------------------ the taskset
class ImpasseData(vf.TaskData):
    """One planned episode: the suite and the Env spec ``impasse.env.make`` takes."""

    suite: str
    spec: dict[str, Any]


class ImpasseState(vf.State):
    live: Any = Field(None, exclude=True)
    """The rollout's :class:`LiveEpisode` (host-only; never serialized)."""


class ImpasseTasksetConfig(vf.TasksetConfig):
    """Which episodes, chosen as ``impasse run`` chooses them (the same planner, the same fields)."""

    suite: Literal["blockers", "ask"] = "blockers"
    tasks: list[str] = Field(default_factory=list, description="Instance ids or unique prefixes (none: the "
                                                               "package set's built tasks / every ask task)")
    packages: str = "default"
    per_package: int | None = Field(None, ge=1)
    limit: int | None = Field(None, ge=1, description="At most this many task instances")
    conditions: str = Field("all", description="blockers: 'all', condition names and/or classes, comma-separated")
    interfaces: list[str] = Field(default_factory=lambda: ["baseline", "tool", "monitor"],
                                  description="blockers: baseline, tool, monitor; ask: its modes (the "
                                              "default means all three)")
    task_dir: str | None = Field(None, description="ask: a directory of task directories")
    step_limit: int = Field(80, ge=1)
    command_timeout: float = Field(60.0, gt=0)
    restore: bool = False
    ticket_schema: Literal["impasse", "paper"] = "impasse"
    backend: str = "local"
    out: str = Field("runs/verifiers", description="The run directory the episodes' trajectories go to")


class ImpasseTask(vf.Task[ImpasseData, ImpasseState]):
    """One impasse episode. Its rollout makes the Env at setup (or takes over ``start``, a live
    fork, as a member of a group), impasse's harness drives it, finalize ends it if verifiers
    stopped the rollout first, and the reward is the Env's own."""

    start: Env | None = None

    @property
    def key(self) -> str:
        """The spec's identity (the default hashes the position in the taskset too)."""
        return hashlib.sha256(json.dumps([self.data.suite, self.data.spec], sort_keys=True).encode()).hexdigest()

    def taking(self, env: Env) -> ImpasseTask:
        member = copy.copy(self)
        member.start = env
        return member

    async def setup(self, trace: vf.Trace, runtime: vf.Runtime) -> None:
        harness = trace.agent.config.harness if trace.agent is not None else None
        if harness is not None and harness.id.replace("-", "_") != TASKSET_ID.replace("-", "_"):
            raise vf.TaskError(f"impasse episodes are played by the {TASKSET_ID!r} harness (their tools run in "
                               f"impasse's sandbox), not {harness.id!r}: leave --env.agent.harness.id unset")
        live = trace.state.live = LiveEpisode()
        start = self.start
        opener = (lambda: start) if start is not None else (lambda: make(self.data.suite, **episode_spec(
            self.data, trace.agent.config.model if trace.agent is not None else None)))
        await live.call(live.open, opener)
        env = live.env
        trace.info["impasse"] = {"suite": self.data.suite, "episode_id": env.episode_id,
                                 "trajectory": str(RunDir(Path(self.data.spec["out"])).trajectory(env.episode_id)),
                                 **({"group": env.header["group"]} if "group" in env.header else {})}

    async def finalize(self, trace: vf.Trace, runtime: vf.Runtime) -> None:
        live = trace.state.live
        if live is not None:
            await live.call(live.conclude, trace.stop_condition)

    @vf.metric
    async def impasse_values(self, trace: vf.Trace) -> dict[str, float]:
        """The raw value of every reward term, the suite's metrics, the steps taken and the grade."""
        last = finished(trace)
        grade = last.info.get("grade") or {}
        return {**last.info["reward_values"], "steps": float(last.info.get("step", 0)),
                "resolved": float(bool(grade.get("resolved")))}

    @vf.reward
    async def impasse(self, trace: vf.Trace) -> dict[str, float]:
        """Every term of the suite's reward table (``impasse/rewards/<suite>.yaml``), weighted."""
        # + 0.0: a zero times a negative weight is recorded as 0, not -0
        return {name: value + 0.0 for name, value in finished(trace).info["reward_terms"].items()}


def finished(trace: vf.Trace) -> StepResult:
    live = trace.state.live
    last = live.last if live is not None else None
    if last is None or "reward_terms" not in last.info:
        raise ValueError("the impasse episode has no reward: it did not end (a harness error stops it ungraded)")
    return last


class ImpasseTaskset(vf.Taskset[ImpasseTask, ImpasseTasksetConfig]):
    """impasse's blockers or ask suite: one task per planned (task, condition, interface)."""

    def __init__(self, config: ImpasseTasksetConfig) -> None:
        if config.system_prompt is not None:
            raise ValueError("impasse episodes open with their suite's own system prompt and task statement "
                             "(the interface is part of the experiment): drop taskset.system_prompt")
        super().__init__(config)

    def load(self) -> list[ImpasseTask]:
        return [ImpasseTask(data, self.config.task) for data in plan(self.config)]


def plan(config: ImpasseTasksetConfig) -> list[ImpasseData]:
    """The episodes ``impasse run`` would plan for one model, as task data (ValueError naming
    what is wrong with the selection)."""
    from impasse.env import SUITES
    from impasse.run.config import RunConfig

    cfg = RunConfig(suite=config.suite, packages=config.packages, tasks=list(config.tasks),
                    per_package=config.per_package, task_dir=config.task_dir, limit=config.limit,
                    conditions=config.conditions, interfaces=list(config.interfaces),
                    model={"model": PLANNED_MODEL}, step_limit=config.step_limit,
                    command_timeout=config.command_timeout, restore=config.restore,
                    ticket_schema=config.ticket_schema, backend=config.backend)
    suite = SUITES.get(config.suite)
    suite.check(cfg)
    specs, _rows = suite.plan(cfg)
    out = []
    for s in specs:
        spec = {k: v for k, v in suite.env_spec(s, cfg).items() if k not in ("episode_id", "agent")}
        name = f"{config.suite}/{s.instance_id}/{s.condition}/{s.interface}"
        out.append(ImpasseData(id=name, name=name, suite=config.suite, spec={**spec, "out": config.out},
                               prompt=f"impasse {name}: the episode opens with the suite's own messages"))
    return out


def episode_spec(data: ImpasseData, model: str | None) -> dict[str, Any]:
    """The Env spec of one rollout: the planned spec, played by the run's model."""
    return {**data.spec, "agent": f"model/{model or 'unknown'}", "agent_kind": "model",
            "header": {"driver": "verifiers"}}


# ------------------------------------------------------------------------------ one rollout's Env
class LiveEpisode:
    """One rollout's Env. The Env is synchronous and not thread-safe, the rollout is asyncio:
    every Env job (open, the agent loop, the end, close) runs on this episode's one thread, in
    submission order, so whatever verifiers cancels or times out they never overlap, and a job
    once submitted always runs (a cancelled await leaves it running; the next job waits)."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="impasse-episode")
        self.stopped = threading.Event()
        """Set when verifiers cancels the harness: the loop's next model query ends the episode."""
        self.env: Env | None = None
        self.last: StepResult | None = None

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.shield(asyncio.wrap_future(self.pool.submit(fn, *args)))

    def open(self, opener: Callable[[], Env]) -> None:
        self.env = opener()
        if self.env.status == "new":
            self.env.reset()

    def drive(self, model: Any, config: LoopConfig) -> None:
        """impasse's agent loop over the Env; a model service that fails is a harness error
        (recorded, never graded), as in every impasse run, unless verifiers stopped the rollout
        first (its endpoint goes away with it): then the episode ends there, graded."""
        try:
            self.last = run_loop(self.env, Stoppable(model, self.stopped), config)
        except EndpointError as e:
            if self.env.status == "live" and self.stopped.is_set():
                self.last = self.env.end("error", error=STOPPED)
                return
            if self.env.status == "live":
                self.env.harness_error(f"model endpoint: {e}")
            raise

    def conclude(self, stop_condition: str | None) -> None:
        """verifiers stopped the rollout before the episode ended (a limit, a stop rule): the
        episode ends there, as a model that cannot go on, and is graded."""
        if self.env is not None and self.env.status == "live":
            self.last = self.env.end("error", error=f"verifiers ended the rollout ({stop_condition or 'no reason'})")

    def close(self, stop_condition: str | None) -> None:
        """Always, last: an episode still open here was never concluded (the rollout failed
        outside the agent): recorded as a harness error, never graded."""
        env = self.env
        if env is not None:
            if env.status == "live":
                env.harness_error(f"the verifiers rollout ended first ({stop_condition or 'failed'})")
            env.close()
        self.pool.shutdown(wait=False)


class Stoppable:
    """A model that refuses to answer once verifiers stopped the rollout (an AgentError: the
    loop ends the episode as ``error``, graded)."""

    kind = "model"

    def __init__(self, model: Any, stopped: threading.Event) -> None:
        self.model, self.stopped, self.name = model, stopped, model.name

    def query(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelResponse:
        if self.stopped.is_set():
            raise AgentError(STOPPED)
        return self.model.query(messages, tools)


# ------------------------------------------------------------------------------ the harness
class ImpasseHarnessConfig(vf.HarnessConfig):
    max_idle_turns: int = Field(3, ge=1, description="Replies in a row without a tool call before the episode "
                                                     "ends in error")
    request_timeout: float = Field(600.0, gt=0, description="Seconds per model request")
    max_retries: int = Field(2, ge=0, description="Retries of a model request on 429/5xx/timeouts")


class ImpasseHarness(vf.Harness[ImpasseHarnessConfig]):
    """impasse's agent loop, in-process: the model through the rollout's interception endpoint,
    each tool call an ``env.step``. The commands run in impasse's sandbox, not in the verifiers
    runtime, so it needs no container and executes nothing there."""

    APPENDS_SYSTEM_PROMPT = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(self, ctx: vf.ModelContext, trace: vf.Trace, runtime: vf.Runtime, endpoint: str, secret: str,
                     mcp_urls: dict[str, str], data: vf.TaskData) -> vf.ProgramResult:
        from impasse.agent.models import ModelConfig, OpenAIModel

        live = getattr(trace.state, "live", None)
        if live is None or live.env is None:
            raise vf.HarnessError(f"the {TASKSET_ID!r} harness plays impasse tasks only (taskset {TASKSET_ID!r})")
        # Sampling is the run's (the interception applies it), so the client sets none of its own.
        model = OpenAIModel(ModelConfig(model=ctx.model, base_url=endpoint, temperature=None, max_tokens=None,
                                        timeout=self.config.request_timeout, max_retries=self.config.max_retries),
                            api_key=secret)
        try:
            await live.call(live.drive, model, LoopConfig(max_idle_turns=self.config.max_idle_turns))
        except asyncio.CancelledError:
            live.stopped.set()
            raise
        except EndpointError as e:
            raise vf.HarnessError(str(e)) from e
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")

    async def cleanup(self, trace: vf.Trace, runtime: vf.Runtime) -> None:
        live = getattr(trace.state, "live", None)
        if live is not None:
            await live.call(live.close, trace.stop_condition)


# ------------------------------------------------------------------------------ the environment
class ImpasseEnvConfig(vf.EnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())
    """The seat. Its runtime is a plain local one: the episode's sandbox is impasse's."""
    group_size: int = Field(1, ge=1, description="Rollouts per episode, forked from one reset Env")


class ImpasseEnv(vf.Env[ImpasseEnvConfig]):
    """One rollout per episode, or a group of ``group_size`` forks of one set-up."""

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        n = self.config.group_size
        if n == 1:
            await agents.agent.run(task)
            return
        out = Path(task.data.spec["out"])
        group = LiveEpisode()
        try:
            await group.call(group.open, lambda: make(task.data.suite, **{
                **episode_spec(task.data, agents.agent.config.model), "out": str(out / "group_starts")}))
            forks: list[Env] = await group.call(fork_group, group.env, out, n)
            try:
                async with asyncio.TaskGroup() as tg:
                    for env in forks:
                        tg.create_task(agents.agent.run(task.taking(env)))
            finally:
                await group.call(close_untaken, forks)
        finally:
            await group.call(group.close, "the group's set-up")


def fork_group(parent: Env, out: Path, n: int) -> list[Env]:
    """N forks of the reset ``parent`` into the run directory ``out``; the parent is closed (its
    set-up stays recorded beside the run, under ``group_starts``)."""
    from impasse.store.sink import LocalStore

    store = LocalStore(RunDir(out))
    forks: list[Env] = []
    try:
        for k in range(1, n + 1):
            group = {"id": parent.episode_id, "member": k, "size": n}
            forks.append(parent.fork(episode_id=f"{parent.episode_id}.m{k}", store=store, group=group))
    except BaseException:
        close_untaken(forks)
        raise
    finally:
        parent.close()
    return forks


def close_untaken(forks: list[Env]) -> None:
    """Members whose rollout never took them over (the episode failed first)."""
    for env in forks:
        if env.status == "live":
            env.harness_error("its rollout never ran (the verifiers episode failed first)")


__all__ = ["TASKSET_ID", "ImpasseData", "ImpasseEnv", "ImpasseEnvConfig", "ImpasseHarness", "ImpasseHarnessConfig",
           "ImpasseState", "ImpasseTask", "ImpasseTaskset", "ImpasseTasksetConfig"]
