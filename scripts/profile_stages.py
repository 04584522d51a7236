"""Where a fresh-text bench run's wall time goes, stage by stage, on the main thread.

    .venv/bin/python scripts/profile_stages.py [--turns 2000] [--batch-size 32]

Runs one `chatmon bench` configuration (all detectors, every cache of seen text off, the
default corpus) in this process, with timers around the stages of ``Processor.process``:
shared features (the encoder; the main thread waits for its lanes), each detector (``pii``
runs beside the others, on a second thread and, by default, in its child process), the rows
and the sink's write. Prints the run's figures as JSON, then seconds per stage over the
measured turns (warm-up excluded). Stages overlap, so they do not add up to ``process``. Then
CPU seconds: each detector's on the thread that ran it, and the PII analyser's child process
(its own cost, whatever it waited for).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=2000)
    ap.add_argument("--batch-size", type=int, default=32)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    from detectors.registry import REGISTRY
    from pipeline.bench import embedded
    from pipeline.bench.corpus import corpus_lines, default_source
    from pipeline.ingest import readers
    from pipeline.scoring import process, suite
    from pipeline.store import sink

    seconds: collections.Counter[str] = collections.Counter()
    cpu: collections.Counter[str] = collections.Counter()  # CPU seconds, not wall
    children: set[int] = set()  # the PII analyser's child process
    started: dict[int, float] = {}

    def timed(owner: Any, name: str, label: str) -> None:
        inner = getattr(owner, name)

        def wrapper(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return inner(*a, **k)
            finally:
                seconds[label] += time.perf_counter() - t

        setattr(owner, name, wrapper)

    timed(process.Processor, "process", "process (whole batch)")
    timed(process.Processor, "_fresh", "validate and deduplicate")
    timed(process.Processor, "_rows", "rows")
    timed(sink.Sink, "write", "sink write")
    timed(suite.FeatureExtractor, "add", "shared features")
    score_one = suite._score_one

    def per_detector(det: Any, batch: Any) -> Any:
        t, c = time.perf_counter(), time.thread_time()
        try:
            return score_one(det, batch)
        finally:
            seconds[f"detector {det.name}"] += time.perf_counter() - t
            cpu[f"detector {det.name} (its thread)"] += time.thread_time() - c
            child = getattr(getattr(det, "_engine", None), "pid", None)
            if child:
                children.add(child)

    suite._score_one = per_detector
    read = readers.read_records

    def measured(*a: Any, **k: Any) -> Any:  # the measured corpus starts: forget the warm-up
        seconds.clear()
        cpu.clear()
        started.update({pid: _cpu_seconds(pid) for pid in children})
        return read(*a, **k)

    readers.read_records = measured
    source = default_source()
    with tempfile.TemporaryDirectory(prefix="chatmon-profile-") as tmp:
        corpus, warm = Path(tmp) / "corpus.jsonl", Path(tmp) / "warmup.jsonl"
        corpus.write_text("\n".join(corpus_lines(args.turns, "bench", source)) + "\n")
        warm.write_text("\n".join(corpus_lines(embedded.WARMUP_TURNS, "warmup", source,
                                               from_end=True)) + "\n")
        out = embedded.measure_pipeline({
            "corpus": str(corpus), "warmup": str(warm), "batch_size": args.batch_size,
            "encoder_backend": "onnx-int8", "detectors": list(REGISTRY),
            "encoder_cache": False})
    for pid, begun in started.items():
        cpu["pii child process"] += _cpu_seconds(pid) - begun
    print(json.dumps(out))
    for label, s in seconds.most_common():
        print(f"{s:8.2f} s  {label}")
    print("CPU seconds (user + system):")
    for label, s in cpu.most_common():
        print(f"{s:8.2f} s  {label}")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()
