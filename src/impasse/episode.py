"""One episode, in phases: open the sandbox, run the loop, handle each phase's ending, grade.

A phase ends at a completion, an escalation, the step budget, a model error, or a step the run
chose in advance (``switch``). After each ending the episode's **phase handlers** decide what
happens next: today's scripted restoration after an accepted escalation is one (the environment
is restored and the same agent goes on); a model handoff (at a step, or at the agent's own
escalation) is another. Each handler writes one event type when it acts and knows how to
re-apply that event, so an interrupted episode is rebuilt from its trajectory alone: recorded
actions are re-executed in a fresh sandbox (their recorded outputs stay as they were), then the
episode continues where it stopped.

What differs between suites (which sandbox, which tools, which prompts, how to grade) comes in
an :class:`EpisodeParts`; this module only knows the phases.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from impasse.agent.endings import AgentError, Completed, Escalated, StepLimitReached, SwitchPoint
from impasse.agent.loop import Loop, LoopConfig, Model
from impasse.agent.tools import Tool, ToolContext
from impasse.store.rundir import RunDir
from impasse.store.sink import LocalStore, TrajectoryStore, Writer
from impasse.store.trajectory import Trajectory


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class PhaseHandler(Protocol):
    event: str
    """The trajectory event type this handler writes when it acts."""

    def after(self, ep: Episode, ending: dict[str, Any]) -> bool:
        """Act on a phase's ending; True if the episode goes on with another phase."""

    def replay(self, ep: Episode, event: dict[str, Any]) -> None:
        """Re-apply a recorded event of this handler while rebuilding an interrupted episode."""


@dataclass
class EpisodeParts:
    """What a suite supplies for one episode."""

    header: dict[str, Any]
    model: Model
    open_sandbox: Callable[[], Any]
    tools: list[Tool]
    first_messages: Callable[[Any], list[dict[str, Any]]]
    grade: Callable[[str], dict[str, Any]]
    """The final patch -> the grade event's fields."""
    make_monitor: Callable[[Any], Any] = lambda _sb: None
    accepts: Callable[[Episode, Escalated], bool] = lambda _ep, _e: False
    """Whether an escalation is accepted (recorded on the ending; handlers may act on it)."""
    handlers: list[PhaseHandler] = field(default_factory=list)
    tool_state: dict[str, Any] = field(default_factory=dict)


class Episode:
    def __init__(self, parts: EpisodeParts, config: LoopConfig, writer: Writer) -> None:
        self.parts, self.config, self.writer = parts, config, writer
        self.model = parts.model
        self.endings: list[dict[str, Any]] = []
        self.phase = 1
        self.restored = False
        self._handled_last = False
        self.sb: Any = None
        self.loop: Loop | None = None
        self.monitor: Any = None

    # ------------------------------------------------------------------ the phases
    def run(self, prior: Trajectory | None = None) -> dict[str, Any]:
        """Run (or finish) the episode; returns the grade of its final patch."""
        with self.parts.open_sandbox() as sb:
            self._start(sb, prior)
            going = self._continues()
            while going:
                going = self._after(self._run_phase())
            patch = sb.diff()
        return self.parts.grade(patch)

    def _start(self, sb: Any, prior: Trajectory | None) -> None:
        self.sb = sb
        self.monitor = self.parts.make_monitor(sb)
        context = ToolContext(sb, self.config.command_timeout, self.config.output_chars, dict(self.parts.tool_state))
        self.loop = Loop(self.model, sb, self.writer, self.parts.tools, self.config, self._after_step, context)
        if prior is not None:
            self._rebuild(prior.events)
            self.writer.append({"type": "resumed", "at_step": self.loop.steps, "at": now()})
        else:
            for message in self.parts.first_messages(sb):
                self.loop.add_message(message)

    def _continues(self) -> bool:
        if not self.endings or self._handled_last:
            return True  # nothing ended yet, or a handler already started the next phase
        return self._after(self.endings[-1])  # interrupted between an ending and its handling

    def _after(self, ending: dict[str, Any]) -> bool:
        for handler in self.parts.handlers:
            if handler.after(self, ending):
                self.phase += 1
                return True
        return False

    def _run_phase(self) -> dict[str, Any]:
        loop = self.loop
        try:
            for call in pending_calls(loop.messages):  # a call interrupted before its result was recorded
                loop.execute(call)
            loop.run()
        except Completed as e:
            ending = {"ending": "completed", "verified": e.verified, "summary": e.summary}
        except Escalated as e:
            ending = {"ending": "escalated", "ticket": e.ticket.model_dump(), "accepted": self.parts.accepts(self, e),
                      "workspace_diff": self.sb.diff()}
        except StepLimitReached:
            ending = {"ending": "step_limit"}
        except SwitchPoint:
            ending = {"ending": "switch"}
        except AgentError as e:
            ending = {"ending": "error", "error": str(e)}
        event = {"type": "ending", "phase": self.phase, "steps": loop.steps, **ending}
        self.writer.append(event)
        self.endings.append(event)
        return event

    def _after_step(self, call: dict[str, Any], output: str, exit_code: int | None) -> dict[str, Any] | None:
        if self.monitor is None:
            return None
        nudge = self.monitor.observe(call, output, exit_code)
        return nudge.to_json() if nudge else None

    # ------------------------------------------------------------------ resume
    def _rebuild(self, events: list[dict[str, Any]]) -> None:
        """Bring the fresh sandbox, the loop, the monitor and the handlers to where the
        interrupted episode was, by re-executing its recorded actions."""
        handlers = {h.event: h for h in self.parts.handlers}
        messages: list[dict[str, Any]] = []
        steps = 0
        for e in events:
            kind = e["type"]
            if kind == "step":
                steps = max(steps, e["step"])
                self._replay_step(e)
            elif kind == "ending":
                self.endings.append(e)
                self._handled_last = False
            elif kind in handlers:
                handlers[kind].replay(self, e)
                self.phase += 1
                self._handled_last = True
                if e.get("messages_reset"):  # e.g. a model handoff: the next model's history starts here
                    messages = []
            if "message" in e:
                messages.append(e["message"])
        self.loop.resume_from(messages, steps)

    def _replay_step(self, e: dict[str, Any]) -> None:
        tool = self.loop.tools.get(e.get("tool", ""))
        args = e.get("arguments") or {}
        if tool is not None and tool.replay is not None:
            try:
                _, parsed = tool.parse(args)
            except ValueError:
                parsed = None  # a malformed call changed nothing
            if parsed is not None:
                tool.replay(self.loop.context, parsed, e)
        if self.monitor is not None:
            self.monitor.observe({"name": e.get("tool", ""), "arguments": args}, e.get("output", ""), e.get("exit_code"))


