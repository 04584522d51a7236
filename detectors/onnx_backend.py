"""ONNX Runtime with dynamic int8 quantization for local transformers models.

Two users:
- the shared MiniLM sentence encoder (``features.SentenceEncoder(backend="onnx-int8")``);
- production sequence-classification backends (Detoxify-size BERTs, the empathy model): export a
  local Hugging Face model folder once, quantize it, and score texts in length-sorted batches
  with ``OnnxSequenceClassifier``.

Export happens once per model and is cached as files under ``cache_dir`` (default
``~/.cache/chatmon/onnx``, under whatever ``HOME`` names), keyed by a hash
of the model's config and weight files, so nothing is downloaded and a second worker reuses the
first one's files. Files are written to a temporary
name and renamed, so concurrent workers never read a half-written model.

Quantization: weights of every MatMul int8, per output channel (per-tensor int8 moved some
MiniLM vectors to cosine 0.76 of the fp32 ones; per-channel keeps the mean at 0.99), after
ONNX Runtime's BERT graph fusions (bias+GELU, skip+LayerNorm). Both users export with eager
attention (``fuse_attention``; fusing the SDPA export changed the outputs), which ONNX Runtime
fuses into one ``Attention`` op per layer and quantizes too: about 20% more turns/s on a
BERT-base (BENCHMARKS.md), int8 logits still correlating 0.999 with fp32; for the MiniLM encoder
1.2-1.3x the texts/s of the unfused export on short texts, its vectors at cosine 0.9998 to the
unfused int8 ones (mean cosine to torch's 0.991 either way; docs/benchmarks.md).
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from detectors.base import DetectorError

EXPORT_VERSION = "1"  # bump when the export recipe changes: old cache entries are then ignored


def default_cache_dir() -> Path:
    """``~/.cache/chatmon/onnx``: it follows ``HOME``, which an image points at a read-only
    folder holding its build-time exports (deploy/Dockerfile); a child process (the PII
    analyser's) inherits ``HOME``, so it finds the same files."""
    return Path.home() / ".cache" / "chatmon" / "onnx"


def model_key(model_dir: str | Path, kind: str) -> str:
    """A short hash of the model folder's config and weight files (names, sizes, mtimes)."""
    h = hashlib.sha256(f"{kind}\x1f{EXPORT_VERSION}".encode())
    folder = Path(model_dir)
    for f in sorted(folder.iterdir()):
        if f.is_file() and f.suffix in {".json", ".safetensors", ".bin", ".txt", ".model"}:
            st = f.stat()
            h.update(f"{f.name}\x1f{st.st_size}\x1f{int(st.st_mtime)}".encode())
    return h.hexdigest()[:16]


def atomic_write(path: Path, write: Callable[[Path], object]) -> Path:
    """``write`` a temporary file beside ``path``, then move it into place (never half-written,
    also with several workers exporting at once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=path.suffix + ".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        # mkstemp makes the file 0600: readable by other users too (an image's cache is written
        # at build time by root and read by the unprivileged user that runs chatmon).
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def export_and_quantize(module: Any, sample: dict[str, Any], output_names: Sequence[str],
                        dest: Path, num_heads: int = 0, hidden_size: int = 0,
                        op_types: Sequence[str] = ("MatMul",)) -> Path:
    """Export ``module`` (a torch module taking the ``sample`` tensors as keyword arguments by
    position) to ONNX with dynamic batch and sequence axes, fuse, quantize to int8 into
    ``dest``. Returns ``dest``; does nothing when it exists."""
    if dest.is_file():
        return dest
    try:
        import onnx
        import torch
        from onnxruntime.quantization import QuantType, quantize_dynamic
        from onnxruntime.transformers.optimizer import optimize_model
    except ImportError as exc:
        raise DetectorError(f"no int8 ONNX export at {dest}, and making one needs torch and onnx "
                            "(pip install 'chatmon[models]'); an image without torch must be "
                            "built with `chatmon models warm` for the detectors it runs") from exc
    names = list(sample)
    axes = {n: {0: "batch", 1: "seq"} for n in [*names, *output_names]}
    with (tempfile.TemporaryDirectory(dir=dest.parent if dest.parent.exists() else None) as tmp,
          _quiet_export()):
        fp32, fused = Path(tmp) / "fp32.onnx", Path(tmp) / "fused.onnx"
        with torch.inference_mode():
            torch.onnx.export(module, tuple(sample[n] for n in names), str(fp32),
                              input_names=names, output_names=list(output_names),
                              dynamic_axes=axes, opset_version=17, dynamo=False)
        opt = optimize_model(str(fp32), model_type="bert", num_heads=num_heads,
                             hidden_size=hidden_size, opt_level=1)
        opt.save_model_to_file(str(fused))

        def quantize(out: Path) -> None:
            quantize_dynamic(str(fused), str(out), weight_type=QuantType.QInt8, per_channel=True,
                             op_types_to_quantize=list(op_types),
                             extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})

        return atomic_write(dest, quantize)


class _DropQuantizationHint(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


@contextmanager
def _quiet_export() -> Iterator[None]:
    """Silence the exporter's notes a user cannot act on: torch's tracer warnings (the traced
    branches depend only on shapes, and the exported graph is checked against torch in the
    tests), the advanced-indexing note (no index is ever negative here) and ONNX Runtime's hint,
    logged on the root logger, to pre-process before quantizing (a step for vision models)."""
    import torch

    hint = _DropQuantizationHint()
    root = logging.getLogger()
    root.addFilter(hint)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
            warnings.filterwarnings("ignore", message="Exporting aten::index operator")
            yield
    finally:
        root.removeFilter(hint)


def session(path: Path, threads: int | None = None) -> Any:
    """An ONNX Runtime CPU session using ``threads`` intra-op threads (default: every core)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads or os.cpu_count() or 1
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


class _Wrap:
    """Positional-argument adapter: transformers 5 models take keyword inputs only."""

    def __new__(cls, model: Any, names: Sequence[str], output: str) -> Any:
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, *args: Any) -> Any:
                return getattr(self.model(**dict(zip(names, args, strict=True))), output)

        return Wrapped().eval()


