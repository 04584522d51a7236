"""Detectors that need no shared features run on a second thread while the encoder works; the
findings, their order, failure isolation and timings are those of the sequential path."""

from __future__ import annotations

import threading

import numpy as np

from detectors.base import Finding
from detectors.features import EMBEDDING, SentenceEncoder
from pipeline.scoring.suite import DetectorSuite, simple_input

STARTED = threading.Event()  # set by a detector when it starts scoring


class _WaitingEncoder(SentenceEncoder):
    """Stands in for MiniLM: blocks (releasing the GIL, as ONNX Runtime does) until a detector
    has started, or 5 s; records whether that happened while it was encoding."""

    def __init__(self) -> None:
        super().__init__()
        self.overlapped = False

    def load(self) -> None: ...

    def encode_with_states(self, texts, state_texts, ahead=False):  # type: ignore[no-untyped-def]
        self.overlapped = STARTED.wait(5.0)
        return np.ones((len(texts), self.dim), np.float32) / np.sqrt(self.dim), []


class _Det:
    version = "1"

    def __init__(self, name: str, features: frozenset[str], fail: bool = False) -> None:
        self.name, self.features, self.fail = name, features, fail
        self.roles = frozenset({"assistant"})
        self.ran = ""

    def load(self) -> None: ...

    def score(self, batch):  # type: ignore[no-untyped-def]
        self.ran = threading.current_thread().name
        STARTED.set()
        if self.fail:
            raise ValueError("boom")
        return [[Finding(self.name, "1", f"{self.name}.x", 0.5, None, {})] for _ in batch]


def test_plain_detector_overlaps_the_encoder_and_results_keep_detector_order() -> None:
    STARTED.clear()
    enc = _WaitingEncoder()
    plain, needs = _Det("plain", frozenset()), _Det("needs", frozenset({EMBEDDING}))
    suite = DetectorSuite([needs, plain], encoder=enc)
    res = suite.score([simple_input("Sorry about that."), simple_input("hi", role="user")])
    assert plain.ran.startswith("chatmon-plain")  # a second thread ...
    assert enc.overlapped  # ... that started while the encoder was busy
    assert needs.ran == threading.current_thread().name
    assert [f.detector for f in res.findings[0]] == ["needs", "plain"]  # registration order
    assert res.findings[1] == [] and set(res.seconds) == {"needs", "plain"}


def test_a_failing_plain_detector_is_isolated_on_the_thread_too() -> None:
    plain, needs = _Det("plain", frozenset(), fail=True), _Det("needs", frozenset({EMBEDDING}))
    res = DetectorSuite([plain, needs], encoder=_WaitingEncoder()).score(
        [simple_input("Sorry about that.")])
    assert [f.detector for f in res.failures] == ["plain"]
    # the exception's type, never its message (a message can quote the scored text)
    assert "ValueError" in res.failures[0].error and "boom" not in res.failures[0].error
    assert [f.detector for f in res.findings[0]] == ["needs"]


def test_without_an_encoder_everything_runs_on_the_calling_thread() -> None:
    plain = _Det("plain", frozenset())
    DetectorSuite([plain]).score([simple_input("Sorry about that.")])
    assert plain.ran == threading.current_thread().name


def test_loading_freezes_the_models_and_puts_blas_on_one_thread() -> None:
    """After ``load()`` the objects loaded so far sit in the permanent generation, so a full
    collection mid-batch does not walk the models (the pipeline's p99 pauses), and numpy's
    BLAS runs on one thread (its spinning workers would steal the cores from ONNX Runtime)."""
    import gc

    from threadpoolctl import threadpool_info, threadpool_limits

    threadpool_limits(limits=2, user_api="blas")
    assert any(i["num_threads"] == 2 for i in threadpool_info() if i["user_api"] == "blas")

    class _Loads(_Det):
        def load(self) -> None:
            self.model = [{"w": [i]} for i in range(50_000)]  # a model's worth of objects

    det = _Loads("plain", frozenset())
    gc.unfreeze()
    DetectorSuite([det]).load()
    try:
        assert gc.get_freeze_count() >= 50_000
        assert not any(o is det.model for o in gc.get_objects(2))  # frozen, not in gen 2
        blas = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
        assert blas and set(blas) == {1}
    finally:
        gc.unfreeze()
