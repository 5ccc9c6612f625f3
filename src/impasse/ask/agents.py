"""Reference agents for the ask suite (scripted, labelled ``reference/...``), in both domains.

Each is a policy over the tools, replayed from the message history (a pure function of it, so
resume is trivial). They explore where blockers surface (SQL: the table, the column, the
business-info entry; SWE: the file), ask or not according to their profile, and submit the answer
their knowledge allows: the full-information solution when every blocker's resolution reached
them (from ask_human or the full_info statement), else the naive answer written without the first
unresolved blocker (SQL: its naive query; SWE: ``without/<id>.patch``).

Questions are phrased from what the agent read: the span of the task statement, of a quoted
statement line, or of the tool output where the gap surfaced, plus where it met it and the kind
of gap (:func:`question_for`). The registry's description only aims the choice of span; its words
and the example questions (what the matcher compares against) never reach the question. The
profiles:

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
_STOPWORDS = frozenset(["the", "a", "an", "is", "are", "not", "no", "of", "to", "in", "on", "and", "or", "for", "by", "its", "it", "be", "any", "anywhere", "which", "what", "whether", "does", "do", "how", "many", "much", "who", "when", "where", "why", "as", "at", "that", "this", "with", "from", "so"])


_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.'()-]*[A-Za-z0-9_)]|[A-Za-z0-9]")
TEMPLATES = {"missing": "What value or rule should I use for '{phrase}'{where}?",
             "ambiguous": "Which interpretation of '{phrase}'{where} is meant here?",
             "contradictory": "The task says conflicting things about '{phrase}'{where}: which one holds?"}
"""A targeted question by the kind of gap the agent noticed."""


def _stems(text: str) -> set[str]:
    from impasse.ask.matcher import stem

    return {stem(w.lower().strip(".'()")) for w in _WORD.findall(text)} - {stem(w) for w in _STOPWORDS}


def phrase_for(blocker: Any, text: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """The span of the task's own text (what the agent read: the statement, a tool's output) that
    the gap is about: 1-4 words, content words at both ends, sharing the most stems with what the
    agent noticed there. The blocker's description only aims the choice; the words are the task's.
    Spans in ``taken`` (already asked about) are passed over."""
    from impasse.ask.matcher import Vocab, stem

    aim, generic = _stems(blocker.description), Vocab.load().generic
    best, best_score = "", 0.0
    for segment in re.split(r"[\n:;,.?!\[\]|]+\s*", text):  # a span never crosses a field or a sentence
        words = _WORD.findall(segment)
        for i in range(len(words)):
            for n in range(1, 5):
                span = words[i:i + n]
                if len(span) < n or span[0].lower() in _STOPWORDS or span[-1].lower() in _STOPWORDS:
                    continue
                stems = [stem(w.lower().strip(".'()")) for w in span]
                hits = sum(st in aim for st in stems) - 0.7 * sum(st in aim and st in generic for st in stems)
                phrase = " ".join(span)
                score = hits - 0.4 * (n - hits)
                if hits > 0.5 and score > best_score and phrase not in taken:
                    best, best_score = phrase, score
    return best or "the question"


def question_for(blocker: Any, text: str, where: str = "", taken: set[str] | frozenset[str] = frozenset()) -> str:
    """A targeted question in the agent's words: the task text's phrase the gap sits in, where the
    agent met it, and the kind of gap (never the registry's description or example questions)."""
    phrase = phrase_for(blocker, text, taken)
    return TEMPLATES.get(blocker.kind, TEMPLATES["ambiguous"]).format(phrase=phrase, where=where)


def wide_question(area: str, phrases: list[str]) -> str:
    """One catch-all question about an area, covering everything noticed there."""
    return f"What is intended for {area}: {'; '.join(phrases)}?"


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
        observed: dict[str, str] = {}
        for b in self.domain.blockers:
            loc = b.location
            if loc not in done_locations:
                act = self.explore(b)
                out = (yield act) if act else ""
                done_locations[loc] = self.touched(b, out)
                observed[loc] = out
                seen_text.append(out)
            if can_ask:
                for q in self.questions(b, done_locations[loc], observed[loc]):
                    seen_text.append((yield ("ask_human", {"question": q})))
        yield from self.submit(seen_text)

    def questions(self, blocker: Any, touched: bool, seen: str) -> list[str]:
        """What this profile asks about ``blocker`` once its location was explored (``seen``: what
        that exploration printed)."""
        return []

    def targeted(self, blocker: Any, seen: str) -> str:
        """The targeted question about ``blocker``: from the text of where it surfaced (the
        statement, a quoted statement line, the tool output the agent saw there)."""
        kind, detail = where(blocker)
        text = f"{seen}\n{self.domain.statement}" if kind != "file" else \
            f"{_quoted(blocker.location)}\n{self.domain.statement}"
        here = {"column": f" for {detail}", "table": f" in table {detail}", "business_info": f" in {self.area(blocker)}",
                "file": f" in {_function(blocker.location)}"}.get(kind, "")
        siblings = [b for b in self.domain.blockers if b.location == blocker.location]
        taken = {phrase_for(b, text) for b in siblings[: siblings.index(blocker)]}
        return question_for(blocker, text, here, taken)

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
            # HiL-Bench's registries name no entry: look for the statement's words near the gap
            return ("search_business_info", {"query": (entry.term or entry.text) if entry
                                             else phrase_for(b, self.domain.statement)})
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


def _quoted(location: str) -> str:
    """The statement line a SWE location quotes (``...; statement: 'X'``), or the location itself."""
    m = re.search(r"statement: '([^']+)'", location)
    return m.group(1) if m else location


def _function(location: str) -> str:
    parts = location.split(";")[0].split()
    return f"`{parts[1]}`" if len(parts) > 1 else (f"`{parts[0]}`" if parts else "the code")


class TargetedAsker(AskReference):
    profile = "targeted-asker"

    def questions(self, blocker: Any, touched: bool, seen: str) -> list[str]:
        return [self.targeted(blocker, seen)] if touched else []


class SilentGuesser(AskReference):
    profile = "silent-guesser"


class Spammer(AskReference):
    profile = "spammer"

    def questions(self, blocker: Any, touched: bool, seen: str) -> list[str]:
        k = [b.id for b in self.domain.blockers].index(blocker.id)
        noise = [IRRELEVANT[(2 * k) % len(IRRELEVANT)], IRRELEVANT[(2 * k + 1) % len(IRRELEVANT)]]
        return noise + ([self.targeted(blocker, seen)] if touched else [])


class BroadAsker(AskReference):
    profile = "broad-asker"

    def opening_questions(self) -> list[str]:
        return list(BROAD)

    def questions(self, blocker: Any, touched: bool, seen: str) -> list[str]:
        """At the first blocker of an explored area, one question about the whole area."""
        here = [b for b in self.domain.blockers if b.location == blocker.location]
        if not (touched and here[0].id == blocker.id):
            return []
        text = f"{seen}\n{self.domain.statement}"
        return [wide_question(self.area(blocker), [phrase_for(b, text) for b in here])]


class ObviousOnly(AskReference):
    profile = "obvious-only"

    def questions(self, blocker: Any, touched: bool, seen: str) -> list[str]:
        visible = [b for b in self.domain.blockers if where(b)[0] in VISIBLE] or self.domain.blockers[:1]
        return [self.targeted(blocker, seen)] if blocker.id == visible[0].id else []


PROFILES = {c.profile: c for c in (TargetedAsker, SilentGuesser, Spammer, BroadAsker, ObviousOnly)}
