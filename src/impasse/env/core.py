"""One episode as an environment: ``reset``, ``step``, ``fork``, ``restore``, ``grade``, ``close``.

Everything that runs an episode drives one of these: the agent loop, the executors, the handoff
experiment, inspect_ai, the MCP server, a trainer over the network. None of them builds an
episode; a suite supplies the parts (:class:`EnvParts`: which sandbox, which tools, what the agent
is told first, how the final patch is graded) and the Env does the rest the same way for all:

- it records its own trajectory (``impasse.trajectory/1``, every event durable before ``step``
  returns), so every driver gets crash safety: an Env whose trajectory exists is rebuilt by
  ``reset`` (recorded actions re-executed in a fresh sandbox, their recorded outputs kept) and
  goes on where it stopped;
- one tool call is one step; malformed calls are answered with an error and count;
- ``before_step`` hooks see a call before it runs and may approve, modify, reject, hold or
  terminate it (:mod:`impasse.env.hooks`); ``after_step`` hooks (the monitor) may add a nudge;
- the step that ends the episode grades its patch in a clean copy and carries the reward;
- after an accepted escalation the suite may have the environment restored (the card's scripted
  restoration, :meth:`Env.restore`, the one restoration there is) and the episode goes on.

The driver owns the model: it records the messages it sends and receives with :meth:`Env.record`
and may end the episode itself (:meth:`Env.end`, e.g. a model that cannot go on).
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from impasse.env.hooks import APPROVE, Decision
from impasse.env.tools import ENDING_OUTPUT, Completed, Escalated, Tool, ToolCallError, ToolContext
from impasse.rewards import NO_REWARD, Reward
from impasse.store.sink import TrajectoryStore, Writer
from impasse.store.trajectory import Trajectory

QUEUED = ("queued (#{n}), no answer yet. The ticket is with a reviewer and the episode goes on; call check_answer "
          "with ticket_id={n} to see the answer.")
ENDINGS = ("completed", "escalated", "step_limit", "error", "switch")
TERMINAL = ("completed", "escalated", "step_limit", "error")


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class EnvError(RuntimeError):
    """The Env was used out of order (stepped before reset, after the end, a held call twice...)."""


@dataclass
class StepResult:
    observation: str
    """The tool message text the model would see."""
    terminated: bool = False
    """The episode ended on its own (completed, escalated, a model error)."""
    truncated: bool = False
    """The episode hit its step limit."""
    ending: str | None = None
    """``completed``, ``escalated``, ``step_limit``, ``error``, or None while it goes on."""
    reward: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)
    """exit_code, duration_s, step, nudge, held, decision, grade and reward terms (on the last step)."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    """What the model's history gains: the tool message, then any user message (a nudge, a notice)."""

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


def no_reward(grade: dict[str, Any], trajectory: Trajectory) -> Reward:
    return NO_REWARD


@dataclass
class EnvParts:
    """What a suite supplies for one episode."""

    header: dict[str, Any]
    """The trajectory header's fields (suite, task, condition, interface, agent, ...)."""
    open_sandbox: Callable[[], Any]
    tools: list[Tool]
    first_messages: Callable[[Any], list[dict[str, Any]]]
    grade: Callable[[Any, str], dict[str, Any]]
    """(the closed sandbox, the final patch) -> the grade event's fields (``resolved`` at least)."""
    task: Any = None
    """The task the episode works on (reference policies and reward functions may read it)."""
    tool_state: Callable[[], dict[str, Any]] = dict
    """Fresh suite state for the tools of one episode (e.g. the ask suite's answered questions)."""
    accepts: Callable[[Trajectory, int, Any], bool] = lambda _t, _steps, _ticket: False
    """(trajectory so far, steps, ticket) -> whether an escalation is accepted."""
    restore_after_escalation: bool = False
    """An accepted escalation has the environment restored and the episode goes on."""
    restore_notice: str = ""
    """The user message after such a restoration (``{left}``: tool calls remaining)."""
    after_step: list[Callable[[Any], Any]] = field(default_factory=list)
    """Factories of the suite's own after_step hooks (the monitor), given the Env."""
    reward: Callable[[dict[str, Any], Trajectory], Reward] = no_reward
    """(grade, trajectory) -> the terminal reward and its named terms (:mod:`impasse.rewards`)."""
    shaping: Callable[[Trajectory], Reward] | None = None
    """Per-step shaping: trajectory so far -> the step's reward (None: only the terminal one)."""
    fork_sandbox: Callable[[Any], Any] | None = None
    """How to copy the sandbox for :meth:`Env.fork` (default: the sandbox's own ``fork()``)."""
    reviewer: Callable[[], Any] | None = None
    """A factory of the episode's reviewer (:mod:`impasse.review`). None or a synchronous one
    (``oracle``): an escalation ends the phase at once, accepted as ``accepts`` says. An
    asynchronous one: the ticket is queued, the episode goes on, the answer comes later."""


