"""``chatmon bench``: throughput, latency and peak memory, end to end and per detector.

Every configuration (the full default pipeline, each detector alone, the naive baseline) runs in
a fresh subprocess, so that its peak RSS (``ru_maxrss`` of that process) is its own and no model
loaded by an earlier configuration lingers. A configuration loads its models, processes a
warm-up corpus (other conversation ids), then the measured corpus from a JSON Lines file through
the real ``Processor`` into a temporary SQLite store.

Latency is "ingest to stored result": for each turn, from the moment its record was read from
the file to the moment the batch holding it was committed to the store.

The naive baseline scores the same turns the usual way: each detector called on one message at
a time, each computing its own features (MiniLM in PyTorch once per message per detector, no
cache, no sharing; Presidio's analyzer once per message), nothing stored.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.bench.corpus import EXAMPLES, ROOT, corpus_lines, default_source, read_source

WARMUP_TURNS = 256


def machine() -> dict[str, Any]:
    """The CPU the numbers came from: model, cores, and the instruction sets int8 speed depends
    on (AVX-512 VNNI: ONNX Runtime's int8 MatMul kernels; AMX; else AVX2)."""
    model = platform.processor() or ""
    flags: set[str] = set()
    try:
        named = False
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and not named:
                model, named = line.split(":", 1)[1].strip(), True
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
            if named and flags:
                break
    except OSError:
        pass
    return {"cores": os.cpu_count(), "cpu_model": model, "platform": platform.platform(),
            "python": platform.python_version(), "avx512_vnni": "avx512_vnni" in flags,
            "amx": "amx_int8" in flags, "avx2": "avx2" in flags}


def _latency(seconds: list[float], n: int, elapsed: float) -> dict[str, Any]:
    ms = np.asarray(seconds) * 1000.0
    return {
        "turns": n,
        "seconds": round(elapsed, 3),
        "turns_per_s": round(n / elapsed, 1) if elapsed > 0 else None,
        "p50_ms": round(float(np.percentile(ms, 50)), 1) if len(ms) else None,
        "p95_ms": round(float(np.percentile(ms, 95)), 1) if len(ms) else None,
        "p99_ms": round(float(np.percentile(ms, 99)), 1) if len(ms) else None,
    }


def _children() -> list[tuple[list[str], str]]:
    """(stat fields after the command name, status text) of this process's live children (the
    PII analyser's process); empty where there is no Linux /proc."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == os.getpid():
                out.append((fields, (stat.parent / "status").read_text()))
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    return out


def _peak_rss_mb() -> float:
    """This process's peak resident memory plus that of its live children: what the
    configuration needs on the machine."""
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _, status in _children():
        kb += next((int(line.split()[1]) for line in status.splitlines()
                    if line.startswith("VmHWM:")), 0)
    return round(kb / 1024.0, 1)


def _cpu_s() -> float:
    """CPU seconds of this process and its live children so far."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    return time.process_time() + sum(int(f[11]) + int(f[12]) for f, _ in _children()) / tick


def measure_pipeline(cfg: dict[str, Any]) -> dict[str, Any]:
    """One configuration, in this process: warm up, then time the corpus file end to end."""
    from pipeline.embedded.runner import build_processor, with_next
    from pipeline.ingest.events import RawRecord
    from pipeline.ingest.readers import read_records
    from pipeline.settings import Settings

    with tempfile.TemporaryDirectory(prefix="chatmon-bench-") as tmp:
        settings = Settings(database_url=f"sqlite:///{tmp}/bench.db",
                            detectors=tuple(cfg["detectors"]), batch_size=cfg["batch_size"],
                            encoder_backend=cfg["encoder_backend"])
        t0 = time.perf_counter()
        proc = build_processor(settings, str(uuid.uuid4()), "bench", cfg["corpus"])
        load_s = time.perf_counter() - t0
        warm = [RawRecord("warmup", f"line {i}", line.encode())
                for i, line in enumerate(Path(cfg["warmup"]).read_text().splitlines())]
        for i in range(0, len(warm), settings.batch_size):
            proc.process(warm[i : i + settings.batch_size])
        encoder = proc.suite.features.encoder
        if not cfg.get("encoder_cache", True):  # every cache of seen text off
            for part in (encoder, *proc.suite.detectors, proc.redactor.pii):
                if part is not None and hasattr(part, "configure_cache"):
                    part.configure_cache(0)
        feature_s = _time_features(proc)
        latencies: list[float] = []
        errors: dict[str, int] = {}
        start, cpu0 = time.perf_counter(), _cpu_s()
        # As `chatmon run` reads a file: with read_ahead the next batch is read (its records'
        # clocks start) before this one is processed, and the encoder starts on it meanwhile.
        for (batch, read_at), upcoming in with_next(
                _timed_batches(read_records(cfg["corpus"]), settings.batch_size),
                cfg.get("read_ahead", False)):
            _flush(proc, batch, read_at, latencies, errors,
                   ahead=upcoming[0] if upcoming else None)
        elapsed = time.perf_counter() - start
        cpu_s = _cpu_s() - cpu0
    out = _latency(latencies, len(latencies), elapsed)
    out.update(peak_rss_mb=_peak_rss_mb(), load_s=round(load_s, 1),
               feature_s=round(feature_s[0], 2), cpu_s=round(cpu_s, 2),
               cores_busy=round(cpu_s / elapsed, 2) if elapsed > 0 else None,
               detector_errors=errors,
               encoder_backend=cfg["encoder_backend"] if encoder is not None else None,
               encoder_cache=cfg.get("encoder_cache", True) if encoder is not None else None)
    return out


def _time_features(proc: Any) -> list[float]:
    """Wrap the suite's feature extractor to add up the seconds it takes (shared features)."""
    total = [0.0]
    fx = proc.suite.features
    inner = fx.add

    def timed(batch: Any) -> Any:
        t = time.perf_counter()
        try:
            return inner(batch)
        finally:
            total[0] += time.perf_counter() - t

    fx.add = timed
    return total


def _timed_batches(records: Any, size: int) -> Any:
    """Batches of ``size`` records, each with the times its records were read."""
    batch: list[Any] = []
    read_at: list[float] = []
    for rec in records:
        read_at.append(time.perf_counter())
        batch.append(rec)
        if len(batch) >= size:
            yield batch, read_at
            batch, read_at = [], []
    if batch:
        yield batch, read_at


def _flush(proc: Any, batch: list[Any], read_at: list[float], latencies: list[float],
           errors: dict[str, int], ahead: list[Any] | None = None) -> None:
    report = proc.process(batch, ahead=ahead)
    done = time.perf_counter()
    latencies.extend(done - t for t in read_at)
    for det, n in report.detector_errors.items():
        errors[det] = errors.get(det, 0) + n


def measure_naive(cfg: dict[str, Any]) -> dict[str, Any]:
    """Each detector on one message at a time with its own features: no batching, no sharing."""
    from detectors.base import Context, DictStateStore, ScoringInput
    from detectors.features import SentenceEncoder
    from pipeline.ingest import events
    from pipeline.ingest.events import Accepted, RawRecord
    from pipeline.scoring.context import MemoryContextStore
    from pipeline.scoring.suite import DetectorSuite, FeatureExtractor

    suite = DetectorSuite.from_names(cfg["detectors"], encoder_backend="torch")
    suite.load()
    encoder = SentenceEncoder(backend="torch", cache_size=0)
    per_detector = []
    for det in suite.detectors:
        per_detector.append((det, FeatureExtractor([det], encoder)))
    contexts, state = MemoryContextStore(20), DictStateStore()
    lines = Path(cfg["corpus"]).read_text().splitlines()[: cfg["naive_turns"]]
    warm = Path(cfg["warmup"]).read_text().splitlines()[:32]
    timed_from = len(warm)
    start = 0.0
    for i, line in enumerate([*warm, *lines]):
        if i == timed_from:
            start = time.perf_counter()
        acc = events.validate(RawRecord("naive", f"line {i}", line.encode()), 20_000)
        if not isinstance(acc, Accepted):
            continue
        item = ScoringInput(acc.turn, Context(history=contexts.history(acc.turn.conversation_id),
                                              state=state))
        contexts.append(acc.turn)
        for det, fx in per_detector:
            if acc.turn.role in det.roles:
                det.score(fx.add([item]))
    elapsed = time.perf_counter() - start
    return {"turns": len(lines), "seconds": round(elapsed, 3),
            "turns_per_s": round(len(lines) / elapsed, 1) if elapsed > 0 else None,
            "peak_rss_mb": _peak_rss_mb(),
            "method": "each detector per message, own features, torch MiniLM, no cache, "
                      "Presidio analyzer per message, no store"}


def _child(cfg: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run one configuration in a fresh interpreter; its JSON result is the last stdout line."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run([sys.executable, "-m", "pipeline.bench.embedded", json.dumps(cfg)],
                          capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-3:]
        return {"error": f"exit {proc.returncode}: {' | '.join(tail)}"[:500]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_bench(turns: int = 5000, batch_size: int = 32, detectors: tuple[str, ...] = (),
              file: Path | None = None, naive_turns: int = 500, per_detector: bool = True,
              encoder_backend: str = "onnx-int8", cached: bool = True, naive: bool = True,
              timeout: float = 1800.0, progress: Any = None, read_ahead: bool = False
              ) -> dict[str, Any]:
    """Measure everything; returns the JSON-able result ``chatmon bench --json`` prints.

    The headline is ``pipeline_fresh_text``: every cache of seen text off (encoder vectors, PII
    results), the cost of text the pipeline has never seen. ``pipeline`` is the same corpus with
    the caches on: what the corpus's own repetition buys. Both warm up on other conversations
    (from the end of the source) before the measured corpus (from its start)."""
    from detectors.registry import REGISTRY

    names = list(detectors) or list(REGISTRY)
    source = file or default_source()
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="chatmon-bench-corpus-") as tmp:
        corpus, warm = Path(tmp) / "corpus.jsonl", Path(tmp) / "warmup.jsonl"
        corpus.write_text("\n".join(corpus_lines(turns, "bench", source)) + "\n")
        warm.write_text("\n".join(corpus_lines(WARMUP_TURNS, "warmup", source, from_end=True))
                        + "\n")
        base = {"corpus": str(corpus), "warmup": str(warm), "batch_size": batch_size,
                "encoder_backend": encoder_backend, "read_ahead": read_ahead}

        def step(label: str, cfg: dict[str, Any]) -> dict[str, Any]:
            if progress is not None:
                progress(label)
            return _child({**base, **cfg}, timeout)

        result: dict[str, Any] = {"pipeline_fresh_text": step(
            "pipeline, fresh text (caches off)", {"detectors": names, "encoder_cache": False})}
        if cached:
            result["pipeline"] = step("pipeline (caches on)", {"detectors": names})
            if file is None and source.resolve() != EXAMPLES.resolve():
                # The steady state where stock text recurs: the 460 example turns repeated
                # under fresh conversation ids, caches on (the first BENCHMARKS.md's headline).
                stock = Path(tmp) / "examples.jsonl"
                stock.write_text("\n".join(corpus_lines(turns, "bench", EXAMPLES)) + "\n")
                result["pipeline_examples_cached"] = step(
                    "pipeline (caches on), the examples repeated",
                    {"detectors": names, "corpus": str(stock)})
        if len(names) == 1:  # the fresh-text run was that detector alone
            result["detectors"] = {names[0]: result["pipeline_fresh_text"]}
        elif per_detector:
            result["detectors"] = {n: step(f"{n} alone (caches off)",
                                           {"detectors": [n], "encoder_cache": False})
                                   for n in names}
        if naive:
            result["naive"] = step("naive", {"detectors": names, "naive": True,
                                             "naive_turns": min(naive_turns, turns)})
    fresh = result["pipeline_fresh_text"].get("turns_per_s")
    warm_tps = result.get("pipeline", {}).get("turns_per_s")
    slow = result.get("naive", {}).get("turns_per_s")
    # The naive baseline caches nothing: compare it with the caches-off run first.
    result["speedup_vs_naive"] = round(fresh / slow, 1) if fresh and slow else None
    result["speedup_vs_naive_cached"] = round(warm_tps / slow, 1) if warm_tps and slow else None
    result["machine"] = {**machine(), "load_avg_start": [round(x, 2) for x in load_start],
                         "load_avg_end": [round(x, 2) for x in os.getloadavg()]}
    n_source = len(read_source(source))
    result["settings"] = {"turns": turns, "batch_size": batch_size, "detectors": names,
                          "corpus": _shown(source), "source_turns": n_source,
                          "warmup_turns": WARMUP_TURNS, "encoder_backend": encoder_backend,
                          "naive_turns": min(naive_turns, turns) if naive else None,
                          "read_ahead": read_ahead,
                          "store": "sqlite (temp file)"}
    return result


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def main(argv: list[str]) -> None:
    cfg = json.loads(argv[0])
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import logging

    logging.basicConfig(level=logging.ERROR)
    out = measure_naive(cfg) if cfg.get("naive") else measure_pipeline(cfg)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
