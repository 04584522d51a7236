"""Rebuild ``detectors/bias/data/stereotype_vectors.npz``: the stereotype-content vectors of the
bias detector, from the statements we wrote (``stereotypes.json``). See docs/models/bias.md.

    python -m pipeline.training.bias [--backend torch|onnx-int8]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from detectors.bias.content import VECTORS, statements_digest, trait_specs
from detectors.features import BACKENDS, SentenceEncoder


def build_vectors(encoder: Any, out: Path = VECTORS) -> int:
    """Encode every statement with ``encoder`` (a features.SentenceEncoder) and write the npz."""
    specs = trait_specs()
    rel, diff = [], []
    for spec in specs:
        s = encoder.encode(list(spec.stereo))
        c = encoder.encode(list(spec.swapped))
        r = (s + c).mean(axis=0)
        rel.append(r / np.linalg.norm(r))
        diff.append(s.mean(axis=0) - c.mean(axis=0))
    np.savez_compressed(
        out,
        rel=np.stack(rel).astype(np.float16),
        diff=np.stack(diff).astype(np.float16),
        axes=np.array([s.axis for s in specs]),
        traits=np.array([f"{s.axis}:{s.trait}" for s in specs]),
        digest=np.array(statements_digest()),
        encoder=np.array(getattr(encoder, "backend", "unknown")),
    )
    return len(specs)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m pipeline.training.bias",
                                 description="Rebuild the stereotype-content vectors.")
    ap.add_argument("--backend", choices=BACKENDS, default="torch",
                    help="encoder backend of the stored vectors (shipped: torch)")
    args = ap.parse_args(argv)
    n = build_vectors(SentenceEncoder(backend=args.backend))
    print(f"wrote {n} trait vectors ({args.backend} encoder) to {VECTORS}")


if __name__ == "__main__":
    main()
