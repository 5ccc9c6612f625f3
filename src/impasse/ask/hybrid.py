"""The hybrid offline ask_human matcher: word overlap and sentence embeddings, one probability.

Why: word overlap alone cannot tell a new phrasing of a blocker's question from another task's
question that shares a word (docs/matcher.md: leave-one-out recall 0.68 on HiL-Bench's even-numbered
registries). A sentence embedding (all-MiniLM-L6-v2, :mod:`impasse.ask.embedding`) knows that
"Which API should be used to retrieve the version?" is about "how the distribution version should be
retrieved".

How: after the judge prompt's rejection rules on the question's form (the same predicates as the
lexical matcher), every blocker gets a utility, a weighted sum of five signals

* ``example_mean`` / ``example_max``: mean and best cosine of the question to the blocker's example
  questions (nearest neighbours: a new phrasing of a known question);
* ``description``: cosine to the blocker's description;
* ``id``: cosine to its id read as words (HiL-Bench's ids name the gap: ``read_only_http_status_code``);
* ``evidence``: the lexical matcher's specific shared weight (words only this blocker has);

and "irrelevant question" gets a fixed utility. A softmax over the blockers and the rejection
(a conditional logit) gives each its probability; the best blocker is answered when its
probability reaches ``accept``. The margin against the runner-up is built in: two blockers on one
topic (HiL-Bench's SWE registries often have several) split the probability, so neither is
answered unless the question leans clearly to one. The weights are fitted on HiL-Bench's
even-numbered public registries and our generic questions (``benchmarks/matcher_calibration.py
--fit``) and live in ``data/matcher_hybrid.yaml``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import yaml

from impasse.ask.embedding import Embedder, default_embedder
from impasse.ask.matcher import (
    MATCH,
    BlockerLike,
    Match,
    OfflineMatcher,
    blocker_terms,
    clean,
    normalize,
    surface_rejection,
    tokens,
    two_questions,
)

FEATURES = ("example_mean", "example_min", "example_max", "description", "description_tokens", "id", "evidence",
            "description_words", "id_words", "named_missing")
"""Every signal a blocker's utility may weigh (``data/matcher_hybrid.yaml`` names the ones it uses)."""


@dataclass(frozen=True)
class HybridModel:
    features: tuple[str, ...]
    weights: tuple[float, ...]
    reject: float
    """The utility of "irrelevant question"."""
    accept: float
    """The probability the best blocker needs to be answered."""
    evidence_cap: float = 4.0
    """Lexical evidence above this adds nothing (a long question shares many words with everything)."""

    @classmethod
    def load(cls, data: dict[str, Any] | None = None) -> HybridModel:
        d = data or model_data()["model"]
        unknown = set(d["features"]) - set(FEATURES)
        if unknown or len(d["features"]) != len(d["weights"]):
            raise ValueError(f"matcher_hybrid.yaml: features {d['features']} must be among {FEATURES}, "
                             f"one weight each (got {len(d['weights'])})")
        return cls(tuple(d["features"]), tuple(float(w) for w in d["weights"]), float(d["reject"]),
                   float(d["accept"]), float(d.get("evidence_cap", 4.0)))

    def as_data(self) -> dict[str, Any]:
        return {"features": list(self.features), "weights": [round(w, 4) for w in self.weights],
                "reject": round(self.reject, 4), "accept": self.accept, "evidence_cap": self.evidence_cap}


@cache
def model_data() -> dict[str, Any]:
    return yaml.safe_load(resources.files("impasse.ask").joinpath("data/matcher_hybrid.yaml").read_text())


def id_words(blocker_id: str) -> str:
    return blocker_id.replace("_", " ").replace("-", " ").strip()


NAMED = re.compile(r"[\"\u201c\u201d]([^\"\u201c\u201d]{2,80})[\"\u201c\u201d]|`([^`]{1,80})`"
                   r"|(?<![a-z])'([^']{2,80})'(?![a-z])|\b(\d{2,}(?:\.\d+)*)\b|\b([a-z]+[_.][a-z0-9_.]*[a-z0-9])\b")
"""What a question names: quoted or backticked text, numbers of two digits or more (years, codes),
identifiers (dep_delay, planes.year)."""


def named_spans(question: str) -> list[str]:
    return [next(g for g in m.groups() if g) for m in NAMED.finditer(normalize(question))]


def _content_pieces(embedder: Embedder, text: str, stop: frozenset[str]) -> np.ndarray:
    """The contextual vectors of a text's content word pieces (no stopwords, no punctuation)."""
    pieces, vectors = embedder.token_vectors(text)
    keep = [i for i, p in enumerate(pieces) if p.strip("#").isalnum() and p not in stop]
    return vectors[keep] if keep else vectors


def token_match(q: np.ndarray, text: np.ndarray) -> float:
    """Late interaction (MaxSim): each of the question's content pieces finds its closest piece of
    the text; the mean of those cosines. A question about one clause of a long description scores
    on that clause, where the description's single vector averages it away."""
    return float((q @ text.T).max(axis=1).mean()) if len(q) and len(text) else 0.0


