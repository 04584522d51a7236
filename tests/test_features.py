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


AHEAD_TEXTS = ["My parcel never came.", "Sorry about that. I will check the tracking now.",
               "It was due on Monday", "Thanks"]


@pytest.fixture(scope="module")
def int8() -> SentenceEncoder:
    enc = SentenceEncoder(backend="onnx-int8", cache_size=0)
    enc.load()
    return enc


def _counting(enc: SentenceEncoder, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    run = enc._hidden_onnx

    def counted(ids: np.ndarray) -> np.ndarray:
        calls.append(ids.shape[1])
        return run(ids)

    monkeypatch.setattr(enc, "_hidden_onnx", counted)
    return calls


def test_passes_made_ahead_are_used_and_are_the_same_bits(
        int8: SentenceEncoder, monkeypatch: pytest.MonkeyPatch) -> None:
    """``ahead`` encodes the next batch on its own thread; the batch then takes those passes
    (no model call of its own) and gets the very vectors and token states it would compute."""
    texts, state_texts = AHEAD_TEXTS[1:], AHEAD_TEXTS[:2]
    want_vecs, want_states = int8.encode_with_states(texts, state_texts)
    calls = _counting(int8, monkeypatch)
    int8.ahead(lambda: (texts, state_texts))
    assert int8._ahead_job is not None
    int8._ahead_job[1].result()  # let it finish: every pass is then made ahead
    made = len(calls)
    assert made == len(set(texts) | set(state_texts))
    vecs, states = int8.encode_with_states(texts, state_texts, ahead=True)
    assert len(calls) == made  # nothing computed again
    assert np.array_equal(vecs, want_vecs)
    for got, want in zip(states, want_states, strict=True):
        assert np.array_equal(got.states, want.states)
        assert np.array_equal(got.offsets, want.offsets)
    assert int8._ahead_job is None


def test_a_batch_that_comes_early_stops_the_ahead_thread_and_computes_the_rest(
        int8: SentenceEncoder, monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch arrives before the ahead thread has begun: the thread stops before its first
    text, the batch computes everything itself, and the texts the ahead list named but the
    batch did not ask for are dropped."""
    import threading

    want = int8.encode(AHEAD_TEXTS[:2])
    calls = _counting(int8, monkeypatch)
    release = threading.Event()

    def slow() -> tuple[list[str], list[str]]:
        release.wait(10)
        return ["an unrelated text nobody asks for", *AHEAD_TEXTS[:2]], []

    int8.ahead(slow)
    threading.Timer(0.2, release.set).start()
    vecs, _ = int8.encode_with_states(AHEAD_TEXTS[:2], (), ahead=True)
    assert np.array_equal(vecs, want)
    assert len(calls) == 2  # the batch's own two passes; the ahead thread stopped first


def test_ahead_that_fails_costs_only_time(int8: SentenceEncoder,
                                          caplog: pytest.LogCaptureFixture) -> None:
    want = int8.encode(AHEAD_TEXTS)

    def broken() -> tuple[list[str], list[str]]:
        raise ValueError("a record the ahead thread could not read")

    int8.ahead(broken)
    vecs, _ = int8.encode_with_states(AHEAD_TEXTS, (), ahead=True)
    assert np.array_equal(vecs, want)
    assert "encoding ahead failed" in caplog.text


def test_ahead_encodes_what_the_detectors_of_each_role_want(int8: SentenceEncoder) -> None:
    det = _Needs({"assistant"}, {SENTENCES, EMBEDDING, SENTENCE_EMBEDDINGS})
    suite = DetectorSuite([det, _Needs({"user"}, {SENTENCES})], encoder=int8)
    suite.features.ahead(lambda: [("user", "a user text"), ("assistant", "One. Two.")])
    assert int8._ahead_job is not None
    vecs, states = int8._ahead_job[1].result()
    int8._settle_ahead()
    assert set(vecs) == {"One. Two.", "One.", "Two."}  # the user's turn: sentences only
    assert states == {}
