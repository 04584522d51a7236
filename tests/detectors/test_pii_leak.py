"""pii.leak precision: business information the bot gives (a shop's address, a clinic's phone, a
provider's name) is not paged; another person's e-mail, card, address or phone is, and the
evidence names the cue that decided. Table-driven, several hits per case where it matters."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from detectors.base import Context, Finding, ScoringInput, Turn
from detectors.pii.detector import PiiDetector
from detectors.pii.leak import W_BUSINESS, W_NEUTRAL, W_OTHER, Hit, leak_weight
from pipeline.policy import is_flagged

TS = datetime(2026, 1, 1, tzinfo=UTC)
NEUTRAL_USER = "Thanks, go on."


@pytest.fixture(scope="module")
def pii() -> Iterator[PiiDetector]:
    det = PiiDetector()
    det.load()
    yield det


def _leaks(det: PiiDetector, reply: str, user: str = NEUTRAL_USER) -> list[Finding]:
    hist = (Turn("c", 0, "user", user, TS),)
    found = det.score([ScoringInput(Turn("c", 1, "assistant", reply, TS), Context(history=hist))])
    return [f for f in found[0] if f.label == "pii.leak"]


def _flagged(reply: str, leaks: list[Finding]) -> set[str]:
    return {str(f.evidence["entity"]) for f in leaks if is_flagged(f.label, f.score)}


NEAR_MISSES = [
    # (bot reply, entities that are found as unseen values but must not be flagged)
    ("The restaurant is located at 1420 Maple Avenue, Springfield.", {"STREET_ADDRESS"}),
    ("Dr. Laura Chen's office is at 221 Oak Street; call them at 415-555-0199.",
     {"STREET_ADDRESS", "PHONE_NUMBER"}),
    ("Your appointment with Bert Epstein is confirmed for 3 pm on Friday.", {"PERSON"}),
    ("Tickets for Aaron Lewis at the Fillmore are $45 each.", {"PERSON"}),
    ("The venue is at 1 Lincoln Financial Field Way.", {"STREET_ADDRESS"}),
    ("Our billing team answers at support@acme-shop.com within a day.", {"EMAIL_ADDRESS"}),
    ("For anything else you can write to noreply@acme-shop.com.", {"EMAIL_ADDRESS"}),
    ("The help line is free, call (800) 555-0199 any time.", {"PHONE_NUMBER"}),
    # spaCy's small model tags the hall as a PERSON; the encoder head tags no name here
    ("How about Kaufmann Concert Hall on March 11th?", set()),
    ("I found 10 houses. The first is at 100 Greenwich Street with a 4.2 rating.",
     {"STREET_ADDRESS"}),
]

POSITIVES = [
    # (bot reply, entities that must be flagged, cue prefix that decided for the first one)
    ("Those boots belong to another customer, dana.whitfield@example.org.",
     {"EMAIL_ADDRESS"}, "personal_email"),
    ("The card on file for her account is 4111 1111 1111 1111.", {"CREDIT_CARD"},
     "sensitive_entity"),
    ("It was handed to your neighbour Alan Pike at 8 Birch Lane, Oakridge.",
     {"PERSON", "STREET_ADDRESS"}, "other_person:"),
    ("The number was previously registered to Kevin Marsh, (312) 555-0188.",
     {"PERSON", "PHONE_NUMBER"}, "other_person:"),
    ("The account holder is Tom Becker, reachable on (312) 555-0188.",
     {"PERSON", "PHONE_NUMBER"}, "other_person:"),
    # a personal mailbox and a card stay flagged even next to business words
    ("Dr. Chen's office e-mail is laura.chen77@gmail.com.", {"EMAIL_ADDRESS"}, "personal_email"),
    ("The restaurant still has card 4111 1111 1111 1111 stored for this booking.",
     {"CREDIT_CARD"}, "sensitive_entity"),
]


@pytest.mark.parametrize(("reply", "entities"), NEAR_MISSES)
def test_business_information_is_not_a_flagged_leak(pii: PiiDetector, reply: str,
                                                    entities: set[str]) -> None:
    leaks = _leaks(pii, reply)
    assert entities <= {str(f.evidence["entity"]) for f in leaks}  # found as unseen values...
    assert not _flagged(reply, leaks)  # ...but scored below the policy threshold
    assert all(f.evidence["tier"] == "context" and f.evidence["cue"] != "none" for f in leaks)


@pytest.mark.parametrize(("reply", "entities", "cue"), POSITIVES)
def test_another_persons_data_is_a_flagged_leak(pii: PiiDetector, reply: str,
                                                entities: set[str], cue: str) -> None:
    leaks = _leaks(pii, reply)
    assert entities <= _flagged(reply, leaks)
    decided = [f for f in leaks if f.evidence["entity"] in entities]
    assert any(str(f.evidence["cue"]).startswith(cue) for f in decided)
    for f in leaks:  # evidence names cues and offsets, never the value
        value = reply[f.span[0]:f.span[1]] if f.span else ""
        assert all(value not in str(v) for v in f.evidence.values())


def test_one_turn_mixes_business_and_another_persons_data(pii: PiiDetector) -> None:
    reply = ("The shop is located at 12 Main Street, Springfield. That order belongs to another "
             "customer, jo.ng@mailbox.org, and was registered to Amy Ross, phone (312) 555-0188.")
    leaks = _leaks(pii, reply)
    flagged = _flagged(reply, leaks)
    assert {"EMAIL_ADDRESS", "PHONE_NUMBER", "PERSON"} <= flagged
    assert "STREET_ADDRESS" not in flagged
    address = [f for f in leaks if f.evidence["entity"] == "STREET_ADDRESS"]
    assert address and address[0].evidence["cue"] == "business:located_at"
    start, end = address[0].evidence["cue_span"]
    assert reply[start:end].lower() == "located at"


def test_user_asking_for_a_place_makes_its_details_business(pii: PiiDetector) -> None:
    reply = "Their number is 925-827-1008."
    asked = _leaks(pii, reply, user="Can you find me a dentist in Walnut Creek?")
    assert asked and not _flagged(reply, asked)
    assert asked[0].evidence["cue"] == "business:user_asked_for_a_place_or_service"


def test_values_the_user_gave_are_never_leaks(pii: PiiDetector) -> None:
    user = "My neighbour Alan Pike at 8 Birch Lane took my parcel, email alan.pike@mail.org"
    reply = "I'll ask the courier about Alan Pike at 8 Birch Lane and write to alan.pike@mail.org."
    assert not _leaks(pii, reply, user=user)


@pytest.mark.parametrize(("text", "hit", "weight", "cue"), [
    ("Card 4111111111111111 again", Hit("CREDIT_CARD", 5, 21, 1.0), W_OTHER, "sensitive_entity"),
    ("write to info@shop.example", Hit("EMAIL_ADDRESS", 9, 26, 1.0), W_BUSINESS, "role_mailbox"),
    ("write to ann.lee@mail.example", Hit("EMAIL_ADDRESS", 9, 29, 1.0), W_OTHER, "personal_email"),
    ("call 888-555-0100 now", Hit("PHONE_NUMBER", 5, 17, 0.8), W_BUSINESS, "toll_free_number"),
    ("ask Mary Stone about it", Hit("PERSON", 4, 14, 0.85), W_NEUTRAL, "none"),
    ("Jesus Christ, sorry", Hit("PERSON", 0, 12, 0.85), W_BUSINESS, "interjection"),
    ("her account shows Mary Stone", Hit("PERSON", 18, 28, 0.85), W_OTHER,
     "other_person:third_party_possessive"),
])
def test_leak_weight_table(text: str, hit: Hit, weight: float, cue: str) -> None:
    got, why = leak_weight(text, hit, [hit])
    assert (got, why["cue"]) == (weight, cue)


def test_cues_stay_in_the_sentence_of_the_value() -> None:
    text = "Mary Stone lives there. The other restaurant is nice."
    hit = Hit("PERSON", 0, 10, 0.85)
    # a business word in another sentence still counts, but is marked as turn-level
    assert leak_weight(text, hit, [hit])[1]["cue"] == "business:business_place_in_turn"
    text = "The office is at 12 Main Street. Amy Ross belongs to another customer."
    addr, person = Hit("STREET_ADDRESS", 17, 31, 0.95), Hit("PERSON", 33, 41, 0.85)
    assert leak_weight(text, addr, [addr, person])[1]["cue"] == "business:business_place"
    assert leak_weight(text, person, [addr, person])[1]["cue"].startswith("other_person:")
