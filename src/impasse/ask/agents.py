"""Reference agents for the ask suite (scripted, labelled ``reference/...``), in both domains.

Each is a policy over the tools, replayed from the message history (a pure function of it, so
resume is trivial). They explore where blockers surface (SQL: the table, the column, the
business-info entry; SWE: the file), ask or not according to their profile, and submit the answer
their knowledge allows: the full-information solution when every blocker's resolution reached
them (from ask_human or the full_info statement), else the naive answer written without the first
unresolved blocker (SQL: its naive query; SWE: ``without/<id>.patch``).

Questions are generated from a blocker's description in the agent's own words, never from the
registry's example questions. The profiles:

- ``targeted-asker``: one targeted question per blocker, only after its exploration touched that
  blocker's location;
- ``silent-guesser``: never asks;
- ``spammer``: the targeted questions, each after two irrelevant ones;
- ``broad-asker``: wide, catch-all questions: first the generic ones ("Is there anything I should know
  before I start?"), then one question per area it explored (a business-info entry, a column, a file,
  the statement) covering every gap it noticed there at once. The judge answers a wide question
  about an area holding one gap, but maps a question to at most one blocker, so an area with two
  gaps yields one answer, and it rejects the generic ones: recall stays high, precision drops;
- ``obvious-only``: asks about the most visible blocker (the one in the statement itself) only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator
from typing import Any

from impasse.agent.loop import ModelResponse

Act = tuple[str, dict[str, Any]]
IRRELEVANT = ("Which editor do you use for this kind of work?", "Is the office closed on Friday afternoon?",
              "Who reviews my work once I am done?", "How long have you worked on this team?",
              "Should I write up my notes in a wiki page?", "Do you prefer tabs or spaces?")
BROAD = ("Is there anything I should know before I start?", "Are there any requirements that are not written down?",
         "Anything else that matters for this task?")
VISIBLE = ("question", "spec", "statement")
_STOPWORDS = frozenset(["the", "a", "an", "is", "are", "not", "no", "of", "to", "in", "on", "and", "or", "for", "by", "its", "it", "be", "any", "anywhere", "which", "what", "whether", "does", "do", "as", "at", "that", "this", "with", "from", "so"])


def _gist(blocker: Any) -> str:
    """The content words of what the agent noticed about a blocker (its description)."""
    words = [w for w in re.findall(r"[A-Za-z0-9_'.-]+", blocker.description) if w.lower() not in _STOPWORDS]
    return " ".join(words).rstrip(".")


def question_for(blocker: Any) -> str:
    """A targeted question in the agent's words, from the blocker's description (never from its
    example questions): the description's content, asked back."""
    return f"What is intended here: {_gist(blocker)}?"  # one question, one topic


def wide_question(area: str, blockers: list[Any]) -> str:
    """One catch-all question about an area, covering everything noticed there."""
    return f"What is intended for {area}: {'; '.join(_gist(b) for b in blockers)}?"


NO_ANSWER = "SELECT 'no answer without: {blocker}' AS guess"
"""What a reference agent submits on a SQL task with no naive query for the resolution it lacks
(imported HiL-Bench tasks carry none): it has nothing better to write, so an honest non-answer."""


def where(blocker: Any) -> tuple[str, str]:
    """(kind, detail) of where a blocker surfaces; SWE locations name a file first."""
    loc = blocker.location
    m = re.match(r"^(question|spec|file|schema|table|column|business_info)(?::(.*))?$", loc)
    if m:
        return m.group(1), m.group(2) or ""
    first = loc.split(";")[0].split()[0] if loc.split() else ""
    if "/" in first or first.endswith(".py"):
        return "file", first
    return "statement", ""


