"""The transformers backend on a tiny randomly initialised BERT the test builds in a tmp dir:
local loading, label mapping, vocabulary check, batching, and chunk-and-pool of long replies."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from detectors.base import DetectorError
from detectors.empathy import EmpathyDetector
from detectors.empathy.backend import TransformersMechanisms, mechanism_columns
from pipeline.scoring.suite import score_texts, simple_input

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

_TEXT = (
    "i am so sorry for your loss that must be hard how are you holding up what "
    "happened do want to talk about it my dad died on sunday keep crying and don't "
    "know the of a in is was it this he she we they me mine our us feel feeling sad "
    "angry happy scared tired help please thanks yes no ok okay here there when why "
    "who where can will would could should try sleep walk call friend family mom work "
    "job home day night time today tomorrow good bad very really just too"
)
WORDS = _TEXT.split()


def build_model(path: Path, labels: dict[int, str], extra_vocab: int = 0) -> Path:
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = specials + sorted(set(WORDS)) + [".", ",", "?", "!", "'"]
    tok = transformers.BertTokenizer(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True)
    tok.save_pretrained(path)
    config = transformers.BertConfig(
        vocab_size=len(vocab) - extra_vocab,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=len(labels),
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
        problem_type="multi_label_classification",
    )
    torch.manual_seed(0)
    transformers.BertForSequenceClassification(config).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    return build_model(tmp_path_factory.mktemp("empathy_bert"), {0: "ex", 1: "er", 2: "ip"})


@pytest.fixture(scope="module")
def backend(model_dir) -> TransformersMechanisms:
    b = TransformersMechanisms(str(model_dir), batch_size=2, max_length=32)
    b.load()
    return b


def test_label_mapping_by_name() -> None:
    assert mechanism_columns({0: "ex", 1: "er", 2: "ip"}) == [1, 2, 0]
    assert mechanism_columns(
        {0: "Emotional_Reactions", 1: "interpretations", 2: "explorations"}
    ) == [0, 1, 2]
    with pytest.raises(DetectorError):
        mechanism_columns({0: "LABEL_0", 1: "LABEL_1"})


def test_scores_are_the_models_sigmoids(backend, model_dir) -> None:
    out = backend.predict(["my dad died"], ["i am so sorry . how are you ?"])
    tok = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    with torch.inference_mode():
        logits = model(
            **tok("my dad died", "i am so sorry . how are you ?", return_tensors="pt")
        ).logits
    want = torch.sigmoid(logits)[0, [1, 2, 0]].numpy()
    np.testing.assert_allclose(out[0], want, atol=1e-5)


def test_long_reply_is_chunked_and_max_pooled(backend) -> None:
    long_reply = " ".join(["i am so sorry for your loss"] * 30)  # ~210 tokens >> max_length 32
    enc = backend._chunks(["sad"], [long_reply])
    n_chunks = len(enc["input_ids"])
    assert n_chunks > 3
    owner = enc.pop("overflow_to_sample_mapping")
    with torch.inference_mode():
        probs = torch.sigmoid(backend._model(**enc).logits).numpy()[:, backend._cols]
    assert set(owner.tolist()) == {0}
    np.testing.assert_allclose(
        backend.predict(["sad"], [long_reply])[0], probs.max(axis=0), atol=1e-5
    )


def test_batches_keep_input_order(backend) -> None:
    replies = ["ok", "i am so sorry", "what happened ?", " ".join(["help"] * 80), "thanks"]
    together = backend.predict(["x"] * 5, replies)
    alone = np.stack([backend.predict(["x"], [r])[0] for r in replies])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_detector_uses_backend_scores(model_dir) -> None:
    det = EmpathyDetector(backend="transformers", model_dir=str(model_dir), max_length=32)
    det.load()
    (found,) = score_texts(
        det, [simple_input("i am so sorry . how are you ?", prompt="my dad died")]
    )
    by = {f.label: f for f in found}
    want = det._transformer.predict(["my dad died"], ["i am so sorry . how are you ?"])[0]
    assert [by[f"empathy.{m}"].score for m in ("er", "ip", "ex")] == pytest.approx(want, abs=1e-4)
    assert by["empathy.score"].evidence["backend"] == "transformers"
    assert det.version.endswith("+transformers")


def test_vocab_mismatch_is_rejected(tmp_path) -> None:
    bad = build_model(tmp_path, {0: "er", 1: "ip", 2: "ex"}, extra_vocab=20)
    with pytest.raises(DetectorError, match="tokenizer"):
        TransformersMechanisms(str(bad)).load()


def test_missing_model_dir_is_rejected(tmp_path) -> None:
    with pytest.raises(DetectorError, match="config.json"):
        TransformersMechanisms(str(tmp_path)).load()


def test_onnx_int8_runtime_agrees_with_torch(model_dir, backend, tmp_path) -> None:
    """The same tiny model exported to int8 ONNX (cached in a temp dir): scores close to the
    torch ones, long replies chunked and pooled the same way, and the version says int8."""
    prompts = ["my dad died", "sad", "x"]
    replies = ["i am so sorry . how are you ?", " ".join(["i am so sorry for your loss"] * 30),
               "thanks"]
    onnx = TransformersMechanisms(str(model_dir), batch_size=2, max_length=32,
                                  runtime="onnx-int8", cache_dir=str(tmp_path))
    onnx.load()
    assert onnx._model is None and list(tmp_path.glob("*.int8.onnx"))
    got, want = onnx.predict(prompts, replies), backend.predict(prompts, replies)
    assert got.shape == want.shape == (3, 3)
    np.testing.assert_allclose(got, want, atol=0.03)
    det = EmpathyDetector(backend="transformers", model_dir=str(model_dir), max_length=32,
                          runtime="onnx-int8")
    assert det.version.endswith("+transformers+int8")
    with pytest.raises(DetectorError, match="runtime"):
        TransformersMechanisms(str(model_dir), runtime="tensorrt")
