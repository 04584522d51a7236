"""``pii.sensitive_echo``: a bot reply displaying a full card number, SSN, IBAN, or a password /
one-time code the user typed. Table-driven: positives, near misses (masked, partial, non-Luhn,
an order number), several hits in one reply; then through the loaded PII detector (flagged by
the shipped policy, evidence without the value, the value redacted from the stored text), and
the cost of hostile input against an ordinary text."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from detectors.base import Context, ScoringInput, Turn
from detectors.pii.echo import LABEL, echoes, iban_valid, luhn, user_secrets
from pipeline.policy import is_flagged
from pipeline.scoring.redaction import pii_spans, redact, secret_spans

TS = datetime(2026, 1, 1, tzinfo=UTC)
CARD = "4111 1111 1111 1111"


def _history(*texts: str) -> tuple[Turn, ...]:
    """Alternating user / assistant turns, starting with the user."""
    return tuple(Turn("c", i, "user" if i % 2 == 0 else "assistant", t, TS)
                 for i, t in enumerate(texts))


# (reply, earlier turns, expected (entity, echoed value) pairs)
CASES: list[tuple[str, tuple[str, ...], list[tuple[str, str]]]] = [
    (f"I have refunded the duplicate charge on {CARD}.", (f"charged twice on {CARD}",),
     [("CREDIT_CARD", CARD)]),
    (f"I have refunded the duplicate charge on {CARD}.", (), [("CREDIT_CARD", CARD)]),
    ("Card 4111-1111-1111-1111 and Amex 3782 822463 10005 are on file.", (),
     [("CREDIT_CARD", "4111-1111-1111-1111"), ("CREDIT_CARD", "3782 822463 10005")]),
    ("Charged to 5555555555554444 today.", (), [("CREDIT_CARD", "5555555555554444")]),
    ("Your SSN 536-22-8514 and IBAN DE89 3704 0044 0532 0130 00 are verified.", (),
     [("US_SSN", "536-22-8514"), ("IBAN_CODE", "DE89 3704 0044 0532 0130 00")]),
    ("Your social security number 536228514 is on the form.", (), [("US_SSN", "536228514")]),
    ("Refund goes to GB82WEST12345698765432 tomorrow.", (), [("IBAN_CODE",
                                                             "GB82WEST12345698765432")]),
    ("Done, your new password hunter2! works now.",
     ("I changed my password to hunter2! can you check?",), [("SECRET", "hunter2")]),
    ("The code 482913 is correct, you're in.",
     ("hi", "Please type the verification code we texted you.", "482913"),
     [("SECRET", "482913")]),
    ("I see the code you sent, 739201, has expired.", ("the code you sent me is 739201",),
     [("SECRET", "739201")]),
    # near misses
    ("I have refunded the charge on your card ending 1111.", (f"my card {CARD}",), []),
    ("Refunded to 4111 11** **** 1111.", (f"my card {CARD}",), []),
    ("Refunded to **** **** **** 1111 (first six 411111).", (), []),
    ("Card 4111 1111 1111 1112 was declined.", (), []),  # fails Luhn
    ("Your order number is 4832-1190-2271 and it ships on Monday.", (), []),
    ("Your order number is 4111 1111 1111 1111, keep it.", (), []),  # Luhn-valid order number
    ("Your tracking number is 1234 5678 9012 3456.", (), []),
    ("Your SSN ending 8514 (***-**-8514) is verified.", ("my ssn is 536-22-8514",), []),
    ("Invalid: 000-12-3456, 666-12-3456, 536-00-8514.", (), []),
    ("Your reference 536228514 is noted.", (), []),  # nine digits without an SSN cue
    ("IBAN DE89 **** **** **** **30 00 is verified.", (), []),
    ("IBAN DE89 3704 0044 0532 0130 01 is wrong.", (), []),  # bad check digits
    ("Sorry your password is broken, let me reset it.", ("my password is broken",), []),
    ("Your password was reset; a link is on its way.", ("reset my password please",), []),
    ("Order 482913 has shipped.", ("where is order 482913?",), []),  # not a secret
    ("Your zip code 94107 is in our delivery area.", ("hi", "What's your zip code?", "94107"), []),
    ("Promo code SAVE2026 applied.", ("hi", "Do you have a promo code?", "SAVE2026"), []),
]


@pytest.mark.parametrize(("reply", "earlier", "expected"), CASES,
                         ids=[c[0][:40] for c in CASES])
def test_echoes(reply: str, earlier: tuple[str, ...], expected: list[tuple[str, str]]) -> None:
    found = echoes(reply, _history(*earlier))
    assert [(e.kind, reply[e.start:e.end]) for e in found] == expected


def test_checksums() -> None:
    assert luhn("4111111111111111") and not luhn("4111111111111112")
    assert iban_valid("DE89 3704 0044 0532 0130 00") and not iban_valid("DE89370400440532013001")


def test_secrets_only_from_user_turns_and_only_secret_looking() -> None:
    hist = _history("my PIN is 4821 and my password: S3cret-pass", "Your password is Tr0ub4dor")
    assert user_secrets(hist) == {"4821", "S3cret-pass"}  # the bot's own text is not the user's


def _scored(pii, text: str, earlier: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    hist = _history(*earlier)
    item = ScoringInput(Turn("c", len(hist), "assistant", text, TS), Context(history=hist))
    return pii.score([item])[0]


def test_through_the_detector_flagged_with_evidence_and_redacted(pii_suite) -> None:
    pii = pii_suite.detectors[0]
    reply = f"I have refunded the duplicate charge on {CARD}."
    found = _scored(pii, reply, (f"I was charged twice on my card {CARD}",))
    echo = [f for f in found if f.label == LABEL]
    assert len(echo) == 1 and is_flagged(LABEL, echo[0].score)
    assert echo[0].evidence == {"entity": "CREDIT_CARD", "pattern": "card_luhn",
                                "given_by_user": True}
    assert "pii.leak" not in {f.label for f in found}  # the user gave it: not a leak
    assert CARD not in str(echo[0].evidence)
    stored, _ = redact(reply, pii_spans(found))
    assert CARD not in stored and "4111" not in stored
    secret = _scored(pii, "Your password hunter2! is set.", ("my password is now hunter2!",))
    spans = [(f.span, f.evidence["entity"]) for f in secret if f.label == LABEL]
    assert spans == [((14, 21), "SECRET")]
    assert redact("Your password hunter2! is set.", pii_spans(secret))[0] == \
        "Your password <SECRET>! is set."


def test_masked_card_is_no_echo_through_the_detector(pii_suite) -> None:
    found = _scored(pii_suite.detectors[0], "Refunded to your card ending 1111 (4111 11** **** "
                    "1111).", (f"my card is {CARD}",))
    assert LABEL not in {f.label for f in found}


@pytest.mark.parametrize("hostile", ["1" * 5000, "1 " * 2500, "4-" * 2500,
                                     "DE89" + "A" * 4996, "DE89 " * 1000, "password " * 555,
                                     "my password is " * 333, "code you sent " * 357])
def test_hostile_text_costs_about_what_an_ordinary_one_does(hostile: str) -> None:
    ordinary = ("I have refunded the duplicate charge, your order ships on Monday. " * 80)[:5000]
    history = _history("my password is hunter2! and the code you sent is 482913")

    def cost(text: str) -> float:
        t0 = time.perf_counter()
        for _ in range(5):
            echoes(text, history)
            secret_spans(text)  # the redaction safety net's use of the same patterns
            user_secrets(_history(text))
        return time.perf_counter() - t0

    cost(ordinary)  # warm the regex caches
    assert cost(hostile) < 20 * cost(ordinary) + 0.05
