"""Write BENCHMARKS.md from ``chatmon bench --json`` (and optionally ``--transformer``) output.

    chatmon bench --json > bench.json
    chatmon bench --transformer > transformer.json
    .venv/bin/python scripts/write_benchmarks.py bench.json [--transformer transformer.json] \
        [--out BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.bench.report import render_markdown  # noqa: E402


def transformer_section(t: dict[str, Any]) -> str:
    fast, slow = t["onnx_int8_sorted_batches"], t["torch_one_by_one"]
    ok = fast["turns_per_s"] >= 100
    return "\n".join([
        "## Production transformer backend (Detoxify-size model)", "",
        f"`chatmon bench --transformer`: {t['model']}, {t['threads']} threads, the example "
        f"transcripts' assistant replies (mean {t['mean_tokens']} tokens), load average "
        f"{t['load_avg']}.", "",
        "| path | turns/s | GFLOP/s (fp32-equivalent) |", "|---|---:|---:|",
        f"| PyTorch fp32, one message at a time ({slow['turns']} replies) | "
        f"{slow['turns_per_s']} | {slow['gflop_per_s']} |",
        f"| ONNX Runtime int8, length-sorted batches of {fast['batch_size']} "
        f"({fast['turns']} replies) | {fast['turns_per_s']} | "
        f"{fast['gflop_per_s_fp32_equivalent']} |",
        *([f"| ONNX Runtime int8, single sentences of those replies (mean "
           f"{t['onnx_int8_sentences']['mean_tokens']} tokens) | "
           f"{t['onnx_int8_sentences']['turns_per_s']} | "
           f"{t['onnx_int8_sentences']['gflop_per_s_fp32_equivalent']} |"]
          if "onnx_int8_sentences" in t else []), "",
        f"- Speedup: {t['speedup']}x; ratio to the machine's fp32 ceiling "
        f"({t['flop_ceiling_gflops']:g} GFLOP/s on 2 threads): "
        f"{fast['ratio_to_fp32_ceiling']} (int8 arithmetic can exceed 1).",
        f"- Target >= 100 turns/s with ONNX int8: {'met' if ok else 'MISS'} on the example "
        f"replies ({t['mean_tokens']} tokens)"
        + (f"; {'met' if t['onnx_int8_sentences']['turns_per_s'] >= 100 else 'MISS'} on "
           f"single sentences ({t['onnx_int8_sentences']['mean_tokens']} tokens)."
           if "onnx_int8_sentences" in t else "."),
        f"- int8 vs fp32 logits on the same random weights: correlation "
        f"{t['int8_vs_fp32_logit_correlation']} (accuracy on real labels needs the real "
        "fine-tuned weights; see QUALITY.md for the shared encoder's int8 change).",
        f"- One-time export + quantization: {fast['export_and_quantize_s']} s.",
        "- Use it: `runtime: onnx-int8` in the options of the empathy transformers backend "
        "and of the Detoxify backend, or `detectors.onnx_backend.OnnxSequenceClassifier"
        "(model_dir)` on any local `AutoModelForSequenceClassification` folder.",
    ])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("bench", type=Path)
    ap.add_argument("--transformer", type=Path)
    ap.add_argument("--notes", type=Path, help="markdown appended at the end")
    ap.add_argument("--out", type=Path, default=ROOT / "BENCHMARKS.md")
    ap.add_argument("--command", default="chatmon bench --json > bench.json && "
                    ".venv/bin/python scripts/write_benchmarks.py bench.json")
    args = ap.parse_args()
    result = json.loads(args.bench.read_text())
    extra = []
    if args.transformer:
        extra.append(transformer_section(json.loads(args.transformer.read_text())))
    if args.notes:
        extra.append(args.notes.read_text())
    args.out.write_text(render_markdown(result, args.command, "\n\n".join(extra)))
    print(args.out)


if __name__ == "__main__":
    main()
