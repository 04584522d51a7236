"""``chatmon models fetch|list`` support: the plan, pinned sources, checksum checks and errors.

No network here: a closed loopback port stands in for an unreachable host, and file:// URLs
stand in for the release and hub servers so that the whole fetch path (download, sha256 check,
label config, manifest, list) runs offline.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest
from test_toxicity_detoxify import build_tiny_detoxify  # same folder (rootdir import mode)

from pipeline import models_fetch as mf


def test_plan_lists_pinned_sources_and_paths(tmp_path: Path) -> None:
    rows = mf.plan(["detoxify"], tmp_path)
    assert [r["name"] for r in rows] == ["detoxify-original", "detoxify-unbiased",
                                         "detoxify-multilingual"]
    for row in rows:
        variant = row["name"].split("-", 1)[1]
        assert row["dir"] == str(tmp_path / "detoxify" / variant)
        assert row["checkpoint"].startswith("https://github.com/unitaryai/detoxify/releases/")
        assert row["sha256_prefix"] in row["checkpoint"]  # torch.hub-style name pins the hash
        repo, _, revision = row["base"].partition("@")
        assert len(revision) == 40 and all(c in "0123456789abcdef" for c in revision)
        assert all(f"/resolve/{revision}/" in u for u in row["files"])


def test_unknown_name_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(mf.ModelFetchError, match="unknown model"):
        mf.plan(["detoxify-huge"], tmp_path)


def test_unreachable_host_gives_a_clear_error_and_leaves_nothing(tmp_path: Path) -> None:
    spec = replace(mf.MODELS["detoxify-original"], url="http://127.0.0.1:9/x-c1212f89.ckpt")
    with pytest.raises(mf.ModelFetchError, match="needs internet access"):
        mf.fetch_one(spec, tmp_path, timeout=2)
    assert not (tmp_path / "detoxify" / "original").exists()
    assert not any(row["present"] for row in mf.list_models(tmp_path))


def _served(tmp_path: Path) -> tuple[Path, str]:
    """A tiny checkpoint and its hf files laid out as a file:// 'server'."""
    src = build_tiny_detoxify(tmp_path / "server")
    ckpt = src / "checkpoint.ckpt"
    return src, hashlib.sha256(ckpt.read_bytes()).hexdigest()


def test_fetch_verifies_hash_writes_label_config_and_lists(tmp_path: Path) -> None:
    src, digest = _served(tmp_path)
    base = mf.BaseModel("local/tiny", "0" * 40, ("config.json", "vocab.txt",
                        "tokenizer_config.json"), url_template=f"file://{src}/hf/{{file}}")
    spec = mf.ModelSpec("detoxify-original", "original", f"file://{src}/checkpoint.ckpt",
                        digest[:8], base)
    dest = tmp_path / "models"
    manifest = mf.fetch_one(spec, dest)
    folder = dest / "detoxify" / "original"
    assert manifest["sha256"] == digest
    cfg = json.loads((folder / "hf" / "config.json").read_text())
    assert cfg["id2label"]["5"] == "identity_hate" and len(cfg["id2label"]) == 6
    listed = {r["name"]: r for r in mf.list_models(dest)}
    assert listed["detoxify-original"]["present"] is True
    assert listed["detoxify-original"]["sha256"] == digest
    assert listed["detoxify-unbiased"]["present"] is False


def test_fetch_rejects_a_checksum_mismatch(tmp_path: Path) -> None:
    src, digest = _served(tmp_path)
    wrong = "0" * 8 if not digest.startswith("0" * 8) else "f" * 8
    spec = mf.ModelSpec("detoxify-original", "original", f"file://{src}/checkpoint.ckpt",
                        wrong, mf.MODELS["detoxify-original"].base)
    with pytest.raises(mf.ModelFetchError, match="sha256"):
        mf.fetch_one(spec, tmp_path / "models")
    assert not (tmp_path / "models" / "detoxify" / "original").exists()
