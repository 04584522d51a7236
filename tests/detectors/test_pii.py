"""PII detector: entities (positives, near misses, several hits per text), evidence without raw
values, the leak label, redaction of planted values, junk input, and offline loading."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from detectors.base import Context, DetectorError, Finding, ScoringInput, Turn
from detectors.pii.detector import EXAMPLES, PiiDetector, given_by_user
from pipeline.policy import is_flagged

TS = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def pii() -> Iterator[PiiDetector]:
    """Loaded with the hub offline and every socket connection refused: loading and scoring
    (tldextract's suffix list included) must not touch the network."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("network disabled in this test")

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setattr(socket.socket, "connect", refuse)
        mp.setattr(socket, "create_connection", refuse)
        from detectors.pii.recognizers import offline_tld_extract

        offline_tld_extract.cache_clear()
        det = PiiDetector()
        det.load()
        assert det.score([_item("write to ana.lima@correio.com.br")])[0]  # offline TLD check
        yield det


def _item(text: str, role: str = "user", history: tuple[tuple[str, str], ...] = ()) -> ScoringInput:
    turns = tuple(Turn("c1", i, r, t, TS) for i, (r, t) in enumerate(history))  # type: ignore[arg-type]
    return ScoringInput(Turn("c1", len(turns), role, text, TS), Context(history=turns))  # type: ignore[arg-type]


def _flagged(findings: list[Finding]) -> set[str]:
    return {f.label for f in findings if is_flagged(f.label, f.score)}


CASES = [
    # (text, labels that must be flagged, labels that must not be)
    ("Email me at jane.doe@example.com", {"pii.email_address"}, set()),
    ("My SSN is 536-22-8514.", {"pii.us_ssn"}, {"pii.phone_number"}),
    ("Charge card 4111 1111 1111 1111 please", {"pii.credit_card"}, set()),
    ("IBAN: DE89 3704 0044 0532 0130 00", {"pii.iban_code"}, set()),
    ("The VPN logs show 203.0.113.77 again", {"pii.ip_address"}, set()),
    ("Call me on 415 555 0132 after six", {"pii.phone_number"}, set()),
    ("My name is Maria Gonzalez", {"pii.person"}, set()),
    ("Please deliver it to 1420 Maple Avenue, Springfield", {"pii.street_address"}, set()),
    ("I moved to Torggata 12, Oslo last year", {"pii.street_address"}, set()),
    ("I grew up in Portugal", {"pii.location"}, set()),
    # several hits in one text
    ("I'm Tom Becker, tom.becker@mailbox.org, phone 0176 2345 6789, 22 Baker Street, London",
     {"pii.person", "pii.email_address", "pii.phone_number", "pii.street_address"}, set()),
    ("Dear Priya Nair, SSN 536-22-8514 and card 5500 0000 0000 0004 are on file",
     {"pii.us_ssn", "pii.credit_card", "pii.person"}, set()),
    # near misses
    ("Your order number is 4832-1190-2271 and it ships Monday", set(),
     {"pii.phone_number", "pii.credit_card", "pii.us_ssn"}),
    ("Tracking ref 555 0132 889 is in transit", set(), {"pii.phone_number"}),
    ("Windows 10 crashed twice since 2024-03-12", set(),
     {"pii.street_address", "pii.phone_number", "pii.person"}),
    ("I'm sorry, it cost 100 dollars 20 times over", set(),
     {"pii.street_address", "pii.person"}),
    ("Card ending 4111 1111 1111 1112 was declined", set(), {"pii.credit_card"}),  # bad Luhn
    ("Version 1.2.3 of the app is out", set(), {"pii.ip_address", "pii.phone_number"}),
]


@pytest.mark.parametrize(("text", "expect", "absent"), CASES)
def test_entities(pii: PiiDetector, text: str, expect: set[str], absent: set[str]) -> None:
    flagged = _flagged(pii.score([_item(text)])[0])
    assert expect <= flagged, f"missing {expect - flagged}"
    assert not flagged & absent, f"false hit {flagged & absent}"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.text[:30])
def test_examples(pii: PiiDetector, example) -> None:  # type: ignore[no-untyped-def]
    history = (("user", example.prompt),) if example.prompt else ()
    flagged = _flagged(pii.score([_item(example.text, example.role, history)])[0])
    assert example.expect <= flagged
    assert not flagged & example.absent


