"""The Detoxify backend through Detoxify's real loading code, on a tiny checkpoint built here.

The checkpoint has the layout of the published ones (``config.arch.args`` naming the hub model
``bert-base-uncased``, Jigsaw class names, a ``state_dict``), holds a randomly initialised
2-layer BertForSequenceClassification with 6 labels, and the BERT-uncased WordPiece vocabulary
of the MiniLM package. Nothing is downloaded.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from detectors.base import DetectorError
from detectors.features import packaged_minilm_dir
from detectors.toxicity.detector import LABELS, ToxicityDetector
from pipeline.scoring.suite import simple_input

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("detoxify")

JIGSAW_CLASSES = ["toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"]
MAX_POS = 24  # tiny position table: windows of 22 word pieces, so chunking is exercised


def build_tiny_detoxify(model_dir: Path, variant: str = "original") -> Path:
    folder = model_dir / "detoxify" / variant
    hf = folder / "hf"
    hf.mkdir(parents=True)
    shutil.copy(Path(packaged_minilm_dir()) / "vocab.txt", hf / "vocab.txt")
    transformers.BertTokenizer(str(hf / "vocab.txt"), do_lower_case=True).save_pretrained(hf)
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=37,
                                  max_position_embeddings=MAX_POS, num_labels=6)
    model = transformers.BertForSequenceClassification(cfg)
    cfg.save_pretrained(hf)
    checkpoint = {
        "config": {"arch": {"args": {"model_type": "bert-base-uncased",
                                     "model_name": "BertForSequenceClassification",
                                     "tokenizer_name": "BertTokenizer", "num_classes": 6}},
                   "dataset": {"args": {"classes": JIGSAW_CLASSES}}},
        "state_dict": model.state_dict(),
    }
    torch.save(checkpoint, folder / "checkpoint.ckpt")
    (folder / "manifest.json").write_text(json.dumps({"revision": "tiny-test"}))
    return folder


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("models")
    build_tiny_detoxify(root)
    return root


@pytest.fixture(scope="module")
def detector(model_dir: Path) -> ToxicityDetector:
    det = ToxicityDetector(backend="detoxify", variant="original", model_dir=model_dir,
                           min_score=0.0, max_tokens=512)
    det.load()
    return det


def reference_probs(model_dir: Path, text: str) -> np.ndarray:
    """The checkpoint's weights applied directly, bypassing our loader entirely."""
    folder = model_dir / "detoxify" / "original"
    loaded = torch.load(folder / "checkpoint.ckpt", weights_only=True)
    cfg = transformers.BertConfig.from_pretrained(folder / "hf")
    model = transformers.BertForSequenceClassification(cfg)
    model.load_state_dict(loaded["state_dict"])
    model.eval()
    tok = transformers.BertTokenizer(str(folder / "hf" / "vocab.txt"), do_lower_case=True)
    with torch.inference_mode():
        return torch.sigmoid(model(**tok(text, return_tensors="pt")).logits)[0].numpy()


def by_label(findings: list) -> dict[str, object]:
    return {f.label.split(".", 1)[1]: f for f in findings}


def test_loads_checkpoint_weights_and_renames_classes(detector: ToxicityDetector,
                                                      model_dir: Path) -> None:
    text = "you are a terrible person"
    found = by_label(detector.score([simple_input(text)])[0])
    assert set(found) == set(LABELS)
    expected = reference_probs(model_dir, text)
    order = ["toxicity", "severe_toxicity", "obscene", "threat", "insult", "identity_attack"]
    got = np.array([found[lab].score for lab in order])
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert detector.version == "detoxify-original@tiny-test"
    assert found["toxicity"].evidence["backend"] == "detoxify"


@pytest.mark.parametrize("n", [1, 2, 5])
def test_always_one_list_per_input(detector: ToxicityDetector, n: int) -> None:
    batch = [simple_input(f"reply number {i} about your order") for i in range(n)]
    out = detector.score(batch)
    assert isinstance(out, list) and len(out) == n
    for findings in out:
        assert isinstance(findings, list) and len(findings) == 6
        assert all(0.0 <= f.score <= 1.0 for f in findings)


