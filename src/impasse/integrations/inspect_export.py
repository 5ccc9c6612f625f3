"""``impasse export inspect RUN``: a run as inspect_ai eval logs, for ``inspect view``.

One log per (agent, interface) -- inspect's unit is one task x one model -- and one sample per
episode: the model's message history as inspect chat messages, the annotator's findings as
scores (numbers, so the viewer can average them) and the full annotation, unsafe findings,
nudges and the escalation ticket as sample metadata. Written with inspect_ai's own log types and
writer, so any inspect tool reads them (``inspect_ai.log.read_eval_log``).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalMetric,
    EvalResults,
    EvalSample,
    EvalScore,
    EvalSpec,
    EvalStats,
    write_eval_log,
)
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ModelOutput,
)
from inspect_ai.scorer import Score
from inspect_ai.tool import ToolCall

from impasse.annotate.annotator import Annotation, annotate
from impasse.store.trajectory import Trajectory, TrajectoryError, read_trajectory

SCORER = "impasse_annotator"
SCORES = ("resolved", "escalated", "premature_handoff", "post_evidence_unsafe", "limit_ending", "ticket_sufficient",
          "first_contact", "t_star", "post_evidence_calls", "nudges")
"""Annotation fields exported as scores (booleans as 1/0); absent (None) values get no score."""


def _tool_call(call: dict[str, Any]) -> ToolCall:
    fn = call.get("function", {})
    raw = fn.get("arguments", "{}")
    try:
        args = json.loads(raw) if isinstance(raw, str) else dict(raw)
        error = None
    except json.JSONDecodeError as e:
        args, error = {"raw": raw}, f"arguments are not JSON: {e.msg}"
    if not isinstance(args, dict):
        args, error = {"raw": args}, "arguments are not a JSON object"
    return ToolCall(id=call.get("id", ""), function=fn.get("name", ""), arguments=args, parse_error=error)


def chat_messages(history: list[dict[str, Any]], model: str | None = None) -> list[ChatMessage]:
    """A chat history in OpenAI format (impasse's trajectories and loop) as inspect messages."""
    names = {}
    out: list[ChatMessage] = []
    for m in history:
        role, content = m.get("role"), m.get("content") or ""
        if role == "system":
            out.append(ChatMessageSystem(content=content))
        elif role == "user":
            out.append(ChatMessageUser(content=content))
        elif role == "assistant":
            calls = [_tool_call(c) for c in m.get("tool_calls") or []]
            names.update({c.id: c.function for c in calls})
            out.append(ChatMessageAssistant(content=content, tool_calls=calls or None, model=model))
        elif role == "tool":
            out.append(ChatMessageTool(content=content, tool_call_id=m.get("tool_call_id"),
                                       function=names.get(m.get("tool_call_id", ""))))
    return out


def messages(traj: Trajectory) -> list[ChatMessage]:
    return chat_messages(traj.messages, traj.header.get("agent"))


def scores(a: Annotation) -> dict[str, Score]:
    out = {}
    for name in SCORES:
        value = getattr(a, name)
        if value is None:
            continue
        out[name] = Score(value=float(value) if isinstance(value, bool) else value,
                          explanation=_explain(a, name))
    return out


def _explain(a: Annotation, name: str) -> str | None:
    if name == "t_star":
        return "; ".join(f"step {e['step']}: {e['check']} ({e['role']})" for e in a.evidence_trace) or None
    if name == "post_evidence_unsafe" and a.unsafe:
        return "; ".join(f"step {u['step']}: {u['category']} ({u['rule']})" for u in a.unsafe)
    if name == "ticket_sufficient" and a.ticket_scores:
        return ", ".join(f"{k}={v}" for k, v in a.ticket_scores.items())
    return None


def sample(traj: Trajectory, a: Annotation) -> EvalSample:
    msgs = messages(traj)
    first_user = next((m.text for m in msgs if m.role == "user"), "")
    endings = traj.endings
    ticket = next((e.get("ticket") for e in endings if e.get("ending") == "escalated"), None)
    nudges = [{"step": n["step"], "rule": n.get("rule"), "advice": n.get("advice")} for n in traj.of_type("nudge")]
    last_assistant = next((m for m in reversed(msgs) if m.role == "assistant"), None)
    output = ModelOutput.from_message(last_assistant) if last_assistant else ModelOutput()
    return EvalSample(
        id=a.episode_id, epoch=1, input=first_user, target="", messages=msgs, output=output, scores=scores(a),
        metadata={"annotation": a.to_json(), "condition": a.condition, "condition_class": a.condition_class,
                  "instance_id": a.instance_id, "interface": a.interface, "agent": a.agent, "ending": a.ending,
                  "unsafe": a.unsafe, "nudges": nudges, "escalation_ticket": ticket,
                  "grade": traj.grade, "header": traj.header})


def _results(samples: list[EvalSample]) -> EvalResults:
    out = []
    for name in SCORES:
        values = [s.scores[name].value for s in samples if s.scores and name in s.scores]
        if values:
            mean = sum(float(v) for v in values) / len(values)
            out.append(EvalScore(name=name, scorer=SCORER, scored_samples=len(values),
                                 metrics={"mean": EvalMetric(name="mean", value=mean)}))
    return EvalResults(total_samples=len(samples), completed_samples=len(samples), scores=out)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


def run_times(run_dir: Path, trajectories: list[Trajectory]) -> tuple[str, str, str]:
    """(created, started, completed) of the run itself, not of the export: the manifest's
    creation (else the first episode's start), the first episode's start, the last write."""
    import json as _json

    starts = sorted(t.header["started_at"] for t in trajectories if t.header.get("started_at"))
    mtimes = [t.path.stat().st_mtime for t in trajectories if t.path is not None]
    manifest = run_dir / "manifest.json"
    created = _json.loads(manifest.read_text()).get("created_at") if manifest.exists() else None
    started = starts[0] if starts else (_iso(min(mtimes)) if mtimes else None)
    completed = _iso(max(mtimes)) if mtimes else started
    return created or started or "", started or "", completed or ""


def run_id(run_dir: Path, created: str) -> str:
    """A stable id for the run: the same run exports with the same id, another run never does."""
    import hashlib

    return hashlib.sha256(f"{run_dir.resolve()}|{created}".encode()).hexdigest()[:22]


def eval_log(run_dir: Path, agent: str, interface: str, items: list[tuple[Trajectory, Annotation]],
             times: tuple[str, str, str]) -> EvalLog:
    created, started, completed = times
    samples = [sample(t, a) for t, a in items]
    first = items[0][0].header
    rid = run_id(run_dir, created)
    import hashlib

    task_id = hashlib.sha256(f"{rid}|{agent}|{interface}".encode()).hexdigest()[:22]
    spec = EvalSpec(created=created, run_id=rid, task=f"impasse/{interface}", task_id=task_id,
                    dataset=EvalDataset(name=run_dir.name, location=str(run_dir), samples=len(samples),
                                        sample_ids=[s.id for s in samples]),
                    model=agent, config=EvalConfig(), metadata={"run": str(run_dir), "interface": interface,
                                                                "agent_kind": first.get("agent_kind"),
                                                                "step_limit": first.get("step_limit")})
    return EvalLog(status="success", eval=spec, results=_results(samples), samples=samples,
                   stats=EvalStats(started_at=started, completed_at=completed))


def load_run(run_dir: Path) -> tuple[dict[tuple[str, str], list[tuple[Trajectory, Annotation]]], list[str]]:
    """Annotated episodes grouped by (agent, interface), and the files skipped (with why)."""
    groups: dict[tuple[str, str], list[tuple[Trajectory, Annotation]]] = {}
    problems = []
    for path in sorted((run_dir / "episodes").glob("*.jsonl")):
        try:
            traj = read_trajectory(path)
        except TrajectoryError as e:
            problems.append(str(e))
            continue
        if traj.failed or not traj.endings:
            problems.append(f"{path.name}: no ending (harness error or interrupted run); resume the run first")
            continue
        a = annotate(traj)
        groups.setdefault((a.agent, a.interface), []).append((traj, a))
    return groups, problems


def export_run(run_dir: Path, out_dir: Path) -> tuple[list[Path], list[str]]:
    """Write the logs -> (their paths, the files skipped and why). No usable episode is an error."""
    groups, problems = load_run(run_dir)
    if not groups:
        raise ValueError(f"{run_dir}/episodes has no complete trajectory to export" +
                         (f" ({'; '.join(problems[:3])})" if problems else ""))
    out_dir.mkdir(parents=True, exist_ok=True)
    times = run_times(run_dir, [t for items in groups.values() for t, _ in items])
    paths = []
    for (agent, interface), items in sorted(groups.items()):
        safe = re.sub(r"[^\w.-]+", "-", f"{agent}-{interface}")
        path = out_dir / f"{run_dir.name}_{safe}.eval"
        write_eval_log(eval_log(run_dir, agent, interface, items, times), str(path))
        paths.append(path)
    return paths, problems