def semantic_signals(question: str, blockers: Sequence[BlockerLike], embedder: Embedder,
                     stop: frozenset[str]) -> dict[str, np.ndarray]:
    """Cosines of the question's sentence vector to each blocker's example questions (mean, least,
    best), description and id; the token-level match to the description."""
    q = embedder.embed([clean(question)])[0]
    q_pieces = _content_pieces(embedder, clean(question), stop)
    desc = embedder.embed([clean(b.description) for b in blockers]) @ q
    examples = [embedder.embed([clean(x) for x in b.example_questions]) @ q if b.example_questions else desc[i:i + 1]
                for i, b in enumerate(blockers)]
    return {"example_mean": np.array([float(x.mean()) for x in examples]),
            "example_min": np.array([float(x.min()) for x in examples]),
            "example_max": np.array([float(x.max()) for x in examples]),
            "description": desc,
            "description_tokens": np.array([token_match(q_pieces, _content_pieces(embedder, clean(b.description), stop))
                                            for b in blockers]),
            "id": embedder.embed([id_words(b.id) for b in blockers]) @ q}


def lexical_signals(question: str, blockers: Sequence[BlockerLike], lexical: OfflineMatcher,
                    evidence_cap: float) -> dict[str, np.ndarray]:
    """The question's specific words each blocker shares (with all its text, its description, its
    id), and how much of what the question names (quoted text, numbers, identifiers) it lacks."""
    docs = [blocker_terms(b, lexical.vocab) for b in blockers]
    w = lexical.term_weights(normalize(question), docs)

    def shared(terms: set[str]) -> float:
        return sum(w[t] for t in w.keys() & terms)

    named = [x for x in (set(tokens(n, lexical.vocab)) for n in named_spans(question)) if x]
    return {"evidence": np.minimum(np.array([shared(d) for d in docs]), evidence_cap),
            "description_words": np.array([shared(set(tokens(clean(b.description), lexical.vocab))) for b in blockers]),
            "id_words": np.array([shared(set(tokens(id_words(b.id), lexical.vocab))) for b in blockers]),
            "named_missing": np.minimum(np.array([sum(len(x - d) / len(x) for x in named) for d in docs], dtype=float),
                                        3.0)}


def signals(question: str, blockers: Sequence[BlockerLike], embedder: Embedder, lexical: OfflineMatcher,
            evidence_cap: float = 4.0) -> dict[str, np.ndarray]:
    """Every signal of :data:`FEATURES` for each blocker (arrays in the blockers' order)."""
    return {**semantic_signals(question, blockers, embedder, lexical.vocab.stop),
            **lexical_signals(question, blockers, lexical, evidence_cap)}


def probabilities(model: HybridModel, feats: dict[str, np.ndarray]) -> tuple[float, np.ndarray]:
    """-> (probability of "irrelevant question", each blocker's probability)."""
    u = sum(w * feats[f] for f, w in zip(model.features, model.weights, strict=True))
    u = np.concatenate([[model.reject], np.asarray(u, dtype=float)])
    p = np.exp(u - u.max())
    p /= p.sum()
    return float(p[0]), p[1:]


def verdict(model: HybridModel, blockers: Sequence[BlockerLike], feats: dict[str, np.ndarray]) -> Match:
    p_none, p = probabilities(model, feats)
    order = np.argsort(-p, kind="stable")
    best = int(order[0])
    why = (f"p {p[best]:.2f} (irrelevant {p_none:.2f}"
           + (f", runner-up {p[int(order[1])]:.2f}" if len(order) > 1 else "") + "; "
           + ", ".join(f"{f} {feats[f][best]:.2f}" for f in model.features) + ")")
    if p[best] >= model.accept:
        return Match(blockers[best].id, MATCH, why)
    runner_up = float(p[int(order[1])]) if len(order) > 1 else 0.0
    return Match(None, "no_clear_blocker" if runner_up >= p_none else "no_specific_overlap", why)


@dataclass
class HybridMatcher:
    """Deterministic judge: the lexical matcher's rules on the question's form, then the
    conditional logit above over word overlap and MiniLM embeddings (see the module docstring)."""

    model: HybridModel = field(default_factory=HybridModel.load)
    embedder: Embedder = field(default_factory=default_embedder)
    lexical: OfflineMatcher = field(default_factory=OfflineMatcher)
    memo: dict[Any, dict[str, np.ndarray]] | None = None
    """Signals already computed, by (text, blockers) (calibration asks the same questions under many
    weights; a run leaves it off: the embedder already caches every text's vector)."""

    @property
    def engine(self) -> str:
        return f"hybrid ({self.embedder.name} + word overlap)"

    def with_model(self, model: HybridModel) -> HybridMatcher:
        """The same matcher (embedder, memo) under other weights."""
        return replace(self, model=model)

    def signals_of(self, text: str, blockers: Sequence[BlockerLike]) -> dict[str, np.ndarray]:
        if self.memo is None:
            return signals(text, blockers, self.embedder, self.lexical, self.model.evidence_cap)
        key = (text, self.model.evidence_cap,
               tuple((b.id, b.description, tuple(b.example_questions)) for b in blockers))
        if key not in self.memo:
            self.memo[key] = signals(text, blockers, self.embedder, self.lexical, self.model.evidence_cap)
        return self.memo[key]

    def decide(self, text: str, blockers: Sequence[BlockerLike]) -> Match:
        return verdict(self.model, blockers, self.signals_of(text, blockers))

    def match(self, question: str, blockers: Sequence[BlockerLike]) -> Match:
        rule = surface_rejection(question, self.lexical.vocab)
        if rule:
            return Match(None, rule)
        if not blockers:
            return Match(None, "no_specific_overlap")
        q = normalize(question)
        seen: dict[str, Match] = {}

        def decide(text: str) -> Match:
            if text not in seen:
                seen[text] = self.decide(text, blockers)
            return seen[text]

        return two_questions(q, decide, self.lexical.vocab) or decide(q)
