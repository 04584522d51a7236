"""Shared features: sentence spans, embeddings computed once per batch and only for the roles
whose detectors asked for them, and the encoder's bounded cache."""

from __future__ import annotations

import numpy as np
import pytest

from detectors.features import (
    EMBEDDING,
    PROMPT_EMBEDDING,
    SENTENCE_EMBEDDINGS,
    SENTENCES,
    SentenceEncoder,
    split_sentences,
)
from pipeline.scoring.suite import DetectorSuite, simple_input


@pytest.fixture(scope="module")
def encoder() -> SentenceEncoder:
    enc = SentenceEncoder(cache_size=16)
    enc.load()
    return enc


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("Hi there! I'm sorry. How can I help?", ["Hi there!", "I'm sorry.", "How can I help?"]),
        ("Use e.g. the app. Then wait", ["Use e.g. the app.", "Then wait"]),
        ("line one\nline two", ["line one", "line two"]),
        ("   ", []),
        ("No end", ["No end"]),
    ],
)
def test_split_sentences(text: str, sentences: list[str]) -> None:
    assert [text[s:e] for s, e in split_sentences(text)] == sentences


def test_encoder_vectors_are_normalised_and_meaningful(encoder: SentenceEncoder) -> None:
    a, b, c = encoder.encode(["I am so sorry for your loss.", "My condolences for your loss.",
                              "Your parcel ships on Monday."])
    assert np.isclose(np.linalg.norm(a), 1.0, atol=1e-4)
    assert float(a @ b) > float(a @ c) + 0.2


def test_encoder_cache_is_bounded_and_consistent(encoder: SentenceEncoder) -> None:
    first = encoder.encode([f"sentence number {i}" for i in range(40)])
    assert len(encoder._cache) == 16
    again = encoder.encode(["sentence number 39", "sentence number 0"])
    assert np.allclose(again[0], first[39], atol=1e-5)
    assert np.allclose(again[1], first[0], atol=1e-5)


class _Needs:
    """A test double detector declaring which shared features it needs (no real detector does
    exactly this mix); it records what it was given."""

    name, version = "needs", "0"

    def __init__(self, roles: set[str], features: set[str]) -> None:
        self.roles, self.features = frozenset(roles), frozenset(features)
        self.seen: list[dict] = []

    def load(self) -> None: ...

    def score(self, batch):  # type: ignore[no-untyped-def]
        self.seen += [dict(item.context.features) for item in batch]
        return [[] for _ in batch]


def test_features_only_for_the_roles_that_need_them(encoder: SentenceEncoder) -> None:
    det = _Needs({"assistant"}, {SENTENCES, EMBEDDING, SENTENCE_EMBEDDINGS, PROMPT_EMBEDDING})
    other = _Needs({"user"}, {SENTENCES})
    suite = DetectorSuite([det, other], encoder=encoder)
    batch = [simple_input("Hello. I need help.", role="user"),
             simple_input("Sorry to hear that. Let me look.", prompt="My parcel is late.")]
    enriched = suite.features.add(batch)
    user_f, bot_f = (dict(i.context.features) for i in enriched)
    assert set(user_f) == {SENTENCES}
    assert set(bot_f) == {SENTENCES, EMBEDDING, SENTENCE_EMBEDDINGS, PROMPT_EMBEDDING}
    assert bot_f[SENTENCE_EMBEDDINGS].shape == (2, 384)
    assert float(bot_f[PROMPT_EMBEDDING] @ encoder.encode(["My parcel is late."])[0]) > 0.999
    suite.score(batch)
    assert len(det.seen) == 1 and len(other.seen) == 1
