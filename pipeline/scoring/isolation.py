"""One event's failure stays that event's: ``Processor.process`` with per-event isolation, for
the embedded runner and ``chatmon serve`` (the faust stage isolates the same way, asynchronously,
in ``pipeline/kafka/agents.py``).

Validation and the detectors already turn bad input into dead letters; this is the last line,
for what nobody foresaw. A batch that raises for any reason but a store outage is processed
again event by event, and an event that still raises becomes its own ``processing_error`` dead
letter, so the events around it are stored and the run goes on. A store outage
(``StoreUnavailable``) is not any event's fault: it propagates, and the caller retries, answers
503 or stops.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pipeline.errors import SinkError, StoreUnavailable
from pipeline.ingest.events import PROCESSING_ERROR, RawRecord
from pipeline.scoring.process import BatchReport, Processor

log = logging.getLogger(__name__)


def process_isolating(processor: Processor, records: Sequence[RawRecord],
                      ahead: Sequence[RawRecord] | None = None) -> BatchReport:
    try:
        return processor.process(records, ahead=ahead)
    except StoreUnavailable:
        raise
    except Exception as exc:
        log.warning("a batch of %d events failed (%s); processing them one by one",
                    len(records), type(exc).__name__)
    total = BatchReport()
    for record in records:
        part = _one(processor, record)
        total.merge(part)
        total.turn_rows += part.turn_rows
        total.finding_rows += part.finding_rows
        total.dead_letter_rows += part.dead_letter_rows
        total.redaction_failed_turns += part.redaction_failed_turns
    return total


def _one(processor: Processor, record: RawRecord) -> BatchReport:
    try:
        return processor.process([record])
    except StoreUnavailable:
        raise
    except Exception as exc:
        # The type only: an exception's message can quote the event.
        log.warning("%s %s failed alone (%s): dead-lettered as %s", record.source,
                    record.position, type(exc).__name__, PROCESSING_ERROR)
        return processor.dead_letter(record, PROCESSING_ERROR, describe(exc))


def describe(exc: BaseException) -> str:
    """A dead letter's detail for an exception: its type, and for a store error our own message
    (which names the SQLAlchemy error type, never its text)."""
    if isinstance(exc, SinkError):
        return f"the store refused this event ({exc})"
    return f"processing this event raised {type(exc).__name__}"