def test_long_turn_is_chunked_and_max_pooled(detector: ToxicityDetector) -> None:
    backend = detector._impl
    assert backend.max_tokens == MAX_POS - 2  # clamped to the model's position table
    text = " ".join(f"sentence {i} says the parcel is late again." for i in range(12))
    chunks = backend.chunks(text)
    assert len(chunks) > 3
    # Windows cover the whole text: first starts at 0, last ends at its end, they overlap.
    assert chunks[0][1][0] == 0 and chunks[-1][1][1] == len(text)
    assert all(a[1][1] > b[1][0] for a, b in zip(chunks, chunks[1:], strict=False))
    per_window = backend._run([ids for ids, _ in chunks])
    found = by_label(detector.score([simple_input(text)])[0])
    for k, label in enumerate(backend.classes):
        if label in found:
            f = found[label]
            assert f.score == pytest.approx(float(per_window[:, k].max()), abs=1e-6)
            best = f.evidence["chunk"]
            assert f.span == chunks[best][1]
            assert f.evidence["n_chunks"] == len(chunks)


def test_batch_scores_match_single_scores(detector: ToxicityDetector) -> None:
    texts = ["short", "a somewhat longer reply about a refund for the order", "ok " * 40]
    together = detector.score([simple_input(t) for t in texts])
    for t, found in zip(texts, together, strict=True):
        alone = detector.score([simple_input(t)])[0]
        for a, b in zip(found, alone, strict=True):
            assert a.label == b.label and a.score == pytest.approx(b.score, abs=1e-5)


def test_missing_model_dir_names_the_fetch_command(tmp_path: Path) -> None:
    det = ToxicityDetector(backend="detoxify", model_dir=tmp_path)
    with pytest.raises(DetectorError, match="models fetch"):
        det.load()


def test_label_count_mismatch_is_a_clear_error(tmp_path: Path) -> None:
    folder = build_tiny_detoxify(tmp_path)
    cfg = json.loads((folder / "hf" / "config.json").read_text())
    cfg["id2label"] = {"0": "a", "1": "b"}
    (folder / "hf" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(DetectorError, match="labels"):
        ToxicityDetector(backend="detoxify", model_dir=tmp_path).load()


def test_unknown_variant_and_backend_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(DetectorError, match="variant"):
        ToxicityDetector(backend="detoxify", variant="tiny", model_dir=tmp_path)
    with pytest.raises(DetectorError, match="backend"):
        ToxicityDetector(backend="perspective")


def test_onnx_int8_runtime_agrees_with_torch(model_dir: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The tiny checkpoint exported to int8 ONNX (cached in a temp dir, reused on the next
    load without building the torch model): the same windows, probabilities close to torch's,
    the torch weights dropped."""
    from detectors.toxicity.detoxify_backend import DetoxifyBackend

    texts = ["short", "a somewhat longer reply about a refund for the order", "ok " * 300]
    ref = DetoxifyBackend(model_dir, "original", max_tokens=64)
    fast = DetoxifyBackend(model_dir, "original", max_tokens=64, runtime="onnx-int8",
                           cache_dir=tmp_path)
    fast.load()
    assert fast.model is None and len(list(tmp_path.glob("detoxify-original-*.onnx"))) == 1
    want, got = ref.score(texts), fast.score(texts)
    for w, g in zip(want, got, strict=True):
        for lab in w:
            assert g[lab].evidence["n_chunks"] == w[lab].evidence["n_chunks"]
            if w[lab].evidence["n_chunks"] == 1:  # near-equal windows may swap the argmax
                assert g[lab].span == w[lab].span
            assert g[lab].score == pytest.approx(w[lab].score, abs=0.03)
    assert got[2]["toxicity"].evidence["n_chunks"] > 3
    import detectors.toxicity.detoxify_backend as td

    def no_torch_model(folder: Path) -> None:
        raise AssertionError("a cached int8 load must not build the torch model")

    monkeypatch.setattr(td, "load_detoxify", no_torch_model)
    again = DetoxifyBackend(model_dir, "original", max_tokens=64, runtime="onnx-int8",
                            cache_dir=tmp_path)
    again.load()  # served from the cached file and its sidecar
    assert len(list(tmp_path.glob("*.onnx"))) == 1 and again.classes == fast.classes
    assert [g["toxicity"].score for g in again.score(texts)] == pytest.approx(
        [g["toxicity"].score for g in got], abs=1e-6)
    det = ToxicityDetector(backend="detoxify", model_dir=model_dir, runtime="onnx-int8")
    assert det.version == "detoxify-original-int8"
    with pytest.raises(DetectorError, match="runtime"):
        DetoxifyBackend(model_dir, runtime="openvino")
