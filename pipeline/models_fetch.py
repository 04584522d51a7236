"""``chatmon models fetch|list``: pre-fetch production model weights into the local model directory.

Run it where the internet exists (an image build), then ship ``model_dir`` into the air-gapped
deployment; detectors only ever read that directory. Everything fetched is pinned:

- Detoxify checkpoints: GitHub release assets of unitaryai/detoxify. Their file names carry the
  first 8 hex digits of the file's sha256 (the torch.hub convention), which we verify; the full
  sha256 is then recorded in ``manifest.json`` and checked by the detector before it ever
  unpickles a checkpoint that is not plain tensors.
- The base model's config and tokenizer files: Hugging Face repositories at a fixed commit.
  ``config.json`` is rewritten with the checkpoint's label names so that transformers builds the
  classification head with the right shape offline.

Layout: ``<model_dir>/detoxify/<variant>/{checkpoint.ckpt, hf/, manifest.json}``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.errors import ChatmonError

RELEASES = "https://github.com/unitaryai/detoxify/releases/download/"
HF = "https://huggingface.co/{repo}/resolve/{revision}/{file}"


class ModelFetchError(ChatmonError):
    """A model could not be fetched (no network, bad checksum, unknown name)."""


@dataclass(frozen=True)
class BaseModel:
    repo: str
    revision: str  # a commit of the Hugging Face repository
    files: tuple[str, ...]
    url_template: str = HF  # {repo}, {revision}, {file}; tests point it at file:// URLs

    def url(self, file: str) -> str:
        return self.url_template.format(repo=self.repo, revision=self.revision, file=file)


@dataclass(frozen=True)
class ModelSpec:
    name: str
    variant: str
    url: str
    sha256_prefix: str
    base: BaseModel

    def folder(self, model_dir: Path) -> Path:
        return Path(model_dir) / "detoxify" / self.variant


_BERT = BaseModel("google-bert/bert-base-uncased", "86b5e0934494bd15c9632b12f734a8a67f723594",
                  ("config.json", "vocab.txt", "tokenizer_config.json", "tokenizer.json"))
_ROBERTA = BaseModel("FacebookAI/roberta-base", "bc2764f8af2e92b6eb5679868df33e224075ca68",
                     ("config.json", "vocab.json", "merges.txt", "tokenizer.json"))
_XLMR = BaseModel("FacebookAI/xlm-roberta-base", "e73636d4f797dec63c3081bb6ed5c7b0bb3f2089",
                  ("config.json", "sentencepiece.bpe.model", "tokenizer.json"))

MODELS: dict[str, ModelSpec] = {
    s.name: s
    for s in (
        ModelSpec("detoxify-original", "original",
                  RELEASES + "v0.1-alpha/toxic_original-c1212f89.ckpt", "c1212f89", _BERT),
        ModelSpec("detoxify-unbiased", "unbiased",
                  RELEASES + "v0.3-alpha/toxic_debiased-c7548aa0.ckpt", "c7548aa0", _ROBERTA),
        ModelSpec("detoxify-multilingual", "multilingual",
                  RELEASES + "v0.4-alpha/multilingual_debiased-0b549669.ckpt", "0b549669", _XLMR),
    )
}


def resolve(names: Sequence[str]) -> list[ModelSpec]:
    """Specs for the names; ``detoxify`` or ``all`` means every Detoxify variant."""
    out: list[ModelSpec] = []
    for name in names or ["all"]:
        if name in ("all", "detoxify"):
            out.extend(MODELS.values())
        elif name in MODELS:
            out.append(MODELS[name])
        else:
            raise ModelFetchError(f"unknown model {name!r}; known: all, {', '.join(MODELS)}")
    return list(dict.fromkeys(out))


def plan(names: Sequence[str], model_dir: Path) -> list[dict[str, Any]]:
    """What ``fetch`` would download and where, without touching the network."""
    rows = []
    for spec in resolve(names):
        folder = spec.folder(model_dir)
        rows.append({"name": spec.name, "dir": str(folder), "checkpoint": spec.url,
                     "sha256_prefix": spec.sha256_prefix,
                     "base": f"{spec.base.repo}@{spec.base.revision}",
                     "files": [spec.base.url(f) for f in spec.base.files]})
    return rows


def _download(url: str, dest: Path, timeout: float) -> str:
    """Download ``url`` to ``dest`` atomically; returns the file's sha256."""
    h = hashlib.sha256()
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=dest.parent, delete=False) as tmp:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (pinned https)
                for block in iter(lambda: resp.read(1 << 20), b""):
                    h.update(block)
                    tmp.write(block)
        except OSError as exc:
            Path(tmp.name).unlink(missing_ok=True)
            raise ModelFetchError(f"cannot download {url}: {exc}. `chatmon models fetch` needs "
                                  "internet access; run it on a connected machine and copy the "
                                  "model directory") from exc
    Path(tmp.name).replace(dest)
    return h.hexdigest()


def write_label_config(folder: Path) -> list[str]:
    """Rewrite ``hf/config.json`` with the checkpoint's classes (Detoxify's names)."""
    import torch

    loaded = torch.load(folder / "checkpoint.ckpt", map_location="cpu", weights_only=False)
    classes = list(loaded["config"]["dataset"]["args"]["classes"])
    cfg_file = folder / "hf" / "config.json"
    cfg = json.loads(cfg_file.read_text())
    cfg["id2label"] = {str(i): c for i, c in enumerate(classes)}
    cfg["label2id"] = {c: i for i, c in enumerate(classes)}
    cfg["problem_type"] = "multi_label_classification"
    cfg_file.write_text(json.dumps(cfg, indent=1) + "\n")
    return classes


def fetch_one(spec: ModelSpec, model_dir: Path, timeout: float = 60.0) -> dict[str, Any]:
    folder = spec.folder(model_dir)
    staging = folder.with_name(folder.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    digest = _download(spec.url, staging / "checkpoint.ckpt", timeout)
    if not digest.startswith(spec.sha256_prefix):
        shutil.rmtree(staging, ignore_errors=True)
        raise ModelFetchError(f"{spec.url}: sha256 {digest[:12]}... does not start with the "
                              f"published {spec.sha256_prefix}")
    files = {}
    for f in spec.base.files:
        files[f] = _download(spec.base.url(f), staging / "hf" / f, timeout)
    classes = write_label_config(staging)
    manifest = {"name": spec.name, "source": spec.url, "sha256": digest,
                "revision": f"{spec.url.rsplit('/', 2)[-2]}-{spec.sha256_prefix}",
                "base": spec.base.repo, "base_revision": spec.base.revision,
                "base_files_sha256": files, "classes": classes}
    (staging / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    staging.replace(folder)
    return manifest


def fetch(names: Sequence[str], model_dir: Path, timeout: float = 60.0) -> list[dict[str, Any]]:
    """Download and verify the named models into ``model_dir``; returns their manifests."""
    return [fetch_one(spec, Path(model_dir), timeout) for spec in resolve(names)]


def list_models(model_dir: Path) -> list[dict[str, Any]]:
    """Every known model with whether it is present (complete) in ``model_dir``."""
    rows = []
    for spec in MODELS.values():
        folder = spec.folder(Path(model_dir))
        manifest_file = folder / "manifest.json"
        present = manifest_file.is_file() and (folder / "checkpoint.ckpt").is_file()
        info = json.loads(manifest_file.read_text()) if present else {}
        rows.append({"name": spec.name, "variant": spec.variant, "dir": str(folder),
                     "present": present, "revision": info.get("revision"),
                     "sha256": info.get("sha256")})
    return rows
