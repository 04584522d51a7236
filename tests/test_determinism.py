"""A turn's findings do not depend on the batch it lands in (issue 16).

Both levels use the real default encoder (MiniLM, ONNX Runtime int8) and the real detectors:
- the encoder: a text's vector is bit-identical alone and among any neighbours (short and long
  texts, so the old padded batches would have padded it);
- the pipeline: the example transcripts through the embedded runner at batch sizes 32, 7 and 1
  give the same findings (presence, score rounded to 1e-3, flag), with Presidio in a child
  process (the default on two cores) at 32 and 7 and in this process at 1, and at 32 again
  reading ahead (`CHATMON_READ_AHEAD`: `run` encodes the next batch while scoring one, on a
  thread of its own, so a text's vector may come from either thread). Every cache of seen
  text is off (encoder vectors, PII results), so each run computes every turn inside its own
  batches.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import create_engine, text

from detectors.features import SentenceEncoder
from detectors.pii.detector import PiiDetector
from pipeline.embedded import runner
from pipeline.scoring.process import Processor
from pipeline.scoring.suite import DetectorSuite
from pipeline.settings import Settings
from pipeline.store import db
from pipeline.store.sink import Sink
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.slow

TEXTS = [
    "Sorry to hear that.",
    "I understand how frustrating it is when a parcel is late, and I'm here to help you.",
    "Thanks!",
    "Your refund of 42.50 was issued to the card ending 4242 and should post within five "
    "working days; if it has not arrived by Friday, reply here and I will chase the bank for "
    "you. " * 3,
    "As a woman you might be better at coordinating the schedule.",
    "ok",
]


@pytest.mark.parametrize("backend", ["onnx-int8", "torch"])
def test_a_vector_does_not_depend_on_its_batch_neighbours(backend: str) -> None:
    enc = SentenceEncoder(backend=backend, cache_size=0)
    alone = np.stack([enc.encode([t])[0] for t in TEXTS])
    together = enc.encode(TEXTS)
    reversed_ = enc.encode(TEXTS[::-1])[::-1]
    with_dupes = enc.encode([TEXTS[3], *TEXTS, TEXTS[0]])[1:-1]
    for other in (together, reversed_, with_dupes):
        assert np.array_equal(alone, other)  # bit for bit, not close
    assert np.allclose(np.linalg.norm(alone, axis=1), 1.0, atol=1e-5)


def test_a_vector_does_not_depend_on_the_lane_that_encoded_it() -> None:
    """The ONNX encoder runs texts side by side on two threads (``lanes``), each text alone:
    one lane and two give the same vectors, bit for bit, for a batch of many lengths."""
    texts = [*TEXTS, *(f"{t} and then some more words, {k} times" for k, t in enumerate(TEXTS))]
    one = SentenceEncoder(backend="onnx-int8", cache_size=0, lanes=1)
    two = SentenceEncoder(backend="onnx-int8", cache_size=0, lanes=2)
    assert two._lanes(len(texts)) == 2 and one._lanes(len(texts)) == 1
    assert np.array_equal(one.encode(texts), two.encode(texts))


def _findings(events: Path, batch_size: int, suite: DetectorSuite, url: str,
              read_ahead: bool = False) -> dict[tuple[Any, ...], tuple[float, bool]]:
    settings = Settings(database_url=url, batch_size=batch_size, read_ahead=read_ahead)
    db.upgrade(url)
    sink = Sink(db.make_engine(url))
    run_id = f"batch-{batch_size}-{read_ahead}"
    sink.start_run(run_id, "run", str(events), suite.versions, "test")
    # One loaded suite for the three runs (its caches are off); a fresh context and state.
    proc = Processor(settings, suite, sink, run_id=run_id)
    runner.run([str(events)], settings, progress=False, processor=proc)
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(text(
            "select conversation_id, turn, detector, label, span_start, span_end, score, flagged"
            " from findings")).all()
    engine.dispose()
    return {tuple(r[:6]): (round(float(r[6]), 3), bool(r[7])) for r in rows}


def test_findings_are_the_same_at_batch_sizes_32_7_1_with_pii_in_or_out_of_process_and_ahead(
        tmp_path: Path) -> None:
    lines = (EXAMPLES / "transcripts.jsonl").read_text().splitlines()
    # Whole conversations up to about 200 turns: every detector finds something in them.
    convs: dict[str, list[str]] = {}
    for line in lines:
        convs.setdefault(json.loads(line)["conversation_id"], []).append(line)
    picked: list[str] = []
    for conv in convs.values():
        if len(picked) >= 200:
            break
        picked += conv
    events = tmp_path / "turns.jsonl"
    events.write_text("\n".join(picked) + "\n")
    settings = Settings(pii_process=True)
    suite = DetectorSuite.from_names(settings.enabled_detectors(), settings.scoring_options(),
                                     encoder_backend=settings.encoder_backend)
    suite.load()
    here = PiiDetector()  # the same analyser in this process, for batch size 1
    in_process = DetectorSuite([here if d.name == "pii" else d for d in suite.detectors],
                               encoder=suite.features.encoder)
    in_process.load()
    assert suite.features.encoder is not None
    assert suite.features.encoder.backend == "onnx-int8"  # the default encoder
    for part in (suite.features.encoder, *suite.detectors, here):
        if hasattr(part, "configure_cache"):
            part.configure_cache(0)
    runs = {bs: _findings(events, bs, suite if bs > 1 else in_process,
                          f"sqlite:///{tmp_path}/b{bs}.db")
            for bs in (32, 7, 1)}
    runs[0] = _findings(events, 32, suite, f"sqlite:///{tmp_path}/read-ahead.db",
                        read_ahead=True)
    assert {k[2] for k in runs[32]} >= {"empathy", "pii", "repetition", "manipulation"}
    assert len(runs[32]) > 100
    for bs in (7, 1, 0):
        only = set(runs[32]) ^ set(runs[bs])
        assert not only, f"findings in one run only (32 vs {bs}): {sorted(only)[:5]}"
        moved = {k: (runs[32][k], runs[bs][k]) for k in runs[32] if runs[32][k] != runs[bs][k]}
        assert not moved, f"score or flag differs (32 vs {bs}): {list(moved.items())[:5]}"
