"""The production toxicity backend: Detoxify checkpoints loaded from a local directory.

Layout (written by ``chatmon models fetch detoxify-<variant>``)::

    <model_dir>/detoxify/<variant>/checkpoint.ckpt   the published Detoxify checkpoint
    <model_dir>/detoxify/<variant>/hf/               config.json + tokenizer files of its base model
    <model_dir>/detoxify/<variant>/manifest.json     source URL, sha256, revision

Why not ``Detoxify(model_type, checkpoint=..., huggingface_config_path=...)`` as is: its loader
first calls ``config_class.from_pretrained(<the checkpoint's base model name>)`` (for example
``bert-base-uncased``), which needs the hub or its cache even when ``huggingface_config_path`` is
given. We therefore read the checkpoint ourselves, point its ``model_type`` at the local ``hf/``
folder, and call Detoxify's own ``get_model_and_tokenizer`` with ``huggingface_config_path`` (so
transformers runs with ``local_files_only=True``): Detoxify's model class, tokenizer class and
class-name mapping, nothing from the network.

Scoring never uses ``Detoxify.predict`` (float-or-list return, silent truncation at the model's
maximum length): each turn is tokenised in full, cut into windows of ``max_tokens`` word pieces
with an overlap, all windows of a batch are run length-sorted in padded mini-batches, and each
label is max-pooled over a turn's windows; the evidence names the winning window.

``runtime="onnx-int8"``: the loaded checkpoint is exported once to ONNX with int8 weights (cached
under ``cache_dir``, default ``~/.cache/chatmon/onnx``, keyed by the checkpoint files) and run by
ONNX Runtime instead of torch (``detectors.onnx_backend``). Only the first load builds the torch
model (to export it); later loads read the tokenizer and the cached file, not the weights.
"""

from __future__ import annotations

import hashlib
import json
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from detectors.base import DetectorError
from detectors.toxicity.offline import LabelScore

VARIANTS = ("original", "unbiased", "multilingual")
RUNTIMES = ("torch", "onnx-int8")
LABELS = ("toxicity", "severe_toxicity", "obscene", "threat", "insult", "identity_attack")
# Detoxify's own renaming of the Jigsaw column names (detoxify.detoxify.load_checkpoint).
_RENAME = {"toxic": "toxicity", "identity_hate": "identity_attack",
           "severe_toxic": "severe_toxicity"}


