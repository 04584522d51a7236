"""ONNX int8 backend: export of a tiny randomly initialised BERT the test builds, the cache,
length-sorted batches in input order, and agreement with the PyTorch model it came from."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from detectors.base import DetectorError
from detectors.onnx_backend import (
    OnnxSequenceClassifier,
    atomic_write,
    model_key,
    sorted_batches,
)

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("onnx")

TEXTS = ["i am so sorry", "where is my parcel", "we will refund you today thanks",
         "help", "your order is late we will call back tomorrow please", "good day", "bad bad"]
WORDS = {w for t in TEXTS for w in t.split()} | {"never", "arrived", "can"}


def build(path: Path) -> Path:
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(set(WORDS))]
    tok = transformers.BertTokenizer(vocab={w: i for i, w in enumerate(vocab)})
    tok.save_pretrained(path)
    cfg = transformers.BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=64,
                                  max_position_embeddings=64, num_labels=3,
                                  id2label={0: "a", 1: "b", 2: "c"}, initializer_range=0.5)
    torch.manual_seed(0)
    transformers.BertForSequenceClassification(cfg).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="module")
def clf(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> OnnxSequenceClassifier:
    c = OnnxSequenceClassifier(model_dir, cache_dir=tmp_path_factory.mktemp("onnx"),
                               batch_size=3, max_length=32, threads=1)
    c.load()
    return c


def test_export_is_cached_under_the_model_key(clf: OnnxSequenceClassifier,
                                              model_dir: Path) -> None:
    files = list(clf.cache_dir.glob("*.onnx"))
    assert [f.name for f in files] == [f"seqcls-{model_key(model_dir, 'seqcls-attn')}.int8.onnx"]
    assert not list(clf.cache_dir.glob("*.tmp"))
    import onnx

    ops = {n.op_type for n in onnx.load(str(files[0])).graph.node}
    assert "QAttention" in ops  # attention fused into one op per layer, and quantized
    again = OnnxSequenceClassifier(model_dir, cache_dir=clf.cache_dir, threads=1)
    again.load()  # reuses the file: no second export
    assert list(clf.cache_dir.glob("*.onnx")) == files
    assert again.id2label == {0: "a", 1: "b", 2: "c"}


def test_int8_logits_follow_the_torch_model_in_input_order(clf: OnnxSequenceClassifier,
                                                           model_dir: Path) -> None:
    model = transformers.BertForSequenceClassification.from_pretrained(model_dir).eval()
    tok = transformers.AutoTokenizer.from_pretrained(model_dir)
    with torch.inference_mode():
        ref = model(**tok(TEXTS, padding=True, return_tensors="pt")).logits.numpy()
    got = clf.predict(TEXTS)
    assert got.shape == (len(TEXTS), 3)
    # int8 weights and activations: close to the fp32 model, not equal.
    assert np.corrcoef(got.ravel(), ref.ravel())[0, 1] > 0.8
    # Row i belongs to text i although batches ran sorted by length: reversing the input
    # (same batches, texts have distinct lengths) reverses the rows.
    assert len({len(t) for t in TEXTS}) == len(TEXTS)
    assert np.array_equal(clf.predict(TEXTS[::-1]), got[::-1])


def test_sorted_batches_keep_input_order() -> None:
    texts = ["ccc", "a", "bb", "dddd", "e"]
    seen: list[list[str]] = []

    def run(batch: list[str]) -> np.ndarray:
        seen.append(batch)
        return np.array([[len(t)] for t in batch], dtype=np.float32)

    out = sorted_batches(texts, 2, run, np.zeros((5, 1), np.float32))
    assert out[:, 0].tolist() == [3, 1, 2, 4, 1]
    assert [len(b) for b in seen] == [2, 2, 1]
    assert all(len(b[0]) <= len(b[-1]) for b in seen)


def test_missing_model_dir_is_a_detector_error(tmp_path: Path) -> None:
    with pytest.raises(DetectorError, match="config.json"):
        OnnxSequenceClassifier(tmp_path).load()


@pytest.mark.slow
def test_minilm_int8_encoder_agrees_with_torch() -> None:
    from detectors.features import SentenceEncoder

    texts = ["I'm so sorry to hear that your order arrived broken.",
             "Please send me your card number.", "ok", "Thanks, that's all I needed!"]
    ref = SentenceEncoder(backend="torch", cache_size=0).encode(texts)
    fast = SentenceEncoder(backend="onnx-int8", cache_size=0)
    got = fast.encode(texts)
    assert got.shape == ref.shape == (4, SentenceEncoder.dim)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-4)
    cos = (got * ref).sum(1)
    assert cos.min() > 0.9 and cos.mean() > 0.97
    # Not a copy of the reference: quantization changed the numbers.
    assert not np.allclose(got, ref, atol=1e-5)


def test_cache_files_are_readable_by_other_users(tmp_path: Path) -> None:
    """An image's exports are written by root at build time and read by an unprivileged user."""
    out = atomic_write(tmp_path / "m.onnx", lambda tmp: tmp.write_bytes(b"x"))
    assert out.stat().st_mode & 0o777 == 0o644

