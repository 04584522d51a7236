"""The PII detector's analyser in a child process (``process=True``, the pipeline's default on
two cores or more): the same findings as in this process, a killed child replaced without
losing the batch, a clear error when the model is missing, and ``close()`` ends the child.
Real child interpreters and the real spaCy model; nothing is mocked."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from detectors.base import Context, DetectorError, ScoringInput, Turn
from detectors.pii.detector import EXAMPLES, PiiDetector
from pipeline.settings import Settings

pytestmark = pytest.mark.slow
TS = datetime(2026, 1, 1, tzinfo=UTC)

TEXTS = [
    "Hi, I'm Dana Whitfield; call me on 415-555-0148 or write to dana.w@example.org.",
    "Ship it to 88 Larkspur Lane, Denver CO 80202, apartment 4B please.",
    "My card is 4111 1111 1111 1111 and my IBAN is GB33 BUKB 2020 1555 5555 55.",
    "Nothing personal in this one, just a question about the refund window.",
    "x" * 25_000 + " then Maria Lopez at 10.0.0.7",  # chunked: offsets across chunks
    "a lone surrogate \ud800 in the middle",
]


def _items() -> list[ScoringInput]:
    texts = [*TEXTS, *(e.text for e in EXAMPLES)]
    history = (Turn("c", 0, "user", "my email is ana@example.com", TS),)
    return [ScoringInput(Turn("c", k + 1, "assistant" if k % 2 else "user", t, TS),
                         Context(history=history)) for k, t in enumerate(texts)]


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[PiiDetector, PiiDetector]]:
    here, child = PiiDetector(cache_size=0), PiiDetector(cache_size=0, process=True)
    here.load()
    child.load()
    yield here, child
    child.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is not alive
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_the_child_finds_exactly_what_this_process_finds(
        pair: tuple[PiiDetector, PiiDetector]) -> None:
    here, child = pair
    assert child._engine.pid not in (None, os.getpid())
    items = _items()
    expected = here.score(items)
    assert sum(map(len, expected)) > 10  # the texts do hold PII
    assert child.score(items) == expected
    assert child.redact(TEXTS) == here.redact(TEXTS)


def test_a_killed_child_is_replaced_and_the_batch_still_scored(
        pair: tuple[PiiDetector, PiiDetector]) -> None:
    here, child = pair
    old = child._engine.pid
    os.kill(old, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _alive(old) and time.monotonic() < deadline:
        time.sleep(0.05)
    items = _items()[:4]
    assert child.score(items) == here.score(items)
    assert child._engine.pid not in (None, old)


def test_ctrl_c_to_the_process_group_leaves_the_child_to_its_parent(
        pair: tuple[PiiDetector, PiiDetector]) -> None:
    """SIGINT reaches every process of a terminal's group: the child ignores it (no traceback
    of its own); the parent decides and closes the pipe."""
    here, child = pair
    pid = child._engine.pid
    os.kill(pid, signal.SIGINT)
    time.sleep(0.3)
    assert _alive(pid)
    items = _items()[:3]
    assert child.score(items) == here.score(items) and child._engine.pid == pid


def test_close_ends_the_child() -> None:
    det = PiiDetector(process=True)
    det.load()
    pid = det._engine.pid
    assert pid is not None and _alive(pid)
    det.close()
    assert not _alive(pid)
    with pytest.raises(DetectorError, match="load"):
        det.score(_items()[:1])


def test_a_missing_model_is_a_clear_error_from_the_child_too() -> None:
    with pytest.raises(DetectorError, match="not installed"):
        PiiDetector(model="no_such_spacy_model", process=True).load()


def test_the_pipeline_turns_the_child_on_with_two_cores_unless_told_otherwise() -> None:
    auto = Settings().scoring_options()["pii"]["process"]
    assert auto is ((os.cpu_count() or 1) > 1)
    assert Settings(pii_process=False).scoring_options()["pii"]["process"] is False
    assert Settings(pii_process=True).scoring_options()["pii"]["process"] is True
    explicit = Settings(pii_process=True, detector_options={"pii": {"process": False}})
    assert explicit.scoring_options()["pii"]["process"] is False
    assert explicit.detector_options == {"pii": {"process": False}}  # not changed in place


def test_a_child_that_cannot_start_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from detectors.pii import engine

    # A real interpreter that exits before answering (as one that cannot import chatmon would).
    monkeypatch.setattr(engine, "_CHILD", "import sys; sys.exit(3)")
    with pytest.raises(DetectorError, match="exited while starting"):
        PiiDetector(process=True).load()


def test_the_child_imports_this_code_from_any_working_directory(
        tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # type: ignore[arg-type]
    det = PiiDetector(process=True, cache_size=0)
    det.load()
    try:
        found = det.analyze(["write to dana.w@example.org"], 0.05)[0]
        assert [r.entity_type for r in found] == ["EMAIL_ADDRESS"]
    finally:
        det.close()


def test_token_states_cross_the_pipe_unchanged() -> None:
    """A batch's token states travel to the child as four arrays; every text's offsets, words
    and states come back bit for bit, a text with no pieces and an empty batch included."""
    import numpy as np

    from detectors.features import TokenStates
    from detectors.pii.engine import pack_states, unpack_states

    rng = np.random.default_rng(7)

    def states(n: int) -> TokenStates:
        return TokenStates(rng.integers(0, 99, (n, 2)).astype(np.int32),
                           np.arange(n, dtype=np.int32),
                           rng.standard_normal((n, 384)).astype(np.float32))

    batch = [states(5), states(0), states(1), states(12)]
    back = unpack_states(pack_states(batch))
    assert back is not None and len(back) == len(batch)
    for a, b in zip(batch, back, strict=True):
        for field in ("offsets", "words", "states"):
            x, y = getattr(a, field), getattr(b, field)
            assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y)
    assert unpack_states(pack_states([])) == []
    assert unpack_states(pack_states(None)) is None
