"""Redaction of every text before it is stored, logged or dead-lettered: a stage of its own.

Spans come from a PII analyser: the PII detector's findings when ``pii`` is among the detectors
(so a turn is analysed once), otherwise the redaction stage's own PII detector, whatever
``CHATMON_DETECTORS`` says. A safety net then masks what must never survive even if the
analyser missed it: e-mail addresses, runs of 7 or more digits (phone, card, account and SSN
fragments), and a password or one-time code after its cue word ("my password is ...", "the
code you sent is ..."). Redaction is recall-first by design.

It fails closed: when the analyser raises on a batch, each text is analysed alone; a text it
still fails on is never stored as written but fully masked (``<REDACTION_FAILED>``), or, for a
turn under ``CHATMON_REDACTION_FAILURE=dead_letter``, dead-lettered without its text
(``pipeline/scoring/process.py``). Only a caller whose text was redacted before (the Kafka
stage 2 reads stored, redacted turns) uses the safety net alone (``Redactor(None)``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from detectors.base import Detector, Finding, ScoringInput, Turn
from detectors.pii.echo import SECRET_CUE, TRAILING, looks_secret
from pipeline.errors import DetectorShapeError

log = logging.getLogger(__name__)

# The local part at most 64 characters (RFC 5321): unbounded, each position of a long token was
# scanned to its end (quadratic: 0.7-1.1 s on one 20,000-character token).
_EMAIL = re.compile(r"[\w.+-]{1,64}@[\w-]+(?:\.[\w-]+)+")
_DIGITS = re.compile(r"\+?\d(?:[\s().-]{0,2}\d){6,}")
_SAFETY_NET = (("EMAIL_ADDRESS", _EMAIL), ("NUMBER", _DIGITS))

Span = tuple[int, int, str]
FAILED = "REDACTION_FAILED"
# CHATMON_REDACTION_FAILURE: what becomes of a turn the analyser cannot redact.
MASK = "mask"
DEAD_LETTER = "dead_letter"


def pii_spans(findings: Sequence[Finding]) -> list[Span]:
    """(start, end, ENTITY) of every PII finding with a span (leaks repeat entity spans)."""
    out = []
    for f in findings:
        if f.detector == "pii" and f.span is not None and f.label not in _REPEATS:
            entity = str(f.evidence.get("entity") or f.label.split(".", 1)[1]).upper()
            out.append((f.span[0], f.span[1], entity))
    return out


# pii.leak repeats an entity's span; pii.sensitive_echo is kept: a password or one-time code the
# bot echoed has no entity finding of its own.
_REPEATS = frozenset({"pii.leak"})


def masked(text: str) -> list[Span]:
    """The one span that masks all of ``text`` (for a text the analyser could not read)."""
    return [(0, len(text), FAILED)]


def secret_spans(text: str) -> list[Span]:
    """Passwords and one-time codes after their cue word (``detectors/pii/echo.py``'s patterns):
    the value only, so "my password is <SECRET>" still says what was masked."""
    out: list[Span] = []
    for m in SECRET_CUE.finditer(text):
        value = m.group(1).rstrip(TRAILING)
        if looks_secret(value):
            out.append((m.start(1), m.start(1) + len(value), "SECRET"))
    return out


def redact(text: str, spans: Sequence[Span]) -> tuple[str, Callable[[int], int]]:
    """``text`` with each span (and each safety-net match) replaced by ``<ENTITY>``; also returns
    a function mapping an offset in ``text`` to the matching offset in the result."""
    all_spans = list(spans) + secret_spans(text)
    for entity, pattern in _SAFETY_NET:
        all_spans += [(m.start(), m.end(), entity) for m in pattern.finditer(text)]
    merged: list[list[Any]] = []
    for s, e, ent in sorted(all_spans):
        if merged and s < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e, ent])
    parts: list[str] = []
    shifts: list[tuple[int, int, int, int]] = []  # (start, end) in text -> (start, end) in output
    pos = out_len = 0
    for s, e, ent in merged:
        parts.append(text[pos:s])
        out_len += s - pos
        token = f"<{ent}>"
        shifts.append((s, e, out_len, out_len + len(token)))
        parts.append(token)
        out_len += len(token)
        pos = e
    parts.append(text[pos:])

    def mapper(offset: int) -> int:
        delta = 0
        for s, e, out_s, out_e in shifts:
            if offset < s:
                break
            if offset < e:
                return out_s
            delta = out_e - e
        return offset + delta

    return "".join(parts), mapper


def excerpt(redacted: str, mapper: Callable[[int], int], span: tuple[int, int] | None,
            width: int = 60) -> str:
    """A short excerpt of the redacted text around ``span`` (or its start when there is none)."""
    if span is None:
        s, e = 0, min(len(redacted), 2 * width)
    else:
        s, e = mapper(span[0]), mapper(span[1])
        s, e = max(0, s - width // 2), min(len(redacted), max(e, s) + width // 2)
    snippet = redacted[s:e].replace("\n", " ")
    return ("…" if s > 0 else "") + snippet + ("…" if e < len(redacted) else "")


class Redactor:
    """The redaction stage's analyser: PII spans for a batch of texts, failing closed.

    ``pii`` is the PII detector (shared with the suite when it runs there, so a text is analysed
    once); ``None`` means the texts were redacted before and only the safety net runs.
    ``shared`` says the suite's own PII findings already cover the turns it scored."""

    def __init__(self, pii: Detector | None, shared: bool = False) -> None:
        self.pii = pii
        self.shared = shared and pii is not None

    def load(self) -> None:
        if self.pii is not None:
            self.pii.load()

    def spans(self, texts: Sequence[str]) -> list[list[Span] | None]:
        """PII spans per text; ``None`` for a text the analyser fails on, alone too."""
        pii = self.pii
        if pii is None or not texts:
            return [[] for _ in texts]
        try:
            return [pii_spans(f) for f in _analyse(pii, texts)]
        except Exception as exc:  # the type only: a message can quote the text
            log.warning("redaction: the PII analyser failed on a batch of %d (%s); "
                        "retrying text by text", len(texts), type(exc).__name__)
        out: list[list[Span] | None] = []
        errors: set[str] = set()
        for text in texts:
            try:
                out.append(pii_spans(_analyse(pii, [text])[0]))
            except Exception as exc:
                errors.add(type(exc).__name__)
                out.append(None)
        if errors:  # one line per batch, not per text
            log.warning("redaction: the PII analyser still failed on %d of %d texts alone (%s); "
                        "they are never stored as written", sum(s is None for s in out),
                        len(texts), ", ".join(sorted(errors)))
        return out

    def redacted(self, texts: Sequence[str]) -> tuple[list[str], int]:
        """Each text redacted, and how many had to be fully masked."""
        spans = self.spans(texts)
        out = [redact(t, masked(t) if s is None else s)[0]
               for t, s in zip(texts, spans, strict=True)]
        return out, sum(s is None for s in spans)

    def texts(self, texts: Sequence[str]) -> list[str]:
        """Each text redacted (a text the analyser fails on: fully masked)."""
        return self.redacted(texts)[0]


def _analyse(pii: Detector, texts: Sequence[str]) -> list[list[Finding]]:
    pii.load()
    ts = datetime(1970, 1, 1, tzinfo=UTC)
    batch = [ScoringInput(Turn("redact", i, "user", t, ts)) for i, t in enumerate(texts)]
    found = pii.score(batch)
    if not isinstance(found, list) or len(found) != len(texts):
        raise DetectorShapeError(f"the PII analyser returned no list of {len(texts)} results")
    return found


def redaction_stage(detectors: Sequence[Detector],
                    pii_options: dict[str, Any] | None = None) -> Redactor:
    """The stage for a suite: its PII detector when it has one, else a PII detector of its own
    (loaded with :meth:`Redactor.load`, once per worker), so redaction never depends on which
    detectors run."""
    pii = next((d for d in detectors if d.name == "pii"), None)
    if pii is not None:
        return Redactor(pii, shared=True)
    from detectors import registry

    return Redactor(registry.create("pii", pii_options or {}))
