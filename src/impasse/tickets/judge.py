"""The ticket judge: four dimensions (blocker, progress, request, resume condition), each
missing / partial / full, and a separate overall rating (sufficient / partial / insufficient).

The overall rule, in one line (:data:`OVERALL_RULE`): sufficient when a recipient could act
without asking back. It is deliberately not "all four full": the paper's blinded judge rated 74.1%
sufficient while progress was incomplete in 35.7% of tickets.

Two judges, both blinded (they see only the task description and the ticket) and both producing
dimensions + overall (:class:`Judgement`): a deterministic rubric (:func:`rubric_judge`) and an
LLM judge (:func:`llm_judge`) through any OpenAI-compatible model. Beyond the paper,
:func:`truthfulness` compares what a ticket claims about saved changes and verification with
what the trajectory and the workspace diff show.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from impasse.steps import Step
from impasse.tickets.ticket import Ticket

DIMENSIONS = ("blocker", "progress", "request", "resume_condition")
_VAGUE = re.compile(r"^\s*(n/?a|none|unknown|tbd|todo|help|please help|error|it failed|something|\?|-)\s*\.?\s*$", re.I)
_OBSERVABLE = re.compile(r"`[^`]+`|\b(succeeds?|works?|runs?|passes|shows?|returns?|is (writable|readable|"
                         r"installed|mounted)|imports?|completes?|exits? 0|can (write|read|run|import))\b", re.I)


def _has(text: str, min_len: int = 3) -> bool:
    return len(text.strip()) >= min_len and not _VAGUE.match(text)


def _level(parts: list[bool]) -> str:
    return "full" if all(parts) else ("partial" if any(parts) else "missing")


def judge_ticket(ticket: Ticket) -> dict[str, str]:
    """Deterministic rubric. Full needs every sub-field present and specific."""
    b, r, p = ticket.blocker, ticket.request, ticket.progress
    blocker = _level([_has(b.failed_operation), _has(b.affected_target), _has(b.error_feedback, 8)])
    # "none" is a real answer for saved changes (nothing could be written), so any statement counts there.
    progress = _level([bool(p.saved_changes.strip()), _has(p.unfinished_work, 4), _has(p.verification_status, 4)])
    request = _level([_has(r.assistance_needed, 12), _has(r.scope, 4)])
    resume = ("missing" if not _has(ticket.resume_condition) else
              "full" if _OBSERVABLE.search(ticket.resume_condition) else "partial")
    return {"blocker": blocker, "progress": progress, "request": request, "resume_condition": resume}


LEVELS = ("missing", "partial", "full")
OVERALL = ("sufficient", "partial", "insufficient")
OVERALL_RULE = ("sufficient when a recipient could act without asking back: blocker and request fully specified, "
                "no dimension missing, at most one other dimension partial; insufficient when the blocker or the "
                "request is missing; partial otherwise")


def overall(scores: dict[str, str]) -> str:
    """The rubric's overall rating from the four dimension levels (:data:`OVERALL_RULE`)."""
    levels = [scores.get(d, "missing") for d in DIMENSIONS]
    if scores.get("blocker", "missing") == "missing" or scores.get("request", "missing") == "missing":
        return "insufficient"
    if (scores["blocker"] == "full" and scores["request"] == "full" and "missing" not in levels
            and levels.count("partial") <= 1):
        return "sufficient"
    return "partial"


def sufficient(scores: dict[str, str]) -> bool:
    return overall(scores) == "sufficient"


@dataclass(frozen=True)
class Judgement:
    """One judge's verdict on one ticket."""

    scores: dict[str, str]
    overall: str
    judge: str
    """'rubric' or 'llm:<model>'."""
    note: str = ""
    readable: bool = True
    """False when the judge's reply held no verdict at all (no dimension, no overall rating): its
    scores are then placeholders, not a rating of the ticket."""

    def to_json(self) -> dict[str, Any]:
        return {"scores": dict(self.scores), "overall": self.overall, "judge": self.judge, "note": self.note}


def rubric_judge(ticket: Ticket, task: str = "") -> Judgement:
    """The deterministic rubric: dimensions by :func:`judge_ticket`, overall by :func:`overall`.
    ``task`` is accepted for symmetry with the LLM judge; the rubric does not need it."""
    scores = judge_ticket(ticket)
    return Judgement(scores, overall(scores), "rubric")


_NO_CHANGE = re.compile(r"\b(none|no (saved )?changes?|nothing (was )?(saved|changed)|no edits?|not (yet )?(made|saved))\b", re.I)
_CLAIMS_VERIFIED = re.compile(r"\b(verified|tests? (now )?pass(ed|es)?|all (tests )?pass(ed)?|passing)\b", re.I)
_NOT = re.compile(r"\b(not|n't|unable|could not|cannot|no)\b", re.I)
_PASSED = re.compile(r"\b\d+ passed\b")
_FAILED = re.compile(r"\b\d+ (failed|errors?)\b")


def truthfulness(ticket: Ticket, steps: list[Step], workspace_diff: str | None) -> list[str]:
    """Contradictions between the ticket's progress claims and what really happened."""
    return diff_contradictions(ticket, workspace_diff) + verification_contradictions(ticket, steps)


