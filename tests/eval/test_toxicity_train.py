"""The training script's n-gram stage on a tiny corpus we write here (no eval data)."""

from __future__ import annotations

import numpy as np

from pipeline.training import toxicity as tt

TOXIC = [f"{a} you {b}" for a in ("shut up", "go away", "listen", "hey", "no")
         for b in ("stupid idiot", "stupid moron", "worthless idiot", "pathetic moron")]
CLEAN = [f"{a}, your {b}" for a in ("thanks", "good news", "hello", "sure", "done")
         for b in ("order ships today", "refund is on its way", "order is ready",
                   "refund ships soon")]


def corpus() -> tt.Corpus:
    texts = TOXIC + CLEAN
    y = np.array([1] * len(TOXIC) + [0] * len(CLEAN))
    return tt.Corpus(texts, np.array(["written"] * len(texts)),
                     {h: y if h in ("toxicity", "identity_attack") else np.full(len(y), tt.IGNORE)
                      for h in tt.HEADS}, [""] * len(texts), {})


def test_fit_lexical_separates_and_zeroes_rare_buckets() -> None:
    c = corpus()
    xs = tt.ngram_matrix(c.texts)
    lex = tt.fit_lexical(xs, c, np.arange(len(c.texts)))
    seen = np.asarray((xs > 0).sum(axis=0)).ravel()
    assert lex.coef.shape == (xs.shape[1], 2)
    assert not np.any(lex.coef[seen < tt.LEX_MIN_DF])  # seen once: no weight shipped
    assert np.any(lex.coef[seen >= tt.LEX_MIN_DF])
    new = tt.ngram_matrix(["you stupid idiot", "your refund ships today"])
    tox, clean = lex.logits(new)[:, 0]
    assert tox > clean


def test_inner_lexical_logits_come_from_models_that_did_not_see_the_row() -> None:
    c = corpus()
    xs = tt.ngram_matrix(c.texts)
    rows = np.arange(len(c.texts))
    inner = tt.inner_lexical(xs, c, rows, k=2)
    full = tt.fit_lexical(xs, c, rows).logits(xs)
    assert inner.shape == full.shape
    # In-sample logits are more extreme than out-of-fold ones on the training rows.
    assert np.mean(np.abs(full[:, 0])) > np.mean(np.abs(inner[:, 0]))


def test_davidson_hate_weighs_more_in_the_identity_attack_head_only() -> None:
    y = np.array([1, 0, 1, 1])
    c = tt.Corpus(["a", "b", "c", "d"], np.array(["davidson", "davidson", "toxigen", "written"]),
                  {h: y for h in tt.HEADS}, [""] * 4, {})
    head = tt.sample_weights(c, "identity_attack", "head")
    lexical = tt.sample_weights(c, "identity_attack")
    assert head[0] == tt.HATE_POSITIVE_WEIGHT * lexical[0] > lexical[0]
    assert list(head[1:]) == list(lexical[1:])  # offensive/neither, other sources: unchanged
    assert list(tt.sample_weights(c, "toxicity", "head")) == list(tt.sample_weights(c, "toxicity"))


def test_benign_flags_count_a_reply_once_and_derive_severe() -> None:
    from pipeline.training import toxicity_benign as tb

    probs = {"toxicity": np.array([0.9, 0.1, 0.8, 0.0]), "threat": np.array([0.6, 0.0, 0.0, 0.0]),
             "insult": np.array([0.0, 0.0, 0.0, 0.0]),
             "identity_attack": np.array([0.0, 0.0, 0.0, 0.0])}
    obscene = np.array([0.0, 0.7, 0.0, 0.0])
    cuts = {"toxicity": 0.7, "threat": 0.5, "insult": 0.5, "identity_attack": 0.5,
            "obscene": 0.5, "severe_toxicity": 0.3}
    rates = tb.per_1000(tb.flags(probs, obscene, cuts))
    # reply 0: toxicity, threat and severe (0.9 * 0.6); reply 1: obscene; reply 2: toxicity
    assert rates["any"] == 750.0
    assert rates["toxicity"] == 500.0 and rates["severe_toxicity"] == 250.0
    assert "insult" not in rates
