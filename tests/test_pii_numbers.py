"""No price, amount, order number, time or date is redacted as an address, a phone or a person
(issue 28: "Sorry. It's 4.99 a month and covers accidental damage" was stored as
"<STREET_ADDRESS>.99 a month ...").

The values are found with the patterns below in the example transcripts, in the bench corpus
(the support-transcript replay sample, when it sits beside the repository) and in sentences
written here; each turn holding one goes through the PII detector at its ``min_score`` (0.05:
the redaction stage masks every finding the detector stores, ``pipeline.scoring.redaction.
pii_spans``, which is how the price above was lost), and no PERSON, PHONE_NUMBER or
STREET_ADDRESS span may overlap a value. A value inside a real address or phone (a house
number, "call 0800 123 4567 at 9am") is not one of these: the patterns skip digits that an
address or phone line holds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import regex as re

from detectors.pii.detector import PiiDetector
from pipeline.bench.corpus import EXAMPLES, REPLAY, read_source

MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
         r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
VALUES = {
    "price": re.compile(
        r"[$£€]\s?\d[\d,]*(?:\.\d+)?|(?<![\d.])\d[\d,]*\.\d{2}\b(?!\.\d)"
        r"|\b\d[\d,]*(?:\.\d+)?\s?(?:dollars|euros|pounds|bucks|USD|EUR|GBP)\b"),
    "time": re.compile(r"(?i)\b\d{1,2}:\d{2}(?:\s?[ap]\.?m\.?)?|\b\d{1,2}\s?[ap]\.?m\.?(?!\w)"),
    "date": re.compile(
        rf"(?<![\d.])(?:\d{{4}}[/.-]\d{{1,2}}[/.-]\d{{1,2}}|\d{{1,2}}[/.-]\d{{1,2}}[/.-]"
        rf"(?:\d{{4}}|\d{{2}}))(?![\d.]*\d)|\b{MONTH}\.?\s\d{{1,2}}(?:st|nd|rd|th)?"
        rf"(?:,?\s\d{{4}})?\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s(?:of\s)?{MONTH}\b(?:\s\d{{4}})?"),
    "order": re.compile(
        r"(?i)\b(?:order|ticket|case|reference|ref|confirmation|booking|invoice|tracking|"
        r"reservation)\s*(?:number|no\.?|code|id)?\s*(?:is\s*)?[:#]?\s*"
        r"(?-i:([A-Z]{0,4}-?\d[\dA-Z-]{3,}))"),
}
# A line that names a street, a phone cue or a unit: its digits may be an address or a phone.
_ADDRESS_OR_PHONE = re.compile(
    r"(?i)\b(?:street|st\.|avenue|ave|road|rd\.?|lane|drive|blvd|boulevard|way|suite|apt|"
    r"floor|call|phone|tel|ring|text|mobile|number is|dial|fax)\b")
WRITTEN = (
    "Sorry. It's 4.99 a month and covers accidental damage.",
    "It's 12.50 per month, or 120.00 for the year.",
    "The total was 1,249.00 including delivery.",
    "You were charged €89.99 on 03/11/2026 and again on 04/11/2026.",
    "Your order 4832-1190-2271 ships on Monday.",
    "Booking reference AB-77120 is confirmed for 14:30.",
    "The engineer arrives between 8am and 12 pm on 5th of March.",
    "Refund of $18.40 issued on March 3rd, 2026 at 10:15 am.",
    "Ticket #A-5512093 was closed on 2026-02-14.",
    "Invoice INV-20931 for 349 euros is attached.",
    "It costs 7.49 a week. Cancel any time before 23:59.",
    "Price drops to 99.00 on 1 December.",
)
ENTITIES = {"PERSON", "PHONE_NUMBER", "STREET_ADDRESS"}


def values(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of each price, amount, time, date or order number in ``text``."""
    out = []
    for kind, pattern in VALUES.items():
        for m in pattern.finditer(text):
            s, e = m.span(m.lastindex or 0) if kind == "order" else m.span()
            line_start = text.rfind("\n", 0, s) + 1
            line_end = text.find("\n", e)
            if _ADDRESS_OR_PHONE.search(text[line_start:line_end if line_end >= 0 else None]):
                continue
            out.append((s, e, kind))
    return out


def _texts() -> list[str]:
    sources = [EXAMPLES] + ([REPLAY] if REPLAY.is_file() else [])
    texts = [str(e["text"]) for path in sources for e in read_source(Path(path))]
    return list(dict.fromkeys(t for t in [*WRITTEN, *texts] if values(t)))


@pytest.fixture(scope="module")
def pii() -> PiiDetector:
    det = PiiDetector(cache_size=0)
    det.load()
    return det


def test_the_patterns_find_the_values() -> None:
    found = {kind for t in WRITTEN for _, _, kind in values(t)}
    assert found == set(VALUES)
    first = WRITTEN[0]
    assert [(first[s:e], k) for s, e, k in values(first)] == [("4.99", "price")]
    assert [t for t in (json.loads(x)["text"] for x in EXAMPLES.read_text().splitlines())
            if "4.99 a month" in t], "the example transcript with the price is gone"


def test_no_price_time_date_or_order_number_is_redacted_as_pii(pii: PiiDetector) -> None:
    texts = _texts()
    assert len(texts) > 40  # the examples alone hold dozens
    wrong = []
    for text, found in zip(texts, pii.analyze(texts, pii.min_score), strict=True):
        for s, e, kind in values(text):
            for r in found:
                if r.entity_type in ENTITIES and r.start < e and s < r.end:
                    wrong.append((kind, text[s:e], r.entity_type, round(r.score, 2),
                                  text[max(0, s - 30):e + 30]))
    assert not wrong, "\n".join(map(str, wrong[:20]))
