"""Reference agents of different strength for offline handoff experiments (mechanics only).

``weak`` diagnoses slowly (reads the file from the top up to the defect) and fixes only some tasks (those whose instance id
hashes even; on the others it makes no useful change and completes unverified); ``strong`` fixes
every task directly. Both escalate at an environment blocker, and both can continue from a
transferred state: after the handoff marker they read what they were given (raw trajectory,
summary, ticket, or nothing) and check the working tree when they were told nothing. They write
the summary / ticket an interface asks for, and report scripted token usage (context size in
characters / 4, plus a per-profile reasoning allowance) so cost is non-trivial. Their numbers are
a demonstration of the mechanics, never findings.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Generator
from typing import Any

from impasse.agent.loop import ModelResponse
from impasse.agent.reference.base import Act, Blocked, Obs, ReferenceAgent, bash, fix_edits, observations
from impasse.agent.reference.profiles import profile
from impasse.handoff.interfaces import HANDOFF_MARKER

PROGRESS = re.compile(r"(\d+) of (\d+) fix edits? (?:applied|saved)")
HUNK = re.compile(r"^@@ -(\d+)", re.M)


def handoff_start(messages: list[dict[str, Any]]) -> int | None:
    """Index of the last handoff notice, or None for an agent's own, unswitched history."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.get("role") == "user" and HANDOFF_MARKER in (m.get("content") or "") and "request]" not in m["content"][:40]:
            return i
    return None


def edits_done(messages: list[dict[str, Any]], target: str) -> int:
    """Successful edit_file calls on ``target`` in a history (a raw trajectory)."""
    results = {m.get("tool_call_id"): m.get("content") or "" for m in messages if m.get("role") == "tool"}
    n = 0
    for m in messages:
        for c in m.get("tool_calls") or [] if m.get("role") == "assistant" else []:
            fn = c.get("function", {})
            if fn.get("name") != "edit_file":
                continue
            try:
                path = json.loads(fn.get("arguments") or "{}").get("path")
            except json.JSONDecodeError:
                continue
            if path == target and c.get("id") in results and not results[c["id"]].startswith("Error"):
                n += 1
    return n


def defect_line(patch: str) -> int:
    """Line of the first hunk of the gold patch in the broken file (where the defect is)."""
    m = HUNK.search(patch)
    return int(m.group(1)) if m else 1


