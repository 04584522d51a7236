"""Redaction of every text before it is stored, logged or dead-lettered.

Spans come from the PII detector's findings (so a turn is analysed once). A safety net masks
what must never survive even if the analyser missed it: e-mail addresses and runs of 7 or more
digits (phone, card, account and SSN fragments). Redaction is recall-first by design.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from detectors.base import Detector, Finding, ScoringInput, Turn

# The local part at most 64 characters (RFC 5321): unbounded, each position of a long token was
# scanned to its end (quadratic: 0.7-1.1 s on one 20,000-character token).
_EMAIL = re.compile(r"[\w.+-]{1,64}@[\w-]+(?:\.[\w-]+)+")
_DIGITS = re.compile(r"\+?\d(?:[\s().-]{0,2}\d){6,}")
_SAFETY_NET = (("EMAIL_ADDRESS", _EMAIL), ("NUMBER", _DIGITS))

Span = tuple[int, int, str]


def pii_spans(findings: Sequence[Finding]) -> list[Span]:
    """(start, end, ENTITY) of every PII finding with a span (leaks repeat entity spans)."""
    out = []
    for f in findings:
        if f.detector == "pii" and f.span is not None and f.label != "pii.leak":
            entity = str(f.evidence.get("entity") or f.label.split(".", 1)[1]).upper()
            out.append((f.span[0], f.span[1], entity))
    return out


def redact(text: str, spans: Sequence[Span]) -> tuple[str, Callable[[int], int]]:
    """``text`` with each span (and each safety-net match) replaced by ``<ENTITY>``; also returns
    a function mapping an offset in ``text`` to the matching offset in the result."""
    all_spans = list(spans)
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
    """Redacts free text (e.g. raw dead-letter input) with the PII detector, in batches."""

    def __init__(self, pii: Detector | None) -> None:
        self.pii = pii

    def texts(self, texts: Sequence[str]) -> list[str]:
        if not texts:
            return []
        if self.pii is None:
            return [redact(t, [])[0] for t in texts]
        ts = datetime(1970, 1, 1, tzinfo=UTC)
        batch = [ScoringInput(Turn("redact", i, "user", t, ts)) for i, t in enumerate(texts)]
        found = self.pii.score(batch)
        return [redact(t, pii_spans(f))[0] for t, f in zip(texts, found, strict=True)]
