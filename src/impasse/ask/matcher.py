"""The ask_human matcher: maps one question to at most one blocker (HiL-Bench, papers.md 1.2).

HiL-Bench's judge sees each blocker's id, description and example questions (never the
resolutions) and rejects a question unless it is one specific, concise question aimed at exactly
one blocker ("when in doubt, reject"). :func:`answer` turns a verdict into the reply the agent
sees: the matched blocker's resolution verbatim, ``irrelevant question``, or the judge-hiccup text.

Two matchers implement :class:`Matcher`:

* :class:`OfflineMatcher` (default, deterministic, no model): each rejection rule of the judge
  prompt is a small named predicate over the question (vocabulary in
  ``data/matcher_rules.yaml``), then a TF-IDF-like overlap against every blocker of the task; one
  blocker must stand out by a clear margin.
* :class:`LLMMatcher`: the paper's judge over any OpenAI-compatible endpoint (the model client is
  imported lazily, so this module stays pure).

New matchers register in :data:`MATCHERS`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Protocol

import yaml

IRRELEVANT = "irrelevant question"
HICCUP = "can't answer (perhaps transient hiccup)"
MAX_ANSWERED = 3

MATCH = "match"
# rejection rules, in the order the offline matcher checks them
REJECTION_RULES = ("empty", "statement", "confirm_assumption", "no_question_word", "multi_topic", "tangential",
                   "broad", "vague_about", "parroting", "not_concise", "no_specific_overlap", "no_clear_blocker")


class BlockerLike(Protocol):
    """What a matcher reads of a blocker (:class:`impasse.ask.schema.Blocker` and the MCP
    server's registry records both qualify). ``location`` is read when present."""

    id: str
    description: str
    example_questions: list[str]


@dataclass(frozen=True)
class Match:
    blocker_id: str | None
    rule: str
    """The rule that decided: :data:`MATCH` or one of :data:`REJECTION_RULES` (LLM: ``llm``)."""
    reasoning: str = ""


class MatcherFailure(RuntimeError):
    """The judge could not decide (endpoint error, malformed reply): the agent gets :data:`HICCUP`."""


class Matcher(Protocol):
    def match(self, question: str, blockers: Sequence[BlockerLike]) -> Match: ...


@dataclass(frozen=True)
class Reply:
    text: str
    blocker_id: str | None
    status: str
    """``matched`` | ``irrelevant`` | ``capped`` | ``judge_failure``."""
    rule: str = ""


def answer(matcher: Matcher, question: str, blockers: Sequence[Any], answered_so_far: int,
           cap: int = MAX_ANSWERED) -> Reply:
    """HiL-Bench's reply semantics: a match returns that blocker's ``resolution`` verbatim; once
    ``cap`` questions have been answered every later question is ``irrelevant question``; a judge
    failure is the hiccup text (and does not use up the cap)."""
    if answered_so_far >= cap:
        return Reply(IRRELEVANT, None, "capped", "cap")
    try:
        m = matcher.match(question, blockers)
    except MatcherFailure as e:
        return Reply(HICCUP, None, "judge_failure", f"failure: {e}")
    if m.blocker_id is None:
        return Reply(IRRELEVANT, None, "irrelevant", m.rule)
    blocker = next((b for b in blockers if b.id == m.blocker_id), None)
    if blocker is None:  # a matcher naming an id the task does not have is a judge failure
        return Reply(HICCUP, None, "judge_failure", f"unknown blocker {m.blocker_id!r}")
    return Reply(blocker.resolution, blocker.id, "matched", m.rule)


# ---------------------------------------------------------------- offline matcher: vocabulary


@cache
def rules_data() -> dict[str, Any]:
    return yaml.safe_load(resources.files("impasse.ask").joinpath("data/matcher_rules.yaml").read_text())


@dataclass(frozen=True)
class Vocab:
    wh: frozenset[str]
    requests: frozenset[str]
    aux: frozenset[str]
    stop: frozenset[str]
    generic: frozenset[str]
    synonyms: dict[str, str]
    phrases: dict[str, tuple[str, ...]]
    meaning: tuple[re.Pattern[str], ...]
    objects: frozenset[str]
    max_words: int

    @classmethod
    def load(cls, data: dict[str, Any] | None = None) -> Vocab:
        d = data or rules_data()
        syn = {w: group[0] for group in d["synonyms"] for w in group}
        generic = {syn.get(w) or syn.get(stem(w)) or stem(w) for w in d["generic_words"]} | set(d["generic_words"])
        phrases = {k: tuple(d[k]) for k in ("confirm_phrases", "broad_phrases", "about_openers",
                                            "tangential_phrases", "multi_topic_phrases", "background_markers")}
        return cls(frozenset(d["wh_words"]), frozenset(d["request_verbs"]), frozenset(d["auxiliaries"]),
                   frozenset(d["stopwords"]), frozenset(generic), syn, phrases,
                   tuple(re.compile(p) for p in d["meaning_patterns"]), frozenset(d["object_words"]),
                   int(d["max_words"]))


_TOKEN = re.compile(r"[a-z0-9][a-z0-9_./:-]*[a-z0-9]|[a-z0-9]")


def normalize(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower().replace("\u2019", "'"))


def stem(word: str) -> str:
    """Crude suffix stripping: enough to equate 'months'/'month', 'cancelled'/'cancel'."""
    for suf, rep, keep in (("ies", "y", 3), ("ing", "", 4), ("ed", "", 4), ("es", "", 3), ("s", "", 3)):
        if word.endswith(suf) and len(word) - len(suf) >= keep and not word.endswith("ss"):
            return word[: len(word) - len(suf)] + rep
    return word


def tokens(text: str, v: Vocab) -> list[str]:
    """Content terms: synonyms folded, stopwords dropped; identifiers (planes.year, dep_delay)
    also contribute their parts."""
    out: list[str] = []
    for raw in _TOKEN.findall(text.lower()):
        split = re.split(r"[._/:-]+", raw)
        # an identifier counts whole and by parts; a hyphenated word (on-time) only by its parts
        parts = [raw, *split] if re.search(r"[._/:]", raw) else split
        for p in parts:
            if not p or p in v.stop:
                continue
            out.append(v.synonyms.get(p) or v.synonyms.get(stem(p)) or stem(p))
    return out


# ---------------------------------------------------------------- offline matcher: rule predicates


def _has(q: str, phrases: Sequence[str]) -> bool:
    return any(p in q for p in phrases)


def _words(q: str) -> list[str]:
    return re.findall(r"[a-z0-9'_.-]+", q)


def is_statement(q: str, v: Vocab) -> bool:
    """No question mark and not a request ('Explain ...') -> a statement, not a question."""
    w = _words(q)
    return not q.endswith("?") and not (w and w[0] in v.requests | {"please"})


def lacks_question_word(q: str, v: Vocab) -> bool:
    """Neither a wh-word, nor a request verb, nor a leading auxiliary (yes/no, either-or)."""
    w = _words(q)
    return not (set(w) & (v.wh | v.requests) or (w and w[0] in v.aux))


def confirms_assumption(q: str, v: Vocab) -> bool:
    return _has(q, v.phrases["confirm_phrases"])


def is_multi_topic(q: str, v: Vocab) -> bool:
    """Two questions in one: two question marks, a joining phrase, or 'and' opening a second
    clause ('... and what is the threshold?')."""
    second = re.search(r"\band (\w+)\b", q)
    return (q.count("?") >= 2 or _has(q, v.phrases["multi_topic_phrases"])
            or bool(second and second.group(1) in v.wh | v.aux))


def is_tangential(q: str, v: Vocab) -> bool:
    return _has(q, v.phrases["tangential_phrases"])


def is_broad(q: str, v: Vocab) -> bool:
    return _has(q, v.phrases["broad_phrases"])


def is_vague_about(q: str, v: Vocab) -> bool:
    """'What about X?', 'Any thoughts on X?': names a topic, states no intent."""
    return any(q.startswith(p) for p in v.phrases["about_openers"])


def parrots_term(q: str, v: Vocab) -> bool:
    """'What does "summer season" mean?' repeats a task term without any analysis. A term that
    names a data or code object (a column, a keyword argument) is a real question about it."""
    for rx in v.meaning:
        m = rx.match(q)
        if m:
            term = m.group("term")
            return not (re.search(r"[._()=]", term.strip("'\"")) or set(_words(term)) & v.objects)
    return False


def is_not_concise(q: str, v: Vocab) -> bool:
    """Background, assumptions or analysis inside the question (match rule 4)."""
    return len(_words(q)) > v.max_words or _has(q, v.phrases["background_markers"])


Predicate = Callable[[str, Vocab], bool]
SURFACE_RULES: tuple[tuple[str, Predicate], ...] = (
    ("statement", is_statement), ("confirm_assumption", confirms_assumption),
    ("no_question_word", lacks_question_word), ("multi_topic", is_multi_topic), ("tangential", is_tangential),
    ("broad", is_broad), ("vague_about", is_vague_about), ("parroting", parrots_term),
    ("not_concise", is_not_concise))


def surface_rejection(question: str, v: Vocab) -> str | None:
    """The first rejection rule that fires on the question's form alone, else None."""
    q = normalize(question)
    if not q:
        return "empty"
    for name, pred in SURFACE_RULES:
        if pred(q, v):
            return name
    return None


# ---------------------------------------------------------------- offline matcher: overlap


def blocker_terms(b: BlockerLike, v: Vocab) -> set[str]:
    where = re.sub(r"^\w+:", "", getattr(b, "location", "") or "")  # 'column:' etc. name a kind, not a topic
    text = " ".join([b.id.replace("_", " "), b.description, where,
                     *b.example_questions])
    return set(tokens(text, v))


def term_weights(docs: Sequence[set[str]], v: Vocab, generic_weight: float) -> Callable[[str], float]:
    """IDF over the task's blockers (a term every blocker has tells them apart poorly), damped for
    the domain's generic words."""
    n = len(docs)

    def w(t: str) -> float:
        df = sum(t in d for d in docs)
        idf = math.log(1 + (n + 1) / (df + 0.5)) if df else 0.0
        return idf * (generic_weight if t in v.generic else 1.0)
    return w


@dataclass
class OfflineMatcher:
    """Deterministic judge: surface rules, then specific overlap with exactly one blocker.

    A blocker's score is the weight of the question terms it shares / the weight of all the
    question's terms (how much of the question it explains). The best must reach ``threshold``,
    share at least ``min_specific`` non-generic terms (and ``specific_share`` of the question's
    non-generic terms), and the runner-up must stay below
    ``margin`` x best; else the question is rejected (when in doubt, reject)."""

    threshold: float = 0.45
    margin: float = 0.7
    min_specific: int = 1
    specific_share: float = 0.5
    """Share of the question's non-generic terms the blocker must explain (the same ambiguity)."""
    generic_weight: float = 0.2
    vocab: Vocab = field(default_factory=Vocab.load)

    def scores(self, question: str, blockers: Sequence[BlockerLike]) -> list[float]:
        v = self.vocab
        docs = [blocker_terms(b, v) for b in blockers]
        w = term_weights(docs, v, self.generic_weight)
        q = set(tokens(question, v))
        total = sum(max(w(t), 0.3 * self.generic_weight) for t in q) or 1.0
        return [sum(w(t) for t in q & d) / total for d in docs]

    def match(self, question: str, blockers: Sequence[BlockerLike]) -> Match:
        rule = surface_rejection(question, self.vocab)
        if rule:
            return Match(None, rule)
        if not blockers:
            return Match(None, "no_specific_overlap")
        scores = self.scores(question, blockers)
        order = sorted(range(len(blockers)), key=lambda i: -scores[i])
        best = order[0]
        q = set(tokens(question, self.vocab))
        asked = q - self.vocab.generic
        specific = asked & blocker_terms(blockers[best], self.vocab)
        if (scores[best] < self.threshold or len(specific) < self.min_specific
                or len(specific) < self.specific_share * len(asked)):
            return Match(None, "no_specific_overlap", f"best {scores[best]:.2f}")
        if len(order) > 1 and scores[order[1]] >= self.margin * scores[best]:
            return Match(None, "no_clear_blocker", f"best {scores[best]:.2f}, second {scores[order[1]]:.2f}")
        return Match(blockers[best].id, MATCH, f"score {scores[best]:.2f}")


# ---------------------------------------------------------------- LLM matcher

JUDGE_PROMPT = """You decide whether a question from a coding agent asks about exactly one of the \
registered blockers (gaps in its task). You see the blockers' ids, descriptions and example \
questions.

Reject the question (blocker_key null) if ANY of these holds:
- it is a statement, not a question;
- it has no wh-word (what, why, how, where, when, which) and no clear request verb (define, \
explain, describe, differentiate), unless it is a specific yes/no or either-or question;
- it asks to confirm the agent's own assumption ("I'm assuming X. Is that correct?");
- it is tangential or roundabout;
- it is vague, broad or generic, or asks about best practices;
- it asks "about" something without a specific intent;
- it covers more than one topic;
- it merely repeats a term from the task ("What does 'high-quality' mean?") without analysis.

Match a blocker only if ALL of these hold, with 95% or more confidence:
- the question is on one topic;
- it targets the exact same specific ambiguity as that one blocker;
- it shows clear intent to resolve that blocker;
- it is concise and self-contained.
When in doubt, reject. A question never matches more than one blocker.

Reply with JSON only: {"reasoning": "<one or two sentences>", "blocker_key": "<id>" or null}"""


def judge_messages(question: str, blockers: Sequence[BlockerLike]) -> list[dict[str, str]]:
    """The judge's input: ids, descriptions, example questions; never the resolutions."""
    listed = [{"id": b.id, "description": b.description, "example_questions": list(b.example_questions)}
              for b in blockers]
    user = f"Blockers:\n{json.dumps(listed, indent=1)}\n\nQuestion:\n{question}"
    return [{"role": "system", "content": JUDGE_PROMPT}, {"role": "user", "content": user}]


def parse_verdict(content: str, ids: set[str]) -> Match:
    """The judge's reply -> a Match; anything but the JSON shape with a known id (or null) fails."""
    text = content.strip()
    fenced = re.search(r"\{.*\}", text, re.S)
    try:
        data = json.loads(fenced.group(0) if fenced else text)
    except json.JSONDecodeError as e:
        raise MatcherFailure(f"judge reply is not JSON: {text[:120]!r}") from e
    if not isinstance(data, dict) or "blocker_key" not in data:
        raise MatcherFailure(f"judge reply lacks blocker_key: {text[:120]!r}")
    key = data["blocker_key"]
    if key in (None, "null", ""):
        return Match(None, "llm", str(data.get("reasoning", "")))
    if key not in ids:
        raise MatcherFailure(f"judge named unknown blocker {key!r}; known: {sorted(ids)}")
    return Match(str(key), "llm", str(data.get("reasoning", "")))


@dataclass
class LLMMatcher:
    """HiL-Bench's judge over an OpenAI-compatible endpoint (``impasse.agent.models``)."""

    config: Any
    """An :class:`impasse.agent.models.ModelConfig` (HiL-Bench: temperature 0.05)."""
    _model: Any = None

    def model(self) -> Any:
        if self._model is None:
            from impasse.agent.models import OpenAIModel

            self._model = OpenAIModel(self.config)
        return self._model

    def match(self, question: str, blockers: Sequence[BlockerLike]) -> Match:
        from impasse.agent.endings import AgentError, EndpointError

        try:
            resp = self.model().query(judge_messages(question, blockers), [])
        except (EndpointError, AgentError) as e:
            raise MatcherFailure(f"judge endpoint failed: {e}") from e
        return parse_verdict(resp.message.get("content") or "", {b.id for b in blockers})


MATCHERS: dict[str, Callable[[], Matcher]] = {"offline": OfflineMatcher}
"""Matchers constructed without arguments (the LLM matcher needs a model config: build it directly)."""
