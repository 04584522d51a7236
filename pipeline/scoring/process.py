"""The one processing function: raw records in, rows stored, a report out.

The embedded runner, ``chatmon serve`` and the faust agents all call ``Processor.process`` on a
batch; only the I/O around it and the stores they inject (context, cross-conversation state)
differ.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from detectors.base import Context, DictStateStore, Finding, ScoringInput, StateStore, Turn
from pipeline.ingest import events, limits
from pipeline.ingest.events import Accepted, RawRecord, Rejected
from pipeline.lifecycle.gate import IngestGate
from pipeline.lifecycle.retention import Retention
from pipeline.policy.engine import Policy
from pipeline.scoring import redaction
from pipeline.scoring.context import ContextStore, MemoryContextStore
from pipeline.scoring.language import shared_guesser, turn_language
from pipeline.scoring.redaction import Redactor, Span, excerpt, pii_spans, redact
from pipeline.scoring.suite import DetectorSuite
from pipeline.settings import Settings
from pipeline.store.sink import Sink, stable_id, to_json, turn_id

log = logging.getLogger(__name__)
RAW_EXCERPT_CHARS = 300
# Raw input looked at for a dead letter's excerpt: escapes can take 6 characters each, so this
# is enough for the 4,000 characters the redactor reads.
MAX_RAW_BYTES = 24_000


@dataclass
class BatchReport:
    records: int = 0
    turns_stored: int = 0
    duplicates_skipped: int = 0
    assistant_turns_scored: int = 0
    findings: Counter[tuple[str, str]] = field(default_factory=Counter)
    flagged: Counter[tuple[str, str]] = field(default_factory=Counter)
    suppressed: Counter[tuple[str, str]] = field(default_factory=Counter)
    dead_letters: Counter[str] = field(default_factory=Counter)
    # Events not stored, scored nor dead-lettered: "deleted" (a deletion record covers them),
    # "expired" (past their tenant's retention); pipeline/lifecycle/gate.py.
    dropped: Counter[str] = field(default_factory=Counter)
    detector_seconds: dict[str, float] = field(default_factory=dict)
    detector_errors: Counter[str] = field(default_factory=Counter)
    language_skipped: Counter[str] = field(default_factory=Counter)
    # Texts the redaction stage could not analyse, by outcome: "masked" (a turn stored fully
    # masked), "dead_lettered" (a turn dead-lettered without text), "text_masked" (metadata or
    # a dead letter's excerpt masked).
    redaction_failures: Counter[str] = field(default_factory=Counter)
    # (conversation_id, turn) of the turns masked or dead-lettered that way: alert evidence.
    redaction_failed_turns: list[tuple[str, int]] = field(default_factory=list)
    policy_version: str = ""
    turn_rows: list[dict[str, Any]] = field(default_factory=list)
    finding_rows: list[dict[str, Any]] = field(default_factory=list)
    dead_letter_rows: list[dict[str, Any]] = field(default_factory=list)

    def merge(self, other: BatchReport) -> None:
        for name in ("records", "turns_stored", "duplicates_skipped", "assistant_turns_scored"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in ("findings", "flagged", "suppressed", "dead_letters", "dropped",
                     "detector_errors", "language_skipped", "redaction_failures"):
            getattr(self, name).update(getattr(other, name))
        for k, v in other.detector_seconds.items():
            self.detector_seconds[k] = self.detector_seconds.get(k, 0.0) + v


class Processor:
    def __init__(
        self,
        settings: Settings,
        suite: DetectorSuite,
        sink: Sink,
        contexts: ContextStore | None = None,
        state: StateStore | None = None,
        run_id: str | None = None,
        on_batch: Callable[[BatchReport], None] | None = None,
        policy: Policy | None = None,
        own_metadata: str | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.settings = settings
        self.policy = policy or Policy.from_settings(settings)
        self.suite = suite
        self.sink = sink
        self.contexts = contexts or MemoryContextStore(settings.history_turns)
        self.gate = IngestGate(sink.engine, Retention.from_policy(self.policy))
        self.state = state if state is not None else DictStateStore()
        self.run_id = run_id
        self.on_batch = on_batch
        # The metadata key the caller writes itself (`chatmon probe`: "probe", holding ids,
        # versions, hashes): stored as is, since the redaction safety net would mask digit runs
        # in run ids and model names. Only a caller that builds every record sets it.
        self.own_metadata = own_metadata
        # The redaction stage runs whatever detectors run (pipeline/scoring/redaction.py).
        self.redactor = redactor or redaction.redaction_stage(
            suite.detectors, settings.detector_options.get("pii"))
        # Only worth guessing (0.1 ms a turn, 76 MB) when some detector reads only some languages.
        picky = any(getattr(d, "languages", None) is not None for d in suite.detectors)
        self.languages = shared_guesser() if settings.detect_language and picky else None

    def process(self, records: Sequence[RawRecord],
                ahead: Sequence[RawRecord] | None = None) -> BatchReport:
        """Validate, deduplicate, score, redact and store one batch. Bad records become dead
        letters; a failing detector loses only its own findings for this batch. ``ahead``: the
        next batch, where it is already read (``chatmon run`` on a file): the encoder starts on
        its texts while this batch is scored (the same vectors, only sooner)."""
        report = BatchReport(records=len(records), policy_version=self.policy.version)
        rejected: list[Rejected] = []
        fresh = self._fresh(records, rejected, report)
        inputs = []
        for acc in fresh:
            # The earlier turns only: a retried or redelivered batch left the turn itself (and
            # maybe later ones) there; a history is a function of turn index, not of arrival.
            history = tuple(t for t in self.contexts.history(acc.turn.conversation_id)
                            if t.turn < acc.turn.turn)
            ctx = Context(history=history, state=self.state)
            inputs.append(ScoringInput(self._with_language(acc.turn, history), ctx))
            self.contexts.append(acc.turn)
        upcoming = _turns_of(ahead, self.settings.max_text_chars) if ahead else None
        result = self.suite.score(inputs, ahead=upcoming) if inputs else None
        if result is not None:
            report.detector_seconds = result.seconds
            report.language_skipped.update(result.language_skipped)
            failed: dict[tuple[str, int], list[tuple[str, str]]] = {}
            for failure in result.failures:
                report.detector_errors[failure.detector] += len(failure.keys)
                for key in failure.keys:
                    failed.setdefault(key, []).append((failure.detector, failure.error))
            spans = self._redaction_spans(fresh, result.findings, failed, report)
            metadata = self._metadata([acc.turn for acc in fresh], report)
            for acc, found, meta, sp in zip(fresh, result.findings, metadata, spans,
                                            strict=True):
                if sp is None:  # not redactable, and the policy is to dead-letter it
                    self._unredactable(acc, report)
                    continue
                self._rows(acc, found, meta, sp, failed.get(acc.turn.key, ()), report)
        self._dead_letters(rejected, report)
        self.sink.write(report.turn_rows, report.finding_rows, report.dead_letter_rows)
        if self.on_batch is not None:
            self.on_batch(report)
        return report

    def dead_letter(self, record: RawRecord, reason: str, detail: str) -> BatchReport:
        """Store ``record`` as a dead letter and nothing else (when processing it raised)."""
        report = BatchReport(records=1)
        self._dead_letters([Rejected(record, reason, detail)], report)
        self.sink.write((), (), report.dead_letter_rows)
        if self.on_batch is not None:
            self.on_batch(report)
        return report

    def _redaction_spans(self, fresh: Sequence[Accepted], found: Sequence[list[Finding]],
                         failed: dict[tuple[str, int], list[tuple[str, str]]],
                         report: BatchReport) -> list[list[Span] | None]:
        """Each turn's redaction spans: the suite's PII findings where its PII detector scored
        the turn, else the redaction stage's own analysis. A turn it cannot analyse is fully
        masked, or ``None`` (dead-letter it) under ``redaction_failure = "dead_letter"``."""
        out: list[list[Span] | None] = []
        todo: list[int] = []
        for i, (acc, fs) in enumerate(zip(fresh, found, strict=True)):
            pii_failed = any(det == "pii" for det, _ in failed.get(acc.turn.key, ()))
            if self.redactor.shared and not pii_failed:
                out.append(pii_spans(fs))
            else:
                out.append([])
                todo.append(i)
        analysed = self.redactor.spans([fresh[i].turn.text for i in todo])
        for i, spans in zip(todo, analysed, strict=True):
            if spans is not None:
                out[i] = spans
            elif self.settings.redaction_failure == redaction.DEAD_LETTER:
                out[i] = None
            else:
                report.redaction_failures["masked"] += 1
                report.redaction_failed_turns.append(fresh[i].turn.key)
                out[i] = redaction.masked(fresh[i].turn.text)
        return out

    def _unredactable(self, acc: Accepted, report: BatchReport) -> None:
        """A turn the redaction stage could not analyse: dead-lettered without its text."""
        report.redaction_failures["dead_lettered"] += 1
        report.redaction_failed_turns.append(acc.turn.key)
        report.dead_letters[events.REDACTION_FAILED] += 1
        report.dead_letter_rows.append(self._dead_letter_row(
            acc.record, events.REDACTION_FAILED, "the PII analyser failed on this turn; it is "
            "not stored and its text is not kept", "", acc.turn.conversation_id, acc.turn.turn))

    def _with_language(self, turn: Turn, history: Sequence[Turn]) -> Turn:
        """The turn as detectors see it, in the language ``pipeline.scoring.language`` decides (the
        stored turn keeps the ``lang`` it came with)."""
        lang = turn_language(turn, history, self.settings.default_lang, self.languages)
        return turn if lang == turn.lang else replace(turn, lang=lang)

    def _fresh(self, records: Sequence[RawRecord], rejected: list[Rejected],
               report: BatchReport) -> list[Accepted]:
        """Valid, not yet stored turns. Exact duplicates (same content) are skipped silently;
        the same conversation and turn with other content is a conflicting duplicate."""
        accepted: list[Accepted] = []
        invalid: list[Rejected] = []
        for rec in records:
            res = _validate(rec, self.settings.max_text_chars)
            (accepted if isinstance(res, Accepted) else invalid).append(res)  # type: ignore[arg-type]
        accepted, invalid = self.gate.admit(accepted, invalid, report.dropped)
        rejected += invalid
        stored = self.sink.existing_hashes([turn_id(*a.turn.key) for a in accepted])
        seen: dict[str, str] = {}
        fresh: list[Accepted] = []
        for acc in accepted:
            tid = turn_id(*acc.turn.key)
            known = stored.get(tid, seen.get(tid))
            if known is None:
                seen[tid] = acc.content_hash
                fresh.append(acc)
            elif known == acc.content_hash:
                report.duplicates_skipped += 1
                if tid in stored:  # a replayed turn still belongs to its conversation's context
                    self.contexts.append(acc.turn)
            else:
                rejected.append(Rejected(
                    acc.record, events.CONFLICTING_DUPLICATE,
                    "this conversation_id and turn are already stored with different content",
                    acc.turn.conversation_id, acc.turn.turn))
        return fresh

    def _rows(self, acc: Accepted, found: list[Finding], metadata: dict[str, Any],
              spans: Sequence[Span], errors: Sequence[tuple[str, str]],
              report: BatchReport) -> None:
        turn = acc.turn
        now = datetime.now(UTC)
        tid = turn_id(*turn.key)
        redacted, mapper = redact(turn.text, spans)
        keep_raw = self.settings.keep_raw_text
        report.turn_rows.append(dict(
            id=tid, conversation_id=turn.conversation_id, turn=turn.turn, role=turn.role,
            ts=turn.ts, bot_id=turn.bot_id or "", model=turn.model or "",
            tenant=turn.tenant or "", lang=turn.lang, text_redacted=redacted,
            content_hash=acc.content_hash, n_chars=len(turn.text),
            metadata=metadata, text_raw=turn.text if keep_raw else None,
            raw_expires_at=now + timedelta(days=self.settings.raw_retention_days)
            if keep_raw else None, run_id=self.run_id, stored_at=now,
        ))
        report.turns_stored += 1
        if turn.role == "assistant":
            report.assistant_turns_scored += 1
        for f in found:
            decision = self.policy.decide(f, turn)
            flagged = decision.flagged
            report.findings[(f.detector, f.label)] += 1
            if flagged:
                report.flagged[(f.detector, f.label)] += 1
            if decision.suppressed_by is not None:
                report.suppressed[(f.detector, f.label)] += 1
            report.finding_rows.append(dict(
                id=stable_id("finding", tid, f.detector, f.detector_version, f.label, f.span),
                turn_id=tid, conversation_id=turn.conversation_id, turn=turn.turn,
                role=turn.role, ts=turn.ts, bot_id=turn.bot_id or "", model=turn.model or "",
                tenant=turn.tenant or "", detector=f.detector,
                detector_version=f.detector_version, label=f.label, score=float(f.score),
                flagged=flagged, span_start=f.span[0] if f.span else None,
                span_end=f.span[1] if f.span else None, evidence=to_json(f.evidence),
                excerpt=excerpt(redacted, mapper, f.span), run_id=self.run_id, created_at=now,
                suppressed=decision.suppressed_by is not None,
                suppressed_by=decision.suppressed_by, policy_version=self.policy.version,
            ))
        for detector, error in errors:
            report.dead_letters[events.DETECTOR_ERROR] += 1
            report.dead_letter_rows.append(self._dead_letter_row(
                acc.record, events.DETECTOR_ERROR, error, redacted[:RAW_EXCERPT_CHARS],
                turn.conversation_id, turn.turn, detector=detector))

    def _metadata(self, turns: Sequence[Turn], report: BatchReport) -> list[dict[str, Any]]:
        """Metadata is free-form and may hold PII: its string values are redacted too, in one
        analyser call for the batch."""
        own = [{self.own_metadata: t.metadata[self.own_metadata]}
               if self.own_metadata and self.own_metadata in t.metadata else {} for t in turns]
        raws = {i: json.dumps(to_json({k: v for k, v in t.metadata.items() if k not in own[i]}),
                              ensure_ascii=False)
                for i, t in enumerate(turns) if len(t.metadata) > len(own[i])}
        out: list[dict[str, Any]] = [{} for _ in turns]
        cleaned, n_masked = self.redactor.redacted(list(raws.values()))
        if n_masked:
            report.redaction_failures["text_masked"] += n_masked
        for i, redacted in zip(raws, cleaned, strict=True):
            try:
                out[i] = json.loads(redacted)
            except ValueError:
                out[i] = {"redacted": redacted}
        return [{**o, **to_json(mine)} for o, mine in zip(out, own, strict=True)]

    def _dead_letters(self, rejected: list[Rejected], report: BatchReport) -> None:
        raws = [_raw_text(r.record.data) for r in rejected]
        cleaned, n_masked = self.redactor.redacted([r[:4000] for r in raws])
        if n_masked:
            report.redaction_failures["text_masked"] += n_masked
        for rej, clean in zip(rejected, cleaned, strict=True):
            report.dead_letters[rej.reason] += 1
            report.dead_letter_rows.append(self._dead_letter_row(
                rej.record, rej.reason, rej.detail, clean[:RAW_EXCERPT_CHARS],
                rej.conversation_id, rej.turn))

    def _dead_letter_row(self, record: RawRecord, reason: str, detail: str, raw_excerpt: str,
                         conversation_id: str | None, turn: int | None,
                         detector: str | None = None) -> dict[str, Any]:
        return dict(
            id=stable_id("dead", record.source, record.position, reason, detector),
            reason=reason, detail=detail[:500], source=record.source,
            position=record.position, raw_excerpt=raw_excerpt, detector=detector,
            conversation_id=conversation_id, turn=turn, run_id=self.run_id,
            created_at=datetime.now(UTC),
        )


def _validate(record: RawRecord, max_text_chars: int) -> Accepted | Rejected:
    """``events.validate``, and should it ever raise, a dead letter for this record alone."""
    try:
        return events.validate(record, max_text_chars)
    except Exception as exc:  # one event's surprise must not fail its batch
        log.warning("validation raised %s on %s %s", type(exc).__name__, record.source,
                    record.position)
        return Rejected(record, events.PROCESSING_ERROR,
                        f"validation raised {type(exc).__name__}")


def _turns_of(records: Sequence[RawRecord], max_text_chars: int
              ) -> Callable[[], list[tuple[str, str]]]:
    """A function giving the (role, text) of each valid record of ``records``: run on the
    encoder's ahead thread, it only names texts to encode (``process`` validates them again,
    and stores nothing of this)."""
    def turns() -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for record in records:
            try:
                res = events.validate(record, max_text_chars)
            except Exception:  # noqa: BLE001,S112 - process() dead-letters it in its turn
                continue
            if isinstance(res, Accepted):
                out.append((res.turn.role, res.turn.text))
        return out

    return turns


def _raw_text(data: bytes | str | dict[str, Any]) -> str:
    """The raw input as text for its redacted dead-letter copy: JSON escapes undone first (so
    redaction sees ``a\\u0040b.com`` as an address), NUL and lone surrogates made U+FFFD."""
    if isinstance(data, bytes):
        text = data[:MAX_RAW_BYTES].decode("utf-8", errors="replace")
    elif isinstance(data, str):
        text = data[:MAX_RAW_BYTES]
    else:
        text = json.dumps(data, ensure_ascii=False, default=str)
    return limits.printable(limits.unescape_json(text))