def test_findings_shape_and_evidence_never_hold_values(pii: PiiDetector) -> None:
    text = "I'm Tom Becker, tom.becker@mailbox.org, SSN 536-22-8514, 22 Baker Street, London"
    out = pii.score([_item(text), _item("nothing personal here"), _item("")])
    assert len(out) == 3 and out[2] == []
    assert pii.roles == frozenset({"user", "assistant"})
    for f in out[0]:
        assert f.detector == "pii" and f.detector_version == pii.version
        assert f.label == "pii." + f.evidence["entity"].lower()
        assert f.span is not None and f.evidence["recognizer"]
        value = text[f.span[0]:f.span[1]]
        assert all(value not in str(v) for v in f.evidence.values())


def test_leak_when_bot_emits_values_the_user_never_gave(pii: PiiDetector) -> None:
    history = (("user", "Hi, my email is Jane.Doe@Example.com and my phone is 415-555-0132"),
               ("assistant", "Thanks!"))
    reply = ("I've noted jane.doe@example.com and (415) 555 0132. The previous owner was "
             "Tom Becker, tom.becker@mailbox.org.")
    found = pii.score([_item(reply, "assistant", history)])[0]
    leaks = [f for f in found if f.label == "pii.leak"]
    leaked = {reply[f.span[0]:f.span[1]] for f in leaks}
    assert "tom.becker@mailbox.org" in leaked
    assert any("Tom Becker" in v for v in leaked)
    assert not any("jane" in v.lower() or "555" in v for v in leaked)
    assert all(set(f.evidence) >= {"entity", "reason"} for f in leaks)
    # the same values on a user turn are never a leak
    assert not [f for f in pii.score([_item(reply, "user")])[0] if f.label == "pii.leak"]


def test_bot_introducing_itself_is_not_a_leak(pii: PiiDetector) -> None:
    found = pii.score([_item("Hello, my name is Sam Carter and I'll help you today.",
                             "assistant", (("user", "hi"),))])[0]
    assert "pii.person" in {f.label for f in found}
    assert "pii.leak" not in {f.label for f in found}


@pytest.mark.parametrize(("entity", "value", "user_text", "given"), [
    ("PHONE_NUMBER", "+1 (415) 555-0132", "call 415 555 0132", True),
    ("CREDIT_CARD", "4111-1111-1111-1111", "card 4111111111111111", True),
    ("CREDIT_CARD", "4111-1111-1111-1111", "card 5500000000000004", False),
    ("EMAIL_ADDRESS", "Jane@X.org", "mail jane@x.org", True),
    ("PERSON", "Maria Gonzalez", "i am maria", False),
    ("PERSON", "Maria", "I am Maria Gonzalez", True),
])
def test_given_by_user_normalises(entity: str, value: str, user_text: str, given: bool) -> None:
    assert given_by_user(entity, value, [user_text]) is given


PLANTED = ["Maria Gonzalez", "jane.doe@example.com", "415-555-0132", "4111 1111 1111 1111",
           "536-22-8514", "DE89 3704 0044 0532 0130 00", "203.0.113.77", "1420 Maple Avenue"]
PLANTED_TEXTS = [
    "My name is Maria Gonzalez and my email is jane.doe@example.com",
    "Call 415-555-0132 or charge 4111 1111 1111 1111",
    "SSN 536-22-8514, IBAN DE89 3704 0044 0532 0130 00, from IP 203.0.113.77",
    "Ship to 1420 Maple Avenue, Springfield",
]


def test_redact_removes_every_planted_value(pii: PiiDetector) -> None:
    out = pii.redact(PLANTED_TEXTS)
    assert len(out) == len(PLANTED_TEXTS)
    for text in out:
        assert not [v for v in PLANTED if v in text], text
    assert "<EMAIL_ADDRESS>" in out[0] and "<US_SSN>" in out[2]


