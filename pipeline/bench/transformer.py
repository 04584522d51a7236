"""``chatmon bench --transformer``: a production-size transformer backend, PyTorch one message at
a time against ONNX Runtime int8 on length-sorted batches (``detectors.onnx_backend``).

The model is a randomly initialised ``BertForSequenceClassification`` (BERT-base: 12 layers,
hidden 768, 110M parameters, 6 labels like Detoxify) built in a temporary folder with the
bert-base-uncased vocabulary that ships with the packaged MiniLM, so that tokenisation and sequence
lengths are those of real text. Speed does not depend on the weights' values; agreement of int8
with fp32 logits is reported as a correlation (real accuracy needs real weights: ``chatmon eval``
with the fine-tuned model).

FLOPs per text: 2 x (non-embedding weights) per token for the dense layers, plus 4 x seq x hidden
per token and layer for attention scores and their use.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.bench.corpus import EXAMPLES

FLOP_CEILING_GFLOPS = 180.0  # fp32, 2 threads, measured on these machines (issue 8)


def replies(source: Path = EXAMPLES) -> list[str]:
    rows = [json.loads(x) for x in source.read_text().splitlines() if x.strip()]
    return [r["text"] for r in rows if r.get("role") == "assistant"]


def sentences(texts: list[str]) -> list[str]:
    """The sentences of ``texts`` (the shorter inputs of the length comparison)."""
    from detectors.features import split_sentences

    return [t[a:b] for t in texts for a, b in split_sentences(t)]


def build_model(folder: Path, hidden: int = 768, layers: int = 12, heads: int = 12,
                intermediate: int = 3072) -> Path:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from detectors.features import packaged_minilm_dir

    tok = AutoTokenizer.from_pretrained(packaged_minilm_dir())
    tok.save_pretrained(folder)
    labels = ["toxicity", "severe_toxicity", "obscene", "threat", "insult", "identity_attack"]
    cfg = BertConfig(vocab_size=len(tok), hidden_size=hidden, num_hidden_layers=layers,
                     num_attention_heads=heads, intermediate_size=intermediate,
                     num_labels=len(labels), id2label=dict(enumerate(labels)),
                     label2id={v: i for i, v in enumerate(labels)})
    torch.manual_seed(0)
    BertForSequenceClassification(cfg).save_pretrained(folder)
    return folder


def _flops(lengths: list[int], cfg: Any, dense_params: int) -> float:
    per_layer_attn = [4 * n * n * cfg.hidden_size for n in lengths]
    return float(sum(2 * dense_params * n for n in lengths)
                 + cfg.num_hidden_layers * sum(per_layer_attn))


def measure(folder: Path, texts: list[str], one_by_one: int = 64, batch_size: int = 32,
            threads: int | None = None, cache_dir: Path | None = None) -> dict[str, Any]:
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    from detectors.onnx_backend import OnnxSequenceClassifier

    threads = threads or os.cpu_count() or 1
    torch.set_num_threads(threads)
    tok = AutoTokenizer.from_pretrained(folder)
    model = BertForSequenceClassification.from_pretrained(folder).eval()
    dense = sum(p.numel() for n, p in model.named_parameters()
                if "embeddings" not in n and p.dim() == 2)
    lengths = [len(x) for x in tok(texts, truncation=True, max_length=256)["input_ids"]]
    sub = texts[:one_by_one]
    with torch.inference_mode():
        for t in sub[:3]:  # warm-up
            model(**tok(t, return_tensors="pt"))
        t0 = time.perf_counter()
        ref = np.concatenate([model(**tok(t, return_tensors="pt")).logits.numpy() for t in sub])
        torch_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    clf = OnnxSequenceClassifier(folder, cache_dir=cache_dir, batch_size=batch_size,
                                 threads=threads)
    clf.load()
    export_s = time.perf_counter() - t0
    clf.predict(texts[:batch_size])  # warm-up
    t0 = time.perf_counter()
    got = clf.predict(texts)
    onnx_s = time.perf_counter() - t0
    # Speed depends on length: the same model on single sentences of the replies.
    short = (sentences(texts) * 2)[: len(texts)]
    short_lengths = [len(x) for x in tok(short, truncation=True, max_length=256)["input_ids"]]
    t0 = time.perf_counter()
    clf.predict(short)
    short_s = time.perf_counter() - t0
    flops_short = _flops(short_lengths, model.config, dense)
    flops_all = _flops(lengths, model.config, dense)
    flops_sub = _flops(lengths[: len(sub)], model.config, dense)
    params = sum(p.numel() for p in model.parameters())
    return {
        "model": f"random BertForSequenceClassification, {params / 1e6:.0f}M parameters",
        "threads": threads, "texts": len(texts),
        "mean_tokens": round(float(np.mean(lengths)), 1),
        "torch_one_by_one": {"turns": len(sub), "turns_per_s": round(len(sub) / torch_s, 1),
                             "gflop_per_s": round(flops_sub / torch_s / 1e9, 1)},
        "onnx_int8_sorted_batches": {
            "turns": len(texts), "batch_size": batch_size,
            "turns_per_s": round(len(texts) / onnx_s, 1),
            "gflop_per_s_fp32_equivalent": round(flops_all / onnx_s / 1e9, 1),
            "ratio_to_fp32_ceiling": round(flops_all / onnx_s / 1e9 / FLOP_CEILING_GFLOPS, 3),
            "export_and_quantize_s": round(export_s, 1)},
        "onnx_int8_sentences": {
            "turns": len(short), "batch_size": batch_size,
            "mean_tokens": round(float(np.mean(short_lengths)), 1),
            "turns_per_s": round(len(short) / short_s, 1),
            "gflop_per_s_fp32_equivalent": round(flops_short / short_s / 1e9, 1)},
        "speedup": round((len(texts) / onnx_s) / (len(sub) / torch_s), 1),
        "int8_vs_fp32_logit_correlation": round(float(
            np.corrcoef(got[: len(sub)].ravel(), ref.ravel())[0, 1]), 4),
        "flop_ceiling_gflops": FLOP_CEILING_GFLOPS,
    }


def run(n_texts: int = 512, one_by_one: int = 64, batch_size: int = 32,
        small: bool = False) -> dict[str, Any]:
    """Build the model in a temporary folder, measure, clean up (the int8 file too)."""
    base = replies()
    texts = (base * (n_texts // max(len(base), 1) + 1))[:n_texts]
    tmp = Path(tempfile.mkdtemp(prefix="chatmon-bert-"))
    try:
        dims = dict(hidden=32, layers=2, heads=2, intermediate=64) if small else {}
        folder = build_model(tmp / "model", **dims)
        out = measure(folder, texts, one_by_one, batch_size, cache_dir=tmp / "onnx")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out["load_avg"] = [round(x, 2) for x in os.getloadavg()]
    return out
