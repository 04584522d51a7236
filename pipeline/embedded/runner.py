"""The embedded runner: files or stdin -> batches -> ``Processor`` -> the store, in one process."""

from __future__ import annotations

import json
import logging
import signal
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tqdm import tqdm

from pipeline import __version__
from pipeline.alerts.embedded import alerting_session
from pipeline.embedded.lifecycle import EmbeddedLifecycle
from pipeline.ingest.events import RawRecord
from pipeline.ingest.readers import count_lines, read_records
from pipeline.metrics import get_metrics
from pipeline.policy.engine import Policy
from pipeline.scoring.isolation import process_isolating
from pipeline.scoring.process import BatchReport, Processor
from pipeline.scoring.redaction import redaction_stage
from pipeline.scoring.suite import DetectorSuite
from pipeline.settings import Settings
from pipeline.store import db
from pipeline.store.sink import Sink

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class RunSummary:
    run_id: str
    sources: list[str]
    report: BatchReport
    seconds: float
    database: str
    dead_letter_files: list[str] = field(default_factory=list)
    interrupted: bool = False
    policy_version: str = ""

    def as_dict(self) -> dict[str, Any]:
        r = self.report
        by_detector: dict[str, int] = {}
        for (det, _), n in r.findings.items():
            by_detector[det] = by_detector.get(det, 0) + n
        return {
            "run_id": self.run_id,
            "sources": self.sources,
            "turns_read": r.records,
            "turns_stored": r.turns_stored,
            "duplicates_skipped": r.duplicates_skipped,
            "dropped": dict(sorted(r.dropped.items())),
            "assistant_turns_scored": r.assistant_turns_scored,
            "findings": dict(sorted(by_detector.items())),
            "findings_by_label": {lab: n for (_, lab), n in sorted(r.findings.items())},
            "flagged_by_label": {lab: n for (_, lab), n in sorted(r.flagged.items())},
            "suppressed_by_label": {lab: n for (_, lab), n in sorted(r.suppressed.items())},
            "policy_version": self.policy_version,
            "dead_lettered": sum(r.dead_letters.values()),
            "dead_letter_reasons": dict(sorted(r.dead_letters.items())),
            "detector_errors": dict(r.detector_errors),
            "redaction_failures": dict(sorted(r.redaction_failures.items())),
            "not_scored_language": dict(sorted(r.language_skipped.items())),
            "seconds": round(self.seconds, 3),
            "turns_per_s": round(r.records / self.seconds, 1) if self.seconds > 0 else None,
            "database": self.database,
            "dead_letter_files": self.dead_letter_files,
            "interrupted": self.interrupted,
        }


class _InputInterrupted(Exception):
    """Raised by the signal handler to break out of a blocking read of the input."""


class _Stop:
    """SIGINT/SIGTERM set a flag; the runner finishes and flushes the current batch, then exits.

    While the runner waits for input (stdin may stay open and idle), the handler also breaks
    the blocking read, so the records read so far are flushed at once. While a batch is being
    processed or written, the handler only sets the flag: nothing is cut off half way.
    """

    def __init__(self) -> None:
        self.requested = False
        self.reading = False

    def __call__(self, signum: int, _frame: Any) -> None:
        log.warning("signal %d: flushing pending writes before exit", signum)
        self.requested = True
        if self.reading:
            raise _InputInterrupted


@contextmanager
def _signals(stop: _Stop) -> Iterator[None]:
    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def build_processor(settings: Settings, run_id: str, mode: str, source: str,
                    migrate: bool = True, own_metadata: str | None = None) -> Processor:
    policy = Policy.from_settings(settings)  # a bad policy file fails before anything loads
    engine = db.make_engine(settings.database_url)
    if migrate:
        db.upgrade(settings.database_url)
    options = settings.scoring_options()
    suite = DetectorSuite.from_names(settings.enabled_detectors(), options,
                                     encoder_backend=settings.encoder_backend)
    suite.load()
    sink = Sink(engine)
    proc_redactor = redaction_stage(suite.detectors, options["pii"])
    proc_redactor.load()  # the redaction stage's own analyser when pii is not among them
    sink.purge_expired_raw()
    sink.start_run(run_id, mode, source, suite.versions, __version__)
    return Processor(settings, suite, sink, run_id=run_id, on_batch=get_metrics().on_batch,
                     policy=policy, own_metadata=own_metadata, redactor=proc_redactor)


def run(paths: Sequence[str], settings: Settings, progress: bool = True,
        migrate: bool = True, processor: Processor | None = None) -> RunSummary:
    run_id = str(uuid.uuid4())
    proc = processor or build_processor(settings, run_id, "run", ",".join(paths), migrate)
    lifecycle = EmbeddedLifecycle(proc, "run")
    lifecycle.expire()  # rows past their retention, as the raw text (build_processor)
    polled = time.monotonic()
    stop = _Stop()
    total = BatchReport()
    dlq_files: list[str] = []
    t0 = time.perf_counter()
    metrics = get_metrics()
    with _signals(stop), alerting_session(settings, metrics):
        for path in paths:
            dlq = None if path == "-" else Path(f"{path}.dlq.jsonl")
            bar = tqdm(total=count_lines(path) if progress else None, disable=not progress,
                       desc=Path(path).name if path != "-" else "stdin", unit="turn",
                       leave=False)
            batches = _batches(read_records(path), settings.batch_size, stop)
            for batch, upcoming in with_next(batches, settings.read_ahead and path != "-"):
                with metrics.track(len(batch)):
                    report = process_isolating(proc, batch, ahead=upcoming)
                total.merge(report)
                bar.update(len(batch))
                if time.monotonic() - polled > settings.deletion_poll_s:  # a long stdin run
                    lifecycle.poll()
                    polled = time.monotonic()
                if dlq is not None and report.dead_letter_rows:
                    _append_dead_letters(dlq, report.dead_letter_rows)
                    if str(dlq) not in dlq_files:
                        dlq_files.append(str(dlq))
            bar.close()
            if stop.requested:
                break
    seconds = time.perf_counter() - t0
    summary = RunSummary(run_id, list(paths), total, seconds, _safe_url(settings.database_url),
                         dlq_files, stop.requested, proc.policy.version)
    proc.sink.finish_run(run_id, summary.as_dict(), seconds)
    return summary


def _batches(records: Iterable[RawRecord], size: int, stop: _Stop) -> Iterator[list[RawRecord]]:
    batch: list[RawRecord] = []
    source = iter(records)
    while not stop.requested:
        stop.reading = True
        try:
            rec = next(source)
        except (StopIteration, _InputInterrupted):
            break
        finally:
            stop.reading = False
        batch.append(rec)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def with_next(batches: Iterator[T], read_ahead: bool) -> Iterator[tuple[T, T | None]]:
    """Each batch with the one after it when ``read_ahead`` (a file: reading on costs no
    waiting; the next one is read before this one is yielded), else with None (stdin: the next
    batch may not exist yet). A batch read ahead is processed too after a stop is asked for."""
    if not read_ahead:
        yield from ((batch, None) for batch in batches)
        return
    upcoming = next(batches, None)
    while upcoming is not None:
        batch, upcoming = upcoming, next(batches, None)
        yield batch, upcoming


def _append_dead_letters(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """The dead-letter file next to the input: the same redacted rows as the table."""
    keys = ("reason", "detail", "source", "position", "raw_excerpt", "detector",
            "conversation_id", "turn", "run_id")
    with path.open("a", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps({k: row.get(k) for k in keys}, ensure_ascii=False) + "\n")


def _safe_url(url: str) -> str:
    """The database URL without its password, for printing."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