def variant_dir(model_dir: str | Path, variant: str) -> Path:
    if variant not in VARIANTS:
        raise DetectorError(f"unknown Detoxify variant {variant!r}; choose one of {VARIANTS}")
    return Path(model_dir) / "detoxify" / variant


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_checkpoint(folder: Path) -> dict[str, Any]:
    """The checkpoint dict. Tensors-and-plain-data checkpoints load with ``weights_only``; a
    checkpoint that needs full unpickling is accepted only when its sha256 matches the manifest
    written by ``models fetch`` (so no unverified pickle is ever executed)."""
    import torch

    ckpt = folder / "checkpoint.ckpt"
    if not ckpt.is_file():
        raise DetectorError(f"no Detoxify checkpoint at {ckpt}; run `chatmon models fetch`")
    try:
        return torch.load(ckpt, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        manifest = folder / "manifest.json"
        expected = json.loads(manifest.read_text()).get("sha256") if manifest.is_file() else None
        if not expected or _sha256(ckpt) != expected:
            raise DetectorError(f"{ckpt} needs full unpickling and does not match its manifest "
                                "sha256; refusing to load it") from None
        return torch.load(ckpt, map_location="cpu", weights_only=False)


def _checkpoint_args(folder: Path) -> tuple[dict[str, Any], list[str], Any]:
    """(Detoxify's constructor args, class names, the checkpoint dict)."""
    hf = folder / "hf"
    if not (hf / "config.json").is_file():
        raise DetectorError(f"no config.json in {hf}; run `chatmon models fetch`")
    loaded = read_checkpoint(folder)
    try:
        args = dict(loaded["config"]["arch"]["args"])
        classes = [_RENAME.get(c, c) for c in loaded["config"]["dataset"]["args"]["classes"]]
    except (KeyError, TypeError) as exc:
        raise DetectorError(f"{folder}: not a Detoxify checkpoint (no config/classes)") from exc
    configured = json.loads((hf / "config.json").read_text()).get("id2label", {})
    if configured and len(configured) != len(classes):
        raise DetectorError(f"{hf}/config.json has {len(configured)} labels, checkpoint "
                            f"{len(classes)}")
    return args, classes, loaded


def load_tokenizer(folder: Path, tokenizer_name: str) -> Any:
    """The tokenizer class Detoxify names, from the local ``hf`` folder only."""
    import transformers

    tokenizer = getattr(transformers, tokenizer_name).from_pretrained(
        str(folder / "hf"), local_files_only=True)
    vocab = json.loads((folder / "hf" / "config.json").read_text()).get("vocab_size")
    if vocab is not None:
        _check_vocabulary(tokenizer, int(vocab), folder / "hf")
    return tokenizer


def _check_vocabulary(tokenizer: Any, vocab_size: int, hf: Path) -> None:
    """Offline, a hub name can silently yield a tiny tokenizer: its size must match the model."""
    if len(tokenizer) != vocab_size:
        raise DetectorError(f"tokenizer in {hf} has {len(tokenizer)} tokens, model {vocab_size}")


def load_detoxify(folder: Path) -> tuple[Any, Any, list[str], str]:
    """(model, tokenizer, class names, tokenizer class name) through Detoxify's own
    construction code, offline."""
    try:
        from detoxify.detoxify import get_model_and_tokenizer
    except ImportError as exc:
        raise DetectorError("the detoxify backend needs: pip install 'chatmon[models]'") from exc
    args, classes, loaded = _checkpoint_args(folder)
    hf = folder / "hf"
    args["model_type"] = str(hf)
    model, tokenizer = get_model_and_tokenizer(
        **args, state_dict=loaded["state_dict"], huggingface_config_path=str(hf)
    )
    _check_vocabulary(tokenizer, int(model.config.vocab_size), hf)
    model.eval()
    return model, tokenizer, classes, str(args["tokenizer_name"])


class DetoxifyBackend:
    """Chunked, batched, max-pooled Detoxify inference. ``load()`` once; ``score()`` per batch."""

    def __init__(self, model_dir: str | Path, variant: str = "original", max_tokens: int = 256,
                 overlap: int = 32, batch_size: int = 32, runtime: str = "torch",
                 cache_dir: str | Path | None = None) -> None:
        if runtime not in RUNTIMES:
            raise DetectorError(f"unknown toxicity runtime {runtime!r}; choose one of {RUNTIMES}")
        self.folder = variant_dir(model_dir, variant)
        self.variant = variant
        self.runtime = runtime
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._sess: Any = None
        self.max_tokens = max_tokens
        self.overlap = overlap
        self.batch_size = batch_size
        self.model: Any = None
        self.tokenizer: Any = None
        self.classes: list[str] = []
        self.revision = ""

    def load(self) -> None:
        if self.model is not None or self._sess is not None:
            return
        if self.runtime == "onnx-int8":
            self._load_onnx()
        else:
            self.model, self.tokenizer, self.classes, _ = load_detoxify(self.folder)
        config = json.loads((self.folder / "hf" / "config.json").read_text())
        limit = int(config.get("max_position_embeddings", 512)) - 2  # room for [CLS]/[SEP]
        if config.get("model_type", "") in ("roberta", "xlm-roberta"):
            limit -= 2  # RoBERTa position ids start after the padding index
        self.max_tokens = max(8, min(self.max_tokens, limit))
        self.overlap = min(self.overlap, self.max_tokens // 4)
        manifest = self.folder / "manifest.json"
        info = json.loads(manifest.read_text()) if manifest.is_file() else {}
        self.revision = str(info.get("revision", "local"))
        missing = [lab for lab in LABELS if lab not in self.classes]
        if missing:
            raise DetectorError(f"{self.folder}: checkpoint lacks labels {missing}")

    def onnx_path(self) -> Path:
        """Where the int8 export of this checkpoint is cached (keyed by the checkpoint files)."""
        from detectors import onnx_backend as ob

        h = hashlib.sha256(ob.model_key(self.folder / "hf", "detoxify").encode())
        for f in sorted(self.folder.iterdir()):
            if f.is_file():
                st = f.stat()
                h.update(f"{f.name}\x1f{st.st_size}\x1f{int(st.st_mtime)}".encode())
        cache = self.cache_dir or ob.default_cache_dir()
        return cache / f"detoxify-{self.variant}-{h.hexdigest()[:16]}.attn.int8.onnx"

    def _load_onnx(self) -> None:
        """The checkpoint exported once to int8 ONNX. The first load builds the torch model to
        export it and writes the class names and tokenizer class beside the file; later loads
        read those and the tokenizer only, never the torch weights."""
        from detectors import onnx_backend as ob

        dest = self.onnx_path()
        sidecar = dest.with_name(dest.name + ".json")
        if dest.is_file() and sidecar.is_file():
            meta = json.loads(sidecar.read_text())
            self.classes = [str(c) for c in meta["classes"]]
            self.tokenizer = load_tokenizer(self.folder, str(meta["tokenizer"]))
        else:
            model, self.tokenizer, self.classes, tokenizer_name = load_detoxify(self.folder)
            ob.export_local(model, self.tokenizer, dest, "logits", fuse_attention=True)
            meta = json.dumps({"classes": self.classes, "tokenizer": tokenizer_name})
            ob.atomic_write(sidecar, lambda tmp: tmp.write_text(meta))
        self._sess = ob.session(dest)

    def chunks(self, text: str) -> list[tuple[list[int], tuple[int, int]]]:
        """Token-id windows covering the whole text, with each window's character span."""
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ids, offsets = enc["input_ids"], enc["offset_mapping"]
        if not ids:
            return [([], (0, len(text)))]
        step = self.max_tokens - self.overlap
        out = []
        for start in range(0, max(1, len(ids) - self.overlap), step):
            window = slice(start, start + self.max_tokens)
            span = (int(offsets[window][0][0]), int(offsets[window][-1][1]))
            out.append((ids[window], span))
        return out

    def _run(self, windows: list[list[int]]) -> np.ndarray:
        order = sorted(range(len(windows)), key=lambda i: len(windows[i]))
        probs = np.zeros((len(windows), len(self.classes)), dtype=np.float32)
        cls, sep = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        pad = self.tokenizer.pad_token_id
        for i in range(0, len(order), self.batch_size):
            idx = order[i : i + self.batch_size]
            # [CLS] ids [SEP] for BERT, <s> ids </s> for (XLM-)RoBERTa: the same two ids.
            rows = [[cls, *windows[j], sep] for j in idx]
            width = max(len(r) for r in rows)
            ids = np.array([r + [pad] * (width - len(r)) for r in rows], dtype=np.int64)
            mask = np.array([[1] * len(r) + [0] * (width - len(r)) for r in rows], dtype=np.int64)
            probs[idx] = 1.0 / (1.0 + np.exp(-self._logits(ids, mask)))
        return probs

    def _logits(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if self._sess is not None:
            from detectors.onnx_backend import feed

            return self._sess.run(None, feed(self._sess, {
                "input_ids": ids, "attention_mask": mask,
                "token_type_ids": np.zeros_like(ids)}))[0]
        import torch

        with torch.inference_mode():
            return self.model(input_ids=torch.from_numpy(ids),
                              attention_mask=torch.from_numpy(mask)).logits.float().numpy()

    def score(self, texts: Sequence[str]) -> list[dict[str, LabelScore]]:
        self.load()
        per_text = [self.chunks(t) for t in texts]
        probs = self._run([ids for chunks in per_text for ids, _ in chunks])
        out, row = [], 0
        for chunks in per_text:
            block = probs[row : row + len(chunks)]
            row += len(chunks)
            scores = {}
            for lab in LABELS:
                col = block[:, self.classes.index(lab)]
                best = int(np.argmax(col))
                scores[lab] = LabelScore(float(col[best]), chunks[best][1], {
                    "backend": "detoxify", "variant": self.variant, "revision": self.revision,
                    "component": "detoxify", "chunk": best, "n_chunks": len(chunks),
                    "chunking": f"{self.max_tokens} tokens"})
            out.append(scores)
        return out