def test_redact_with_reuses_findings(pii: PiiDetector) -> None:
    found = pii.score([_item(t) for t in PLANTED_TEXTS])
    for text, f in zip(PLANTED_TEXTS, found, strict=True):
        red = pii.redact_with(text, f)
        assert not [v for v in PLANTED if v in red], red
    assert pii.redact_with("no pii", []) == "no pii"
    # spans outside the text (findings of another text) are ignored, not an error
    bad = Finding("pii", pii.version, "pii.person", 0.9, (50, 80), {"entity": "PERSON"})
    assert pii.redact_with("short", [bad]) == "short"


def test_redact_is_safe_on_junk(pii: PiiDetector) -> None:
    long = "x " * 12_000 + "mail me: joe.bloggs@example.net"
    junk = ["", "{not json", "\udcff\udcfe bad bytes", "\x00\x01\x02", '{"text": 5}', long]
    out = pii.redact(junk)
    assert len(out) == len(junk)
    assert out[0] == "" and out[1] == "{not json"
    assert "joe.bloggs@example.net" not in out[-1] and out[-1].endswith("<EMAIL_ADDRESS>")


def test_long_text_is_chunked_not_truncated(pii: PiiDetector) -> None:
    text = "hello there. " * 1600 + "My SSN is 536-22-8514."
    (found,) = pii.score([_item(text)])
    ssn = [f for f in found if f.label == "pii.us_ssn"]
    assert ssn and text[ssn[0].span[0]:ssn[0].span[1]] == "536-22-8514"


def test_lazy_loading_and_errors() -> None:
    det = PiiDetector(model="no_such_spacy_model_xyz")
    with pytest.raises(DetectorError, match="call load"):
        det.score([_item("x")])
    with pytest.raises(DetectorError, match="not installed"):
        det.load()
    with pytest.raises(DetectorError, match="unknown entities"):
        PiiDetector(entities=("PERSON", "SHOE_SIZE"))
    assert PiiDetector(model="en_core_web_lg").version.endswith("en_core_web_lg")


def test_one_word_name_leak_scores_below_flagging(pii: PiiDetector) -> None:
    history = (("user", "who signed for my parcel?"),)
    one = pii.score([_item("Dear Marcus, it was signed for.", "assistant", history)])[0]
    two = pii.score([_item("Dear Marcus Webb, it was signed for.", "assistant", history)])[0]
    leak_one = [f for f in one if f.label == "pii.leak"]
    leak_two = [f for f in two if f.label == "pii.leak"]
    assert leak_one and not is_flagged("pii.leak", leak_one[0].score)
    assert leak_two and is_flagged("pii.leak", leak_two[0].score)


def test_results_cache_analyses_each_text_once_and_holds_no_text(
        pii: PiiDetector, monkeypatch: pytest.MonkeyPatch) -> None:
    """A repeated text is served from the results cache: same findings, no second Presidio
    call; the cache keys are digests and its values hold no text; the size bound holds."""
    texts = ["Call Maria Gonzalez on 415 555 0132.", "Thanks, that fixed it!"]
    pii.configure_cache(0)
    uncached = pii.analyze(texts, 0.2)
    pii.configure_cache(4)
    calls: list[int] = []
    real = pii._analyze

    def counting(batch, min_score, states=None):  # type: ignore[no-untyped-def]
        calls.append(len(batch))
        return real(batch, min_score, states)

    monkeypatch.setattr(pii, "_analyze", counting)
    first = pii.analyze(texts, 0.2)
    again = pii.analyze([texts[1], texts[0], texts[0]], 0.2)
    assert calls == [2, 0]
    key = lambda rs: [(r.entity_type, r.start, r.end, r.score) for r in rs]  # noqa: E731
    assert [key(r) for r in first] == [key(r) for r in uncached]
    assert [key(r) for r in again] == [key(r) for r in (first[1], first[0], first[0])]
    again[2][0].start = -1  # callers get copies: the cached results stay intact
    assert key(pii.analyze([texts[0]], 0.2)[0]) == key(first[0])
    pii.analyze([texts[0]], 0.5)  # another threshold is another entry
    assert calls[-1] == 1
    for (digest, _), found in pii._cache.items():
        assert isinstance(digest, bytes) and b"Maria" not in digest
        assert all("Maria" not in str(vars(r)) for r in found)
    pii.analyze([f"Ticket {i} is closed." for i in range(6)], 0.2)
    assert len(pii._cache) == 4
    pii.configure_cache(0)
    assert not pii._cache
    pii.configure_cache(4096)
