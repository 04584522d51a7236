"""Where the PII analyser's time goes on the bench corpus, part by part, in this process.

    .venv/bin/python scripts/pii_cost.py [--turns 1500] [--model encoder]

Runs the PII detector's Presidio engine (in process, no result cache) over the first
``--turns`` user and assistant turns of ``chatmon bench``'s default corpus, with timers around
each recognizer's ``analyze`` (a recognizer the prefilter skips costs only the check) and the
encoder head; the rest is the NLP engine (spaCy's NER, or the blank tokenizer that takes the
head's spans), context words and post-processing (token states, when the model is ``encoder``,
are computed before the clock starts: the pipeline's encoder pass makes them anyway). Prints
milliseconds per turn, total and per part, as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=1500)
    ap.add_argument("--model", default="encoder")
    ap.add_argument("--batch-size", type=int, default=32)
    args = ap.parse_args()

    from threadpoolctl import threadpool_limits

    from detectors.features import shared_encoder
    from detectors.pii.detector import PiiDetector
    from pipeline.bench.corpus import default_source, read_source

    threadpool_limits(limits=1, user_api="blas")  # as the pipeline does (settle_process)
    texts = [str(e["text"]) for e in read_source(default_source())][: args.turns]
    det = PiiDetector(model=args.model, cache_size=0)
    det.load()
    engine = det._engine
    spent: dict[str, float] = defaultdict(float)

    def timed(name: str, fn: Any) -> Any:
        def run(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[name] += time.perf_counter() - t0
        return run

    for rec in engine.analyzer.registry.recognizers:
        rec.analyze = timed(f"recognizer:{rec.name}", rec.analyze)
    states = (shared_encoder("onnx-int8").token_states(texts) if args.model == "encoder"
              else None)
    if engine.head is not None:
        engine.head.spans = timed("encoder_head", engine.head.spans)
    # warm-up: first calls fault in memory and load the name list
    engine.analyze(texts[:200], det.min_score, states[:200] if states is not None else None)
    spent.clear()
    total = 0.0
    for i in range(0, len(texts), args.batch_size):
        part = texts[i:i + args.batch_size]
        t0 = time.perf_counter()
        engine.analyze(part, det.min_score,
                       states[i:i + args.batch_size] if states is not None else None)
        total += time.perf_counter() - t0
    spent["rest (tokenizer, context words, post-processing)"] = total - sum(spent.values())
    per = {k: round(1000 * v / len(texts), 4)
           for k, v in sorted(spent.items(), key=lambda kv: -kv[1])}
    print(json.dumps({"model": args.model, "turns": len(texts),
                      "ms_per_turn": round(1000 * total / len(texts), 3), "parts": per}, indent=1))


if __name__ == "__main__":
    main()