def as_call(call: dict[str, Any]) -> dict[str, Any]:
    """``{"name", "arguments", "id"?}`` or an OpenAI tool call (``{"id", "function": {...}}``)."""
    if not isinstance(call, dict):
        raise EnvError(f"a call is a dict {{'name': ..., 'arguments': {{...}}}}, not {type(call).__name__}")
    fn = call.get("function")
    if isinstance(fn, dict):
        return {"name": fn.get("name", ""), "arguments": fn.get("arguments", "{}"), "id": call.get("id")}
    return {"name": call.get("name", ""), "arguments": call.get("arguments", {}), "id": call.get("id")}


class Env:
    """One episode. Make it with :func:`impasse.env.make`; drive it with reset/step."""

    def __init__(self, parts: EnvParts, *, episode_id: str, store: TrajectoryStore, step_limit: int = 80,
                 command_timeout: float = 60.0, output_chars: int = 10_000, before_step: Sequence[Any] = (),
                 after_step: Sequence[Any] = ()) -> None:
        self.parts, self.episode_id, self.store = parts, episode_id, store
        self.step_limit, self.command_timeout, self.output_chars = step_limit, command_timeout, output_chars
        self.header = {"episode_id": episode_id, **parts.header, "step_limit": step_limit}
        self.before = list(before_step)
        self.extra_after = list(after_step)
        self.tools = {t.name: t for t in parts.tools}
        self.schemas = [t.schema() for t in parts.tools]
        self.sandbox: Any = None
        self.writer: Writer | None = None
        self.context: ToolContext | None = None
        self.after: list[Any] = []
        self.events: list[dict[str, Any]] = []
        self.messages: list[dict[str, Any]] = []
        self.steps = 0
        self.restored = False
        self.endings: list[dict[str, Any]] = []
        self.status = "new"  # new -> live -> done | stopped; closed at the end
        self.held: dict[str, tuple[dict[str, Any], Decision]] = {}
        self.open_endings: set[str] = set()
        """Phase endings that leave the episode open for the driver (``switch`` always does): a
        handoff driver takes over at the prefix's own escalation instead of the episode ending."""
        self._grade: dict[str, Any] | None = None
        self._reward: Reward = NO_REWARD
        self._last: StepResult | None = None
        self._forks = 0
        self.reviewer: Any = None
        self.reviews: dict[int, dict[str, Any]] = {}
        """Items with the reviewer: id -> {"kind", "status": queued | accepted | rejected, "reply"}."""
        self._filing: Escalated | None = None
        self._accepted: list[Any] = []

    # ------------------------------------------------------------------ the episode
    @property
    def task(self) -> Any:
        return self.parts.task

    @property
    def done(self) -> bool:
        return self.status == "done"

    def reset(self) -> dict[str, Any]:
        """Open the episode: ``{"messages": the history so far, "tools": OpenAI tool schemas,
        "info": {...}}``. A recorded trajectory is continued (rebuilt in a fresh sandbox) or, if
        complete, only read."""
        if self.status != "new":
            raise EnvError(f"episode {self.episode_id}: reset() once per Env (fork() or make another)")
        prior = self.store.prior(self.episode_id)
        if prior is not None and prior.complete:
            self._load_finished(prior)
            return self._opening(resumed=True)
        self.writer = self.store.open_writer(self.episode_id, {**self.header, "started_at": now()})
        if prior is not None:
            self.header = prior.header
        self.status = "live"
        with self._harness_guard():
            self.sandbox = self.parts.open_sandbox()
            self.context = ToolContext(self.sandbox, self.command_timeout, self.output_chars, self.parts.tool_state())
            self.context.extra["reviews"] = self.reviews
            self.reviewer = self.parts.reviewer() if self.parts.reviewer else None
            self.after = [make(self) for make in self.parts.after_step] + self.extra_after
            if prior is None:
                for message in self.parts.first_messages(self.sandbox):
                    self.record(message)
            else:
                self._rebuild(prior.events)
                self._append({"type": "resumed", "at_step": self.steps, "at": now()})
                self._refile()
                self._settle()
        return self._opening(resumed=prior is not None)

    def _opening(self, resumed: bool) -> dict[str, Any]:
        return {"messages": list(self.messages), "tools": list(self.schemas),
                "info": {"episode_id": self.episode_id, "step": self.steps, "step_limit": self.step_limit,
                         "resumed": resumed, "done": self.done}}

    def record(self, message: dict[str, Any], **extra: Any) -> None:
        """Add a message to the history the model sees (the driver's assistant messages, with
        ``usage=``; any user message it adds)."""
        self._require_live()
        self.messages.append(message)
        self._append({"type": "message", "message": message, **extra})

    def step(self, call: dict[str, Any]) -> StepResult:
        """Run one tool call. ``call``: ``{"name": ..., "arguments": {...} or JSON text, "id": ...}``
        (an OpenAI tool call works as is)."""
        self._require_live()
        if self.held:
            raise EnvError(f"call {next(iter(self.held))} is held: env.resume(it, decision) first")
        call = as_call(call)
        with self._harness_guard():
            decision, call = self._decide(call)
            if decision.action == "escalate":
                return self._hold(call, decision)
            return self._act(call, decision)

    def resume(self, held_id: str, decision: Decision) -> StepResult:
        """Continue a held call with the decision made about it (approve, modify, reject, terminate)."""
        self._require_live()
        if held_id not in self.held:
            raise EnvError(f"no held call {held_id!r}; held: {', '.join(self.held) or 'none'}")
        if decision.action == "escalate":
            raise EnvError("a held call needs a decision: approve, modify, reject or terminate")
        call, _why = self.held.pop(held_id)
        with self._harness_guard():
            if decision.action == "modify":
                call = {**as_call(decision.call or {}), "id": call.get("id")}
            return self._act(call, decision, held_id)

    def end(self, ending: str, **fields: Any) -> StepResult:
        """The driver ends the phase: ``error`` (a model that cannot go on; ``error=`` says why)
        ends the episode; ``switch`` (a step the driver chose, e.g. a handoff) leaves it open."""
        self._require_live()
        if ending not in ("error", "switch"):
            raise EnvError(f"end({ending!r}): a driver ends with 'error' or 'switch'; the rest come from steps")
        with self._harness_guard():
            return self._phase_ended({"ending": ending, **fields}, StepResult(""))

    def restore(self, **fields: Any) -> None:
        """The condition's scripted restoration: the fault is cleared, the agent's changes stay.
        Recorded as a ``restore`` event (``fields`` join it, e.g. ``by="handoff"``)."""
        self._require_live()
        with self._harness_guard():
            self.sandbox.restore()
            self.restored = True
            self._append({"type": "restore", "step": self.steps, **fields})

    def note(self, event: dict[str, Any]) -> None:
        """Record a driver's own event (e.g. a ``handoff``). ``messages_reset: true`` starts the
        model's history afresh after it (what the next model sees is recorded next)."""
        self._require_live()
        if event.get("type") in ("header", "step", "ending", "grade", "final", "message", "restore"):
            raise EnvError(f"note(): {event.get('type')!r} events are the Env's own")
        self._append(event)
        if event.get("messages_reset"):
            self.messages = []

    def grade(self) -> dict[str, Any]:
        """The grade of the episode's final patch (on its last step); before the end, of the
        working tree as it is now (not recorded)."""
        if self._grade is not None:
            return self._grade
        self._require_live()
        return self.parts.grade(self.sandbox, self.sandbox.diff())

    def trajectory(self) -> Trajectory:
        """The trajectory as recorded so far (in memory; the file holds the same events)."""
        return Trajectory(None, self.header, self.events)

    def state(self) -> dict[str, Any]:
        """The episode's public state (never the card or the task's hidden parts)."""
        return {"episode_id": self.episode_id, "status": self.status, "step": self.steps,
                "step_limit": self.step_limit, "ending": self.endings[-1]["ending"] if self.endings else None,
                "restored": self.restored, "held": sorted(self.held),
                **{k: self.header.get(k) for k in ("suite", "instance_id", "condition", "interface")}}

    # ------------------------------------------------------------------ stopping without an ending
    def pause(self, reason: str) -> None:
        """Stop between two steps for a reason outside the episode (a spend ceiling): recorded
        as ``paused``; the next ``reset`` of this episode goes on from here."""
        self._stop({"type": "paused", "reason": reason, "at": now()})

    def harness_error(self, error: str) -> None:
        """The harness failed (not the agent): recorded, never graded; the episode is run again."""
        self._stop({"type": "harness_error", "error": error, "at": now()})

    def _stop(self, event: dict[str, Any]) -> None:
        if self.status == "live":
            self._append(event)
            self.status = "stopped"
        self.close()

    def close(self) -> None:
        if self.sandbox is not None:
            sb, self.sandbox = self.sandbox, None
            sb.close()
        if self.writer is not None:
            w, self.writer = self.writer, None
            w.close()
        if self.status == "live":
            self.status = "stopped"

    def __enter__(self) -> Env:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is not None and self.status == "live":
            self.harness_error(f"{type(exc).__name__}: {exc}")
        self.close()

    # ------------------------------------------------------------------ fork
    def fork(self, episode_id: str | None = None, store: TrajectoryStore | None = None,
             **header: Any) -> Env:
        """An independent copy of this episode at this step: workspace, fault state, history,
        step count, tool and monitor state. It records its own trajectory (the events so far,
        then its own), whose header names the parent and the step (``forked_from``)."""
        self._require_live()
        if self.held:
            raise EnvError("fork(): a call is held; resume it first")
        self._forks += 1
        child_id = episode_id or f"{self.episode_id}.fork{self._forks}"
        fork_sandbox = self.parts.fork_sandbox or (lambda sb: sb.fork())
        sandbox = fork_sandbox(self.sandbox)
        child = Env(self.parts, episode_id=child_id, store=store or self.store, step_limit=self.step_limit,
                    command_timeout=self.command_timeout, output_chars=self.output_chars,
                    before_step=self.before, after_step=())
        child.header = {**self.header, "episode_id": child_id, **header,
                        "forked_from": {"episode_id": self.episode_id, "step": self.steps}}
        child.sandbox = sandbox
        try:
            child.context = ToolContext(sandbox, self.command_timeout, self.output_chars,
                                        copy.deepcopy(self.context.extra))
            child.reviews = child.context.extra.setdefault("reviews", {})
            child.reviewer = self.reviewer.fork() if self.reviewer is not None else None
            child.events = copy.deepcopy(self.events)
            child.messages = copy.deepcopy(self.messages)
            child.steps, child.restored = self.steps, self.restored
            child.endings = [e for e in child.events if e.get("type") == "ending"]
            child.after = [h.fork(child) if hasattr(h, "fork") else h for h in self.after]
            child.writer = child.store.open_writer(child_id, {**child.header, "started_at": now()})
            child.writer.extend(child.events)
        except BaseException:
            child.close()
            raise
        child.status = "live"
        return child

    # ------------------------------------------------------------------ one step
    def _decide(self, call: dict[str, Any]) -> tuple[Decision, dict[str, Any]]:
        """Ask the before_step hooks in order; a modify passes the new call on to the next hook."""
        decision = APPROVE
        for hook in self.before:
            d = hook.before_step(self, call)
            if d is None or d.action == "approve":
                if d is not None and d.by and decision is APPROVE:
                    decision = d  # a named approval (an approval policy's) is recorded on the step
                continue
            if d.action != "modify":
                return d, call
            call, decision = {**as_call(d.call or {}), "id": call.get("id")}, d
        return decision, call

    def _hold(self, call: dict[str, Any], decision: Decision) -> StepResult:
        held_id = f"h{self.steps + 1}.{len(self.held) + 1}"
        self.held[held_id] = (call, decision)
        self._append({"type": "held", "id": held_id, "step": self.steps + 1, "call": _plain(call),
                      **decision.to_json()})
        return StepResult("", info={"held": held_id, "step": self.steps, "reason": decision.message,
                                    "by": decision.by})

    def _act(self, call: dict[str, Any], decision: Decision, held_id: str | None = None) -> StepResult:
        if decision.action == "terminate":
            why = decision.message or "no reason given"
            return self._phase_ended({"ending": "error", "error": f"terminated by {decision.by or 'a before_step hook'}: "
                                                                  f"{why}"}, StepResult(""))
        self.steps += 1
        started = time.monotonic()
        name, raw = call["name"], call["arguments"]
        if decision.action == "reject":
            args = _arguments(raw)
            output, exit_code, meta, ending = (f"Error: this call was not run: {decision.message or 'rejected'}",
                                               None, {}, None)
        else:
            if name == "check_answer" and self.reviewer is not None:
                self._collect()  # a person may have answered since the last step
            args, output, exit_code, meta, ending = self._run_tool(name, raw)
        message = {"role": "tool", "tool_call_id": call.get("id") or f"call_{self.steps}", "content": output}
        self.messages.append(message)
        event = {"type": "step", "step": self.steps, "tool": name, "arguments": args or {"raw": raw},
                 "output": output, "exit_code": exit_code, "message": message,
                 "harness_ms": round((time.monotonic() - started) * 1000 - meta.get("duration_s", 0) * 1000, 3),
                 **meta}
        if decision is not APPROVE or held_id:
            event["decision"] = {**decision.to_json(), **({"held": held_id} if held_id else {})}
            if decision.action == "modify":
                event["decision"]["original"] = name
        self._append(event)
        result = StepResult(output, info={"step": self.steps, "tool": name, "exit_code": exit_code,
                                          **{k: meta[k] for k in ("duration_s", "truncated", "timed_out") if k in meta}},
                            messages=[message])
        if "decision" in event:
            result.info["decision"] = event["decision"]
        if ending is not None:
            return self._phase_ended(self._ending_of(ending), result)
        if self.reviewer is not None and (ended := self._review(result)) is not None:
            return ended
        self._after_step({"name": name, "arguments": args}, event, result)
        if self.steps >= self.step_limit:
            return self._phase_ended({"ending": "step_limit"}, result)
        if self.parts.shaping is not None:
            shaped = self.parts.shaping(self.trajectory())
            result.reward = shaped.total
            result.info["reward_terms"] = shaped.terms
        return result

    def _run_tool(self, name: str, raw: Any) -> tuple[dict[str, Any], str, int | None, dict[str, Any], Exception | None]:
        args: dict[str, Any] = {}
        try:
            if name not in self.tools:
                raise ToolCallError(f"unknown tool {name!r}; available: {', '.join(self.tools)}")
            tool = self.tools[name]
            args, parsed = tool.parse(raw)
            out = tool.run(self.context, parsed)
        except ToolCallError as e:
            return args, f"Error: {e}", 1, {}, None
        except Escalated as e:
            if self._asynchronous():  # filed with the reviewer once the step is recorded (:meth:`_review`)
                self._filing = e
                n = len(self.reviews) + 1
                return args, QUEUED.format(n=n), None, {"review_id": n}, None
            return args, ENDING_OUTPUT.get(name, "Done."), None, {}, e
        except Completed as e:
            return args, ENDING_OUTPUT.get(name, "Done."), None, {}, e
        meta = {**out.record, "duration_s": round(out.duration_s, 4)}
        if name == "bash":
            meta.update(truncated=out.truncated, timed_out=out.timed_out)
        return args, out.output, out.exit_code, meta, None

    def _ending_of(self, e: Exception) -> dict[str, Any]:
        if isinstance(e, Completed):
            return {"ending": "completed", "verified": e.verified, "summary": e.summary}
        ticket = e.ticket
        return {"ending": "escalated", "ticket": ticket.model_dump(),
                "accepted": self.parts.accepts(self.trajectory(), self.steps, ticket),
                "workspace_diff": self.sandbox.diff()}

    # ------------------------------------------------------------------ the reviewer
    def _asynchronous(self) -> bool:
        return bool(getattr(self.reviewer, "asynchronous", False))

    def _task_text(self) -> str:
        return next((str(m.get("content") or "") for m in self.messages if m.get("role") == "user"), "")

    def submit_review(self, kind: str, truth: bool, **item: Any) -> int:
        """Give the reviewer an item (an escalation's ticket, or a held call for approval);
        recorded as a ``review`` event ``submitted``. -> its id (what the agent is told)."""
        from impasse.env.review import ReviewItem

        rid = len(self.reviews) + 1
        extra = {"workspace_diff": self.sandbox.diff()} if kind == "escalation" else {}
        review = ReviewItem(rid, kind, self.steps, truth, task=self._task_text(), episode_id=self.episode_id,
                            context=self._review_context(extra.get("workspace_diff")), **item)
        self.reviews[rid] = {"kind": kind, "status": "queued", "step": self.steps}
        self.reviewer.submit(review)
        self._append({"type": "review", "event": "submitted", "reviewer": self.reviewer.name, **review.to_json(),
                      **extra})
        return rid

    def _review_context(self, diff: str | None) -> dict[str, Any]:
        steps = [{"index": e["step"], "tool": e.get("tool", ""), "arguments": e.get("arguments") or {},
                  "output": str(e.get("output", ""))[-1500:], "exit_code": e.get("exit_code")}
                 for e in self.events if e.get("type") == "step"]
        return {"steps": steps, "workspace_diff": diff, "condition": self.header.get("condition")}

    def _collect(self) -> None:
        """Record the answers that have arrived (before a ``check_answer`` reads them, and after
        every step); what an acceptance does is left to :meth:`_review`, after the step."""
        for answer in self.reviewer.due(self.steps):
            item = self._deliver(answer)
            if item is not None and item["kind"] == "escalation" and answer.accept:
                self._accepted.append(answer)

    def _review(self, result: StepResult) -> StepResult | None:
        """After a step: file the escalation it made, then deliver the answers that are due. An
        accepted escalation restores the environment (with ``restore``) or ends the phase as
        escalated (a person takes over); a rejection is only seen through ``check_answer``."""
        if self._filing is not None:
            filing, self._filing = self._filing, None
            self.submit_review("escalation", bool(self.parts.accepts(self.trajectory(), self.steps, filing.ticket)),
                               ticket=filing.ticket.model_dump())
        self._collect()
        accepted, self._accepted = self._accepted, []
        for answer in accepted:
            if self.parts.restore_after_escalation and not self.restored and self.steps < self.step_limit:
                self._restore_and_go_on(result, by="reviewer", review_id=answer.id)
            elif not self.parts.restore_after_escalation:
                filed = next(e for e in self.events if e["type"] == "review" and e.get("event") == "submitted"
                             and e.get("id") == answer.id)
                return self._phase_ended({"ending": "escalated", "ticket": filed.get("ticket"), "accepted": True,
                                          "review_id": answer.id, "reviewer_correct": answer.correct,
                                          "workspace_diff": self.sandbox.diff()}, result)
        return None

    def _deliver(self, answer: Any) -> dict[str, Any] | None:
        item = self.reviews.get(answer.id)
        if item is None or item["status"] != "queued":
            return None
        item.update(status="accepted" if answer.accept else "rejected", reply=answer.message, answered_step=self.steps)
        self._append({"type": "review", "event": "answered", "id": answer.id, "kind": item["kind"],
                      "step": self.steps, "filed_step": item["step"], "accept": answer.accept,
                      "correct": answer.correct, "reply": answer.message, "detail": answer.detail,
                      "reviewer": self.reviewer.name})
        return item

    def _refile(self) -> None:
        """An escalation step recorded as queued whose ``submitted`` event never was (the harness
        died in between): file it now, so the ticket the agent was told about exists."""
        if self.reviewer is None:
            return
        from impasse.tickets.ticket import Ticket

        for e in [e for e in self.events if e["type"] == "step" and e.get("review_id")]:
            if e["review_id"] not in self.reviews and e["review_id"] == len(self.reviews) + 1:
                ticket = Ticket.from_arguments(e.get("arguments") or {})
                self.submit_review("escalation", bool(self.parts.accepts(self.trajectory(), e["step"], ticket)),
                                   ticket=ticket.model_dump())

    def _replay_review(self, e: dict[str, Any]) -> None:
        """A recorded review event, on resume: the reviewer gets the same items in the same order
        (its draws are made at submission) and forgets what it already answered."""
        from impasse.env.review import ReviewItem

        rid = e.get("id")
        if e.get("event") == "submitted":
            self.reviews[rid] = {"kind": e.get("kind"), "status": "queued", "step": e.get("step")}
            if self.reviewer is not None:
                self.reviewer.submit(ReviewItem.from_json(e))
        elif e.get("event") == "answered" and rid in self.reviews:
            self.reviews[rid].update(status="accepted" if e.get("accept") else "rejected", reply=e.get("reply", ""),
                                     answered_step=e.get("step"))
            if self.reviewer is not None:
                self.reviewer.forget(rid)

    def _after_step(self, call: dict[str, Any], event: dict[str, Any], result: StepResult) -> None:
        for hook in self.after:
            nudge = hook.after_step(self, call, event)
            if not nudge:
                continue
            message = {"role": "user", "content": nudge["text"]}
            self.messages.append(message)
            details = {k: v for k, v in nudge.items() if k != "text"}
            self._append({"type": "nudge", **details, "step": self.steps, "message": message})
            result.messages.append(message)
            result.info.setdefault("nudges", []).append(details)

    # ------------------------------------------------------------------ endings
    def _phase_ended(self, ending: dict[str, Any], result: StepResult) -> StepResult:
        event = {"type": "ending", "phase": len(self.endings) + 1, "steps": self.steps, **ending}
        self._append(event)
        self.endings.append(event)
        result.info["phase_ending"] = ending["ending"]
        if ending["ending"] == "switch" or ending["ending"] in self.open_endings:
            result.info["open_ending"] = True  # the driver decides what comes next
            return result
        if self._restores_after(event):
            self._restore_and_go_on(result)
            return result
        return self._finish(result)

    def _restores_after(self, ending: dict[str, Any]) -> bool:
        return bool(ending["ending"] == "escalated" and ending.get("accepted") and self.parts.restore_after_escalation
                    and not self.restored and self.steps < self.step_limit)

    def _restore_and_go_on(self, result: StepResult | None, **fields: Any) -> None:
        self.restore(**fields)
        if self.parts.restore_notice:
            notice = {"role": "user", "content": self.parts.restore_notice.format(left=self.step_limit - self.steps)}
            self.record(notice)
            if result is not None:
                result.messages.append(notice)
        if result is not None:
            result.info["restored"] = True

    def _finish(self, result: StepResult) -> StepResult:
        """The episode's end: its patch graded in a clean copy (the episode's own sandbox closed
        first), the grade and the reward recorded, then ``final``."""
        ending = self.endings[-1]["ending"]
        patch = self.sandbox.diff()
        sb, self.sandbox = self.sandbox, None
        sb.close()
        grade = self.parts.grade(sb, patch)
        self._append({"type": "grade", **grade})
        self._complete(grade)
        result.terminated, result.truncated = ending != "step_limit", ending == "step_limit"
        result.ending, result.reward = ending, self._reward.total
        result.info.update(grade=grade, reward_terms=self._reward.terms, reward_values=self._reward.values)
        self._last = result
        return result

    def _complete(self, grade: dict[str, Any]) -> None:
        self._grade = grade
        self._reward = self.parts.reward(grade, self.trajectory())
        self._append({"type": "final"})
        self.status = "done"
        w, self.writer = self.writer, None  # nothing more is ever recorded: free the trajectory's lock
        w.close()

    def _load_finished(self, prior: Trajectory) -> None:
        self.header, self.events = prior.header, list(prior.events)
        self.messages = prior.messages
        self.endings = prior.endings
        self.steps = max([s.index for s in prior.steps], default=0)
        self._grade = prior.grade or {}
        self._reward = self.parts.reward(self._grade, prior)
        self.status = "done"

    # ------------------------------------------------------------------ resume
    def _rebuild(self, events: list[dict[str, Any]]) -> None:
        """Bring the fresh sandbox, the tools' and hooks' state and the history to where the
        recorded episode was, by re-executing its recorded actions."""
        for e in events:
            kind = e["type"]
            self.events.append(e)
            if kind == "step":
                self.steps = max(self.steps, e["step"])
                self._replay_step(e)
            elif kind == "ending":
                self.endings.append(e)
            elif kind == "restore":
                self.sandbox.restore()
                self.restored = True
            elif kind == "review":
                self._replay_review(e)
            if e.get("messages_reset"):
                self.messages = []
            if "message" in e:
                self.messages.append(e["message"])

    def _replay_step(self, e: dict[str, Any]) -> None:
        tool = self.tools.get(e.get("tool", ""))
        args = e.get("arguments") or {}
        if tool is not None and tool.replay is not None and (e.get("decision") or {}).get("action") != "reject":
            try:
                _, parsed = tool.parse(args)
            except ToolCallError:
                parsed = None  # a malformed call changed nothing
            if parsed is not None:
                tool.replay(self.context, parsed, e)
        call = {"name": e.get("tool", ""), "arguments": args}
        for hook in self.after:
            if hasattr(hook, "replay"):
                hook.replay(self, call, e)

    def _settle(self) -> None:
        """A recorded ending nobody acted on yet (the harness died in between): restore and go
        on, or finish (an already recorded grade is not graded again)."""
        last = max((i for i, e in enumerate(self.events) if e["type"] == "ending"), default=None)
        if last is None or self.events[last]["ending"] in ("switch", *self.open_endings):
            return
        after = self.events[last + 1:]
        if any(e["type"] in ("step", "restore") or e.get("messages_reset") for e in after):
            return  # acted on: the episode went on
        ending = self.events[last]
        if self._restores_after(ending):
            self._restore_and_go_on(None)
            return
        graded = [e for e in after if e["type"] == "grade"]
        if graded:
            sb, self.sandbox = self.sandbox, None
            sb.close()
            self._complete({k: v for k, v in graded[-1].items() if k != "type"})
        else:
            self._finish(StepResult(""))

    # ------------------------------------------------------------------ plumbing
    def _append(self, event: dict[str, Any]) -> None:
        self.writer.append(event)
        self.events.append(event)

    def _require_live(self) -> None:
        if self.status != "live":
            what = {"new": "call reset() first", "done": "the episode is over",
                    "stopped": "the episode was stopped (paused or a harness error)"}.get(self.status, self.status)
            raise EnvError(f"episode {self.episode_id}: {what}")

    def _harness_guard(self) -> _HarnessGuard:
        return _HarnessGuard(self)


class _HarnessGuard:
    """Any failure that is not the agent's (a vanished workspace, a bug) is recorded as a
    ``harness_error`` before it propagates: the trajectory says why, and the episode reruns."""

    def __init__(self, env: Env) -> None:
        self.env = env

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is not None and isinstance(exc, Exception) and not isinstance(exc, EnvError) \
                and self.env.status == "live" and self.env.writer is not None:
            self.env.harness_error(f"{type(exc).__name__}: {exc}")


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except (TypeError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def _plain(call: dict[str, Any]) -> dict[str, Any]:
    return {"name": call["name"], "arguments": _arguments(call["arguments"]), **({"id": call["id"]} if call.get("id") else {})}


def pending_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls of the last assistant message that have no result yet (a crash mid-call)."""
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    for m in reversed(messages):
        if m.get("role") == "assistant":
            return [c for c in m.get("tool_calls") or [] if c.get("id") not in answered]
    return []