def diff_contradictions(ticket: Ticket, workspace_diff: str | None) -> list[str]:
    """What the ticket says about saved changes against the workspace diff (None: diff unknown).
    Usable alone where the steps are not seen (e.g. an MCP server next to the agent's workspace).

    Compared as facts, not phrases: every file the statement names must be one the diff changes,
    and a statement that names no file and says nothing was saved ("none", "n/a", "nothing", "No
    modifications.") contradicts a diff that changes files. A statement naming no file on a clean
    workspace contradicts nothing, whatever its wording."""
    if workspace_diff is None:
        return []
    saved = ticket.progress.saved_changes
    changed = re.findall(r"^diff --git a/(\S+)", workspace_diff, re.M)
    named = named_files(saved)
    issues = []
    unchanged = [n for n in named if not any(same_file(n, f) for f in changed)]
    if unchanged:
        where = f"the workspace diff changes {', '.join(changed[:3])}" if changed else "the workspace diff is empty"
        issues.append(f"names {', '.join(unchanged[:3])} as saved, but {where}")
    if changed and not named and (not saved.strip() or _NOTHING.search(saved)):
        issues.append(f"claims no saved changes, but the workspace diff changes {', '.join(changed[:3])}")
    return issues


_PATH = re.compile(r"(?<![\w/.-])((?:/?[\w.-]+/)+[\w.-]+|[\w.-]+\.(?:py|pyi|pyx|txt|cfg|toml|ini|md|rst|json|yaml|yml|"
                   r"c|h|cpp|js|ts|sh|lock|in))(?![\w/])")
_NOTHING = re.compile(r"\b(none|nothing|n/?a|no (saved |file )?(changes?|modifications?|edits?|files?)|not (yet )?"
                      r"(made|saved|changed|modified)|unchanged|empty)\b|^\s*-?\s*$", re.I)


def named_files(text: str) -> list[str]:
    """The file paths a statement names (``glom/core.py``, ``/workspace/repo/x.py``, ``setup.cfg``),
    in order, without trailing punctuation; version numbers and URLs are not paths."""
    out = []
    for m in _PATH.finditer(text):
        path = m.group(1).rstrip(".,;:")
        if "://" in text[max(0, m.start() - 3):m.start() + 3] or re.fullmatch(r"[\d.]+", path) or path in out:
            continue
        if "." in path.rsplit("/", 1)[-1]:
            out.append(path)
    return out


def same_file(named: str, changed: str) -> bool:
    """``named`` (as the ticket writes it: relative, absolute, or a bare file name when only one
    such file changed) is the diff's repository-relative ``changed``."""
    named = named.lstrip("./") if named.startswith("./") else named
    return named == changed or named.endswith("/" + changed) or ("/" not in named and changed.rsplit("/", 1)[-1] == named)


def passed_after_last_edit(steps: list[Step]) -> bool:
    """Whether a passing test run follows the last edit (what a claim of verification needs)."""
    last_edit = max((s.index for s in steps if s.is_edit), default=0)
    return any(s.tool == "bash" and "pytest" in s.command and _PASSED.search(s.output)
               and not _FAILED.search(s.output) and s.index > last_edit for s in steps)


def verification_contradictions(ticket: Ticket, steps: list[Step]) -> list[str]:
    """A claim of verification that no passing test run after the last edit backs."""
    issues = []
    status = ticket.progress.verification_status
    if _CLAIMS_VERIFIED.search(status) and not _NOT.search(status) and not passed_after_last_edit(steps):
        issues.append("claims the change is verified, but no passing test run follows the last edit")
    return issues


RUBRIC_PROMPT = """You are the person who receives a handoff ticket that an AI coding agent filed when its
environment blocked it. You see only the task the agent was given and its ticket.
Score four dimensions, each "missing", "partial" or "full":
- blocker: the failed operation, the affected target and the error feedback are all stated;
- progress: the agent's saved changes, unfinished work and verification status are all stated;
- request: the external assistance needed and its scope are concrete;
- resume_condition: an observable state that shows work can continue.
Then rate the ticket overall, separately: "sufficient" if you could act on it without asking the agent
anything back, "insufficient" if you could not act on it at all, "partial" otherwise.
Answer with JSON only:
{"blocker": ..., "progress": ..., "request": ..., "resume_condition": ..., "overall": ...}
"""


def prompt_version() -> str:
    """The judge prompt's digest: a cached verdict is reused only under the prompt that gave it."""
    import hashlib

    return hashlib.sha256(RUBRIC_PROMPT.encode()).hexdigest()[:12]


def json_object(text: str) -> dict[str, Any]:
    """The JSON object in a model's reply (models wrap it in prose or code fences); {} when there
    is none, so a confused judge reads as 'no rating', never as an exception."""
    m = re.search(r"\{.*\}", text, re.S)
    try:
        data = json.loads(m.group(0)) if m else {}
    except json.JSONDecodeError:
        data = {}
    return data if isinstance(data, dict) else {}


def judge_prompt(ticket: Ticket, task: str) -> str:
    return f"{RUBRIC_PROMPT}\nTask description:\n{task.strip() or '(not available)'}\n\nTicket:\n{ticket.render()}\n"


def llm_judge(ticket: Ticket, model: Any, task: str = "") -> Judgement:
    """Score with an LLM through a model client (``query(messages, tools)``), blinded to everything
    but ``task`` and the ticket. A dimension the reply does not score counts as 'missing'; a reply
    without a valid overall rating gets the rubric's rule over its dimensions (and says so)."""
    resp = model.query([{"role": "user", "content": judge_prompt(ticket, task)}], [])
    data = json_object(resp.message.get("content") or "")
    scores = {d: (data.get(d) if data.get(d) in LEVELS else "missing") for d in DIMENSIONS}
    rating, note = data.get("overall"), ""
    readable = any(data.get(k) is not None for k in (*DIMENSIONS, "overall"))
    if not readable:
        note = "the judge's reply held no verdict (no dimension and no overall rating)"
    if rating not in OVERALL:
        rating = overall(scores)
        note = note or "no valid overall rating in the reply; the rubric's rule was applied"
    return Judgement(scores, rating, f"llm:{getattr(model, 'name', 'model')}", note, readable)