class HandoffReference(ReferenceAgent):
    """A reference agent that writes handoff artefacts and continues transferred work.

    Before fixing, it reads the target file in chunks of ``chunk_lines`` from where its search
    lands, until the chunk holding the defect (at most ``max_chunks``): how long it takes depends
    on where the defect is, so termination steps differ between tasks (which is what makes a
    percentile switch point fall inside some runs)."""

    think_tokens = 200
    chunk_lines = 0
    skip_chunks = 0
    max_chunks = 0

    @property
    def slow_steps(self) -> int:
        if not self.chunk_lines:
            return 0
        chunks = -(-defect_line(self.inst.patch) // self.chunk_lines) - self.skip_chunks
        return max(0, min(self.max_chunks, chunks))

    # ------------------------------------------------------------------ the model protocol
    def query(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelResponse:
        names = {t["function"]["name"] for t in tools}
        if names & {"write_summary", "write_ticket"}:
            act = self._artefact(messages, names)
        else:
            start = handoff_start(messages)
            own = messages if start is None else messages[start:]
            gen = self.policy(names) if start is None else self.continuation(names, messages[: start + 1])
            act = next(gen)
            for o in observations(own):
                act = gen.send(o)
        call = {"id": f"call_{len(messages)}", "type": "function",
                "function": {"name": act.tool, "arguments": json.dumps(act.args)}}
        message = {"role": "assistant", "content": act.thought, "tool_calls": [call]}
        return ModelResponse(message, self.usage(messages, message))

    def usage(self, messages: list[dict[str, Any]], reply: dict[str, Any]) -> dict[str, Any]:
        prompt = len(json.dumps(messages)) // 4
        completion = len(json.dumps(reply)) // 4 + self.think_tokens
        return {"scripted": True, "prompt_tokens": prompt, "completion_tokens": completion}

    # ------------------------------------------------------------------ what it knows
    def setup(self, tools: set[str]) -> None:
        import shlex

        inst = self.inst
        self.can_escalate = "escalate_to_human" in tools
        self.target = f"{self.workdir}/{inst.target_file}"
        self.test = f"{inst.test_cmd} --tb=short " + " ".join(shlex.quote(t) for t in inst.FAIL_TO_PASS[:3])
        self.log, self.saved, self.verification = [], False, "not run"
        self.edits = fix_edits(inst.patch, inst.target_file)

    def can_fix(self) -> bool:
        return True

    def progress_line(self, messages: list[dict[str, Any]]) -> str:
        done = min(edits_done(messages, f"{self.workdir}/{self.inst.target_file}"),
                   len(fix_edits(self.inst.patch, "")))
        return f"{done} of {len(fix_edits(self.inst.patch, ''))} fix edits applied to {self.inst.target_file}"

    def _artefact(self, messages: list[dict[str, Any]], names: set[str]) -> Act:
        start = handoff_start(messages)
        history = messages if start is None else messages[start:]
        progress = self.progress_line(messages)
        tests = [o for o in observations(history) if "passed" in o.output or "failed" in o.output]
        verified = "reported tests pass" if tests and self.tests_pass(tests[-1]) else "not verified"
        if "write_summary" in names:
            return Act("write_summary", {"summary": (
                f"Task: fix {self.inst.target_function} in {self.inst.target_file}. Progress: {progress}. "
                f"Verification: {verified}. Remaining: apply the rest of the fix, then run the reported tests.")})
        return Act("write_ticket", {
            "blocker": {"failed_operation": "none (planned model switch)", "affected_target": self.inst.target_file,
                        "error_feedback": ""},
            "evidence": [], "recovery_attempts": [], "request": {"assistance_needed": "continue the task", "scope": "the fix"},
            "resume_condition": "the reported tests pass",
            "progress": {"saved_changes": progress, "unfinished_work": "finish the fix and verify it",
                         "verification_status": verified}})

    # ------------------------------------------------------------------ own run
    def apply_fix(self) -> Generator[Act, Obs, None]:
        yield from self.apply_edits(fix_edits(self.inst.patch, self.inst.target_file))

    def apply_edits(self, edits: list[tuple[str, str]]) -> Generator[Act, Obs, None]:
        for i in range(self.slow_steps):
            first = 1 + self.chunk_lines * (i + self.skip_chunks)
            yield from self.step(bash(f"sed -n '{first},{first + self.chunk_lines - 1}p' {self.target}",
                                      "Read more of the code."))
        if not self.can_fix():
            yield from self.step(bash(f"grep -n 'return' {self.target} | head -20", "I cannot see the defect."))
            return
        for old, new in edits:
            obs = yield from self.step(Act("edit_file", {"path": self.target, "old_str": old, "new_str": new}, "Fix it."))
            if obs.exit_code:
                raise Blocked(Act("edit_file", {"path": self.target}), obs)
        self.saved = True

    def on_blocker(self, b: Blocked) -> Generator[Act, Obs, None]:
        yield from self.diagnose(b)
        yield from self.escalate_or_give_up(b, thin=False)

    # ------------------------------------------------------------------ continuing someone else's work
    def continuation(self, tools: set[str], received: list[dict[str, Any]]) -> Generator[Act, Obs, None]:
        self.setup(tools)
        done = self.known_progress(received)
        try:
            if done is None:
                obs = yield from self.step(bash("git status --short && git diff", "See what the previous agent left."))
                done = sum(1 for old, new in self.edits if _applied(old, new, obs.output))
            yield from self.step(bash(f"grep -n '{self.inst.target_function}' {self.target} | head -5",
                                      "Find the function involved."))
            if done < len(self.edits):
                yield from self.apply_edits(self.edits[done:])
            else:
                self.saved = True
            yield from self.verify_and_complete()
        except Blocked as b:
            yield from self.on_blocker(b)

    def known_progress(self, received: list[dict[str, Any]]) -> int | None:
        """Fix edits already applied, from what was transferred; None if nothing says."""
        if any(m.get("role") == "assistant" for m in received):  # a raw trajectory
            return min(edits_done(received, self.target), len(self.edits))
        m = PROGRESS.search(received[-1].get("content") or "")
        if m:
            return int(m.group(1))
        if "is saved in the workspace" in (received[-1].get("content") or ""):  # a reference escalation ticket
            return len(self.edits)
        return None


def _applied(old: str, new: str, diff: str) -> bool:
    """Whether a fix edit shows in ``git diff`` output: its added lines as '+', its removed as '-'."""
    olds, news = set(old.splitlines()), set(new.splitlines())
    added = {ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")}
    removed = {ln[1:] for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")}
    plus, minus = news - olds, olds - news
    return bool(plus or minus) and plus <= added and minus <= removed


@profile("weak")
class Weak(HandoffReference):
    """Slow diagnosis (reads the file from the top in 300-line chunks up to the defect, 1 to 4
    reading steps); fixes only tasks whose id hashes even."""

    think_tokens = 150
    chunk_lines, skip_chunks, max_chunks = 300, 0, 4

    def can_fix(self) -> bool:
        return int(hashlib.sha256(self.inst.instance_id.encode()).hexdigest(), 16) % 2 == 0


@profile("strong")
class Strong(HandoffReference):
    """Fixes every task; its search lands in the first 1000 lines, and it reads on in 1000-line
    chunks only for a deeper defect (0 to 2 reading steps); a longer reasoning allowance per call."""

    think_tokens = 600
    chunk_lines, skip_chunks, max_chunks = 1000, 1, 2