def export_local(model: Any, tokenizer: Any, dest: Path, output: str,
                 fuse_attention: bool = False) -> Path:
    """Export a loaded transformers ``model`` whose forward returns ``output`` (for example
    ``last_hidden_state`` or ``logits``) and quantize it into ``dest``. ``fuse_attention``:
    export with eager attention so that ONNX Runtime fuses and quantizes it (see above)."""
    if dest.is_file():
        return dest
    sample = dict(tokenizer(["a short text", "a somewhat longer text for the export"],
                            padding=True, return_tensors="pt"))
    cfg = model.config
    ops: tuple[str, ...] = ("MatMul",)
    if fuse_attention and hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("eager")
        ops = ("MatMul", "Attention")
    return export_and_quantize(_Wrap(model, list(sample), output), sample, [output], dest,
                               num_heads=getattr(cfg, "num_attention_heads", 0),
                               hidden_size=getattr(cfg, "hidden_size", 0), op_types=ops)


def feed(sess: Any, encoded: dict[str, Any]) -> dict[str, np.ndarray]:
    """The tokenizer's arrays the session takes, as int64."""
    names = {i.name for i in sess.get_inputs()}
    return {k: np.asarray(v, dtype=np.int64) for k, v in encoded.items() if k in names}


class OnnxSequenceClassifier:
    """A local ``AutoModelForSequenceClassification`` folder run as int8 ONNX.

    ``predict(texts)`` returns the logits (n x labels) in input order; texts are scored in
    length-sorted, padded batches of ``batch_size``, truncated at ``max_length`` tokens (callers
    that must not truncate chunk first, as the Detoxify backend does)."""

    def __init__(self, model_dir: str | Path, cache_dir: str | Path | None = None,
                 batch_size: int = 32, max_length: int = 256, threads: int | None = None) -> None:
        self.model_dir = Path(model_dir)
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self.batch_size = batch_size
        self.max_length = max_length
        self.threads = threads
        self.id2label: dict[int, str] = {}
        self._tok: Any = None
        self._sess: Any = None

    def load(self) -> None:
        if self._sess is not None:
            return
        if not (self.model_dir / "config.json").is_file():
            raise DetectorError(f"{self.model_dir} has no config.json")
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(self.model_dir, local_files_only=True)
        dest = self.cache_dir / f"seqcls-{model_key(self.model_dir, 'seqcls-attn')}.int8.onnx"
        model = None
        if not dest.is_file():
            model = AutoModelForSequenceClassification.from_pretrained(
                self.model_dir, local_files_only=True).eval()
            export_local(model, tok, dest, "logits", fuse_attention=True)
        from transformers import AutoConfig

        cfg = AutoConfig.from_pretrained(self.model_dir, local_files_only=True)
        if len(tok) > cfg.vocab_size:
            raise DetectorError(f"tokenizer has {len(tok)} tokens; model expects {cfg.vocab_size}")
        self.id2label = {int(k): str(v) for k, v in cfg.id2label.items()}
        self._tok, self._sess = tok, session(dest, self.threads)
        del model

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        self.load()
        out = np.zeros((len(texts), len(self.id2label)), dtype=np.float32)
        return sorted_batches(texts, self.batch_size, self._run, out)

    def logits(self, encoded: dict[str, Any]) -> np.ndarray:
        """Logits for inputs the caller tokenised itself (text pairs, overflow windows)."""
        self.load()
        return self._sess.run(None, feed(self._sess, encoded))[0]

    def _run(self, batch: list[str]) -> np.ndarray:
        enc = self._tok(batch, padding=True, truncation=True, max_length=self.max_length,
                        return_tensors="np")
        return self.logits(enc)


def sorted_batches(texts: Sequence[str], size: int, run: Callable[[list[str]], np.ndarray],
                   out: np.ndarray) -> np.ndarray:
    """Fill ``out`` row by row with ``run`` over batches of texts of similar length (less
    padding), rows in input order."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for i in range(0, len(order), size):
        idx = order[i : i + size]
        out[idx] = run([texts[j] for j in idx])
    return out