def pending_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls of the last assistant message that have no result yet (a crash mid-call)."""
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    for m in reversed(messages):
        if m.get("role") == "assistant":
            return [c for c in m.get("tool_calls") or [] if c.get("id") not in answered]
    return []


# ------------------------------------------------------------------------------ one episode on disk


def run_episode(spec: Any, cfg: Any, run_dir: Path | RunDir, store: TrajectoryStore | None = None) -> dict[str, Any]:
    """Run (or finish) one planned episode of a run; returns its short summary. Runs in a worker.

    A complete trajectory is skipped; an interrupted one is rebuilt and continued; one that ended
    in a harness error is moved to ``attempts/`` and run again. A harness failure during the run
    is recorded (``harness_error``), never graded, and re-raised. ``store`` is where the
    trajectory lives (default: ``run_dir`` on this machine; the Ray executor passes a store that
    talks to the run's single writer on another machine).
    """
    from impasse.suites import SUITES

    rd = run_dir if isinstance(run_dir, RunDir) else RunDir(Path(run_dir))
    store = store or LocalStore(rd)
    prior = store.prior(spec.episode_id)
    if prior is not None and prior.complete:
        if not _suite_reruns(cfg, prior):
            return summarize(prior)
        rd.archive_attempt(rd.trajectory(spec.episode_id))  # a pass the suite declared invalid
        prior = None
    from impasse.run.budget import BudgetReached, meter

    parts = SUITES.get(cfg.suite).episode_parts(spec, cfg, rd)
    parts.model = meter(parts.model, cfg.spend, rd.usage, spec.episode_id)
    writer = store.open_writer(spec.episode_id, {**parts.header, "started_at": now()})
    try:
        grade = Episode(parts, LoopConfig(cfg.step_limit, cfg.command_timeout), writer).run(prior)
        writer.append({"type": "grade", **grade})
        writer.append({"type": "final"})
    except BudgetReached as e:  # between two steps: resumable, not a failure
        writer.append({"type": "paused", "reason": str(e), "at": now()})
        raise
    except Exception as e:
        writer.append({"type": "harness_error", "error": f"{type(e).__name__}: {e}", "at": now()})
        raise
    finally:
        writer.close()
    return summarize(store.read(spec.episode_id))


def _suite_reruns(cfg: Any, traj: Trajectory) -> bool:
    """Whether the suite wants a complete episode run again (the ask suite: an invalid pass)."""
    from impasse.suites import SUITES

    rerun = getattr(SUITES.get(cfg.suite), "rerun", None)
    return bool(rerun and rerun(traj))


def summarize(traj: Trajectory) -> dict[str, Any]:
    h = traj.header
    endings = traj.endings
    g = traj.grade or {}
    return {"episode_id": h["episode_id"], "agent": h["agent"], "interface": h["interface"],
            "condition": h["condition"], "condition_class": h.get("condition_class", ""),
            "instance_id": h["instance_id"], "ending": endings[0]["ending"] if endings else None,
            "final_ending": endings[-1]["ending"] if endings else None,
            "steps": max([s.index for s in traj.steps], default=0), "resolved": bool(g.get("resolved")),
            "nudges": len(traj.of_type("nudge")), "restored": bool(traj.of_type("restore")),
            **({"error": endings[0]["error"]} if endings and endings[0].get("error") else {})}