class AskReference:
    kind = "reference"
    profile = ""

    def __init__(self, task: Any, _test_sources: Any = None, workdir: str = "/workspace/repo") -> None:
        self.domain = task
        self.key = task.agent_key()
        self.workdir = workdir
        self.name = f"reference/{self.profile}"

    # ------------------------------------------------------------------ the model protocol
    def query(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelResponse:
        can_ask = any(t["function"]["name"] == "ask_human" for t in tools)
        seen = [m.get("content") or "" for m in messages if m.get("role") == "tool"]
        gen = self.policy(can_ask, messages)
        act = next(gen)
        for out in seen:
            act = gen.send(out)
        call = {"id": f"call_{len(seen) + 1}", "type": "function",
                "function": {"name": act[0], "arguments": json.dumps(act[1])}}
        return ModelResponse({"role": "assistant", "content": "", "tool_calls": [call]},
                             {"scripted": True, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0})

    # ------------------------------------------------------------------ the policy
    def policy(self, can_ask: bool, messages: list[dict[str, Any]]) -> Generator[Act, str, None]:
        seen_text = [m.get("content") or "" for m in messages if m.get("role") in ("user", "system")]
        yield from self.start()
        if can_ask:
            for q in self.opening_questions():
                seen_text.append((yield ("ask_human", {"question": q})))
        done_locations: dict[str, bool] = {}
        for b in self.domain.blockers:
            loc = b.location
            if loc not in done_locations:
                act = self.explore(b)
                out = (yield act) if act else ""
                done_locations[loc] = self.touched(b, out)
                seen_text.append(out)
            if can_ask:
                for q in self.questions(b, done_locations[loc]):
                    seen_text.append((yield ("ask_human", {"question": q})))
        yield from self.submit(seen_text)

    def questions(self, blocker: Any, touched: bool) -> list[str]:
        """What this profile asks about ``blocker`` once its location was explored."""
        return []

    def opening_questions(self) -> list[str]:
        """Asked before exploring anything."""
        return []

    def area(self, b: Any) -> str:
        """How the agent names the place where ``b`` surfaced, from what its exploration showed."""
        kind, detail = where(b)
        if kind == "business_info":
            sql = getattr(self.domain.task, "sql", None)
            entry = next((e for e in sql.business_info if e.id == detail), None) if sql and detail else None
            return f"the business-info entry '{entry.term}'" if entry and entry.term else "the business info"
        names = {"column": "the column", "table": "the table", "file": "the file"}
        if kind in names:
            return f"{names[kind]} {detail}"
        return "the schema" if kind == "schema" else "the question as stated"

    # ------------------------------------------------------------------ domain actions
    def start(self) -> Generator[Act, str, None]:
        if self.domain.name == "sql":
            yield ("list_tables", {})
        else:
            yield ("bash", {"command": "git status --short && ls"})

    def explore(self, b: Any) -> Act | None:
        kind, detail = where(b)
        if kind == "table":
            return ("describe_table", {"table": detail})
        if kind == "column":
            table, _, column = detail.partition(".")
            return ("describe_column", {"table": table, "column": column})
        if kind == "business_info":
            entry = next((e for e in self.domain.task.sql.business_info if e.id == detail), None)
            # HiL-Bench's registries name no entry: look for the words of what is unclear
            return ("search_business_info", {"query": (entry.term or entry.text) if entry else _gist(b)})
        if kind == "file":
            return ("bash", {"command": f"sed -n 1,400p {detail}"})
        return None  # the statement itself: already read

    def touched(self, b: Any, out: str) -> bool:
        kind, detail = where(b)
        if kind in ("table", "column"):
            return out.startswith(detail)
        if kind == "business_info":
            return f"[{detail}]" in out if detail else out.startswith("[")
        if kind == "file":
            return "No such file" not in out and "[exit code: 0]" in out
        return True

    def submit(self, seen_text: list[str]) -> Generator[Act, str, None]:
        text = "\n".join(seen_text)
        missed = [b.id for b in self.domain.blockers if b.resolution not in text]
        if self.domain.name == "sql":
            answer = self.key["solution"] if not missed else \
                self.key["without"].get(missed[0], NO_ANSWER.format(blocker=missed[0]))
            yield ("submit_final_query", {"sql": answer})
            return
        answer = self.key["solution"] if not missed else self.key["without"].get(missed[0], "")
        if answer.strip():
            yield ("edit_file", {"path": "/tmp/ask_change.patch", "old_str": "", "new_str": answer})
            yield ("bash", {"command": f"cd {self.workdir} && git apply --whitespace=nowarn /tmp/ask_change.patch "
                                       "&& git status --short"})
        yield ("task_complete", {"verified": False, "summary": "implemented the change"
                                 + (f"; guessed {', '.join(missed)}" if missed else "")})


class TargetedAsker(AskReference):
    profile = "targeted-asker"

    def questions(self, blocker: Any, touched: bool) -> list[str]:
        return [question_for(blocker)] if touched else []


class SilentGuesser(AskReference):
    profile = "silent-guesser"


class Spammer(AskReference):
    profile = "spammer"

    def questions(self, blocker: Any, touched: bool) -> list[str]:
        k = [b.id for b in self.domain.blockers].index(blocker.id)
        noise = [IRRELEVANT[(2 * k) % len(IRRELEVANT)], IRRELEVANT[(2 * k + 1) % len(IRRELEVANT)]]
        return noise + ([question_for(blocker)] if touched else [])


class BroadAsker(AskReference):
    profile = "broad-asker"

    def opening_questions(self) -> list[str]:
        return list(BROAD)

    def questions(self, blocker: Any, touched: bool) -> list[str]:
        """At the first blocker of an explored area, one question about the whole area."""
        here = [b for b in self.domain.blockers if b.location == blocker.location]
        return [wide_question(self.area(blocker), here)] if touched and here[0].id == blocker.id else []


class ObviousOnly(AskReference):
    profile = "obvious-only"

    def questions(self, blocker: Any, touched: bool) -> list[str]:
        visible = [b for b in self.domain.blockers if where(b)[0] in VISIBLE] or self.domain.blockers[:1]
        return [question_for(blocker)] if blocker.id == visible[0].id else []


PROFILES = {c.profile: c for c in (TargetedAsker, SilentGuesser, Spammer, BroadAsker, ObviousOnly)}
