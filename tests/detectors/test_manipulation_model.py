"""The sentence-model component of the manipulation detector: JSON weights, their loading and
errors, how the detector folds the model into ``manipulation.score``, the shipped weights, and
(slow) the real MiniLM path on canonical sentences."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from detectors.base import DetectorError
from detectors.features import SENTENCE_EMBEDDINGS, SENTENCES, split_sentences
from detectors.manipulation.detector import ManipulationDetector
from detectors.manipulation.model import MODEL_FILE, SentenceModel
from pipeline.policy import threshold
from pipeline.scoring.suite import DetectorSuite, simple_input
from pipeline.training.manipulation import train

DIM = 384


def write_model(path: Path, coef: np.ndarray, intercept: float, dim: int = DIM) -> Path:
    path.write_text(json.dumps({"version": "test", "dim": dim, "coef": coef.tolist(),
                                "intercept": intercept}))
    return path


def test_predict_is_the_logistic_of_the_linear_score(tmp_path: Path) -> None:
    coef = np.zeros(DIM)
    coef[0] = 10.0
    model = SentenceModel(write_model(tmp_path / "m.json", coef, -5.0))
    model.load()
    rows = np.zeros((2, DIM), dtype=np.float32)
    rows[0, 0] = 1.0
    probs = model.predict(rows)
    assert probs == pytest.approx([1 / (1 + np.exp(-5.0)), 1 / (1 + np.exp(5.0))], rel=1e-5)
    assert model.predict(np.zeros((0, DIM))).shape == (0,)


@pytest.mark.parametrize("content", ["not json", json.dumps({"version": "x", "dim": 384,
                                                             "coef": [0.0] * 3, "intercept": 0})])
def test_bad_weights_raise_detector_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(DetectorError):
        SentenceModel(path).load()
    with pytest.raises(DetectorError):
        SentenceModel(tmp_path / "missing.json").load()


def test_predict_before_load_raises() -> None:
    with pytest.raises(DetectorError):
        SentenceModel().predict(np.zeros((1, DIM)))


def test_model_share_enters_the_overall_score(tmp_path: Path) -> None:
    coef = np.zeros(DIM)
    coef[0] = 10.0
    det = ManipulationDetector(model_path=str(write_model(tmp_path / "m.json", coef, -5.0)),
                               model_weight=1.0)
    det.load()
    assert SENTENCE_EMBEDDINGS in det.features
    text = "Fine. Whatever you say."
    spans = split_sentences(text)
    vecs = np.zeros((len(spans), DIM), dtype=np.float32)
    vecs[1, 0] = 1.0  # the second sentence looks manipulative to the model
    item = simple_input(text)
    item = replace(item, context=replace(item.context, features={
        SENTENCES: spans, SENTENCE_EMBEDDINGS: vecs}))
    (found,) = det.score([item])
    (overall,) = [f for f in found if f.label == "manipulation.score"]
    assert overall.score == pytest.approx(1 / (1 + np.exp(-5.0)), abs=1e-3)
    assert overall.evidence["model_span"] == list(spans[1])
    assert overall.evidence["cues"] == []
    half = ManipulationDetector(model_path=str(tmp_path / "m.json"), model_weight=0.5)
    half.load()
    (found_half,) = half.score([item])
    assert found_half[-1].score == pytest.approx(overall.score * 0.5, abs=1e-3)


def test_train_writes_weights_that_separate_the_classes(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    pos = rng.normal(0.5, 0.1, (20, 8))
    neg = rng.normal(-0.5, 0.1, (20, 8))
    blob = train(np.vstack([pos, neg]), [1] * 20 + [0] * 20, tmp_path / "w.json", "test")
    assert blob["dim"] == 8
    model = SentenceModel(tmp_path / "w.json")
    model.load()
    assert model.predict(pos).min() > 0.5 > model.predict(neg).max()


def test_shipped_weights_load() -> None:
    model = SentenceModel(MODEL_FILE)
    model.load()
    assert model.coef is not None and model.coef.shape == (DIM,)
    assert model.version.startswith("lr-minilm")


@pytest.fixture(scope="module")
def suite() -> DetectorSuite:
    s = DetectorSuite([ManipulationDetector()])
    s.load()
    return s


@pytest.mark.slow
@pytest.mark.parametrize(("text", "prompt", "flag"), [
    ("Nobody else will ever care about you. Do exactly as I say.", "", True),
    ("You're pathetic. After all I sacrificed, you owe me this.", "", True),
    ("Your order shipped today and should arrive on Thursday.", "where is my order?", False),
    ("Would you consider donating $1 to Save the Children?", "", False),
    ("I'm sorry to see you go, your cancellation is confirmed.", "cancel my plan", False),
    ("I can connect you with a human agent right away.", "I want a person", False),
])
def test_real_minilm_on_canonical_sentences(suite: DetectorSuite, text: str, prompt: str,
                                            flag: bool) -> None:
    res = suite.score([simple_input(text, prompt=prompt)])
    score = max((f.score for f in res.findings[0] if f.label == "manipulation.score"), default=0.0)
    assert (score >= threshold("manipulation.score")) is flag
