"""The recognizers added for issue 17 (names, phones, places on unseen phrasing): sentences we
wrote ourselves, with near misses, through the whole detector; the given-name list's builder;
and a hostile digit run costing about what ordinary text of the same length costs."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from detectors.base import Context, ScoringInput, Turn
from detectors.pii.detector import PiiDetector
from detectors.pii.names import FIRST_NAMES_FILE, first_names
from detectors.pii.recognizers import valid_phone_region
from pipeline.policy import is_flagged

TS = datetime(2026, 1, 1, tzinfo=UTC)


def _flagged(det: PiiDetector, text: str) -> dict[str, list[str]]:
    """Flagged values per entity (the test reads values; findings themselves never hold them)."""
    out: dict[str, list[str]] = {}
    item = ScoringInput(Turn("c", 0, "user", text, TS), Context())
    for f in det.score([item])[0]:
        if f.span is not None and is_flagged(f.label, f.score):
            out.setdefault(f.evidence["entity"], []).append(text[f.span[0]:f.span[1]])
    return out


NAME_CASES = [
    # (text, names that must be flagged as PERSON (substring of a flagged span), words that must
    #  not be inside any flagged PERSON span)
    ("Magnus spent a year fixing the billing system", ["Magnus"], []),
    ("Why is Rebecca so impatient with the courier?", ["Rebecca"], []),
    ("ok so Ilaria Conti and Maria need access to the shared folder", ["Ilaria Conti", "Maria"],
     []),
    ("Please ask Maria Gonzalez about the refund", ["Maria Gonzalez"], []),
    # "Aleja" (Polish: avenue) starts "Alejandra" but is not a street prefix there
    ("please cancel the subscription for Alejandra, she moved out", ["Alejandra"], []),
    # near misses: given names that are English words, company names after a given name
    ("May I ask why the parcel is late? Will you refund it?", [], ["May", "Will"]),
    ("Hope this helps, Summer sale ends Friday", [], ["Hope", "Summer"]),
    ("The Big Three Killed My Baby is a song", [], ["My Baby"]),
    ("Wolfram Research is a software company", [], ["Research"]),
]


@pytest.mark.parametrize(("text", "names", "not_names"), NAME_CASES)
def test_given_names(pii: PiiDetector, text: str, names: list[str], not_names: list[str]) -> None:
    persons = _flagged(pii, text).get("PERSON", [])
    for name in names:
        assert any(name in p for p in persons), (name, persons)
    for word in not_names:
        assert not any(word in p for p in persons), (word, persons)


PHONE_CASES = [
    # (text, phone value that must be flagged or None, values that must not be flagged as phones)
    ("My telephone is 020 7946 0958", "020 7946 0958", []),  # "telephone" is a context word
    ("I'm texting from 0176 2345 6789 today", "0176 2345 6789", []),  # inflected context
    ("Best to use (212)555-0134x204 for me", "(212)555-0134x204", []),  # extension included
    ("212.555.0134 is the one I check", "212.555.0134", []),  # North American layout, no cue
    ("it's 001-579-967-3868x7173 now", "001-579-967-3868x7173", []),  # 17 digits with the ext.
    ("06 12 34 56 78 works after five", "06 12 34 56 78", []),  # valid French mobile, no cue
    ("(01620) 69409 after five", "(01620) 69409", []),  # trunk-0 area code in brackets
    ("(12) 345 678 was printed on it", None, ["(12) 345 678"]),  # no trunk 0, short, no cue
    # near misses
    ("My order 212-555-0134 arrived broken", None, ["212-555-0134"]),  # order number
    ("My SSN is 536-22-8514", None, ["536-22-8514"]),
    ("The restaurant is at 17151 2450 Crown St", None, ["17151 2450"]),  # street numbers
    ("The log shows 41.173.96.26 again", None, ["41.173.96.26"]),  # an IP address
    ("ZIP: 75534-030", None, ["75534-030"]),
]


@pytest.mark.parametrize(("text", "phone", "not_phones"), PHONE_CASES)
def test_phones(pii: PiiDetector, text: str, phone: str | None, not_phones: list[str]) -> None:
    phones = _flagged(pii, text).get("PHONE_NUMBER", [])
    if phone is not None:
        assert phone in phones, phones
    for value in not_phones:
        assert not any(value in p or p in value for p in phones), phones


PLACE_CASES = [
    # (text, place that must be flagged as LOCATION or STREET_ADDRESS, entity)
    ("we relocated to Alingsås last month", "Alingsås", "LOCATION"),
    ("the store in Arese refused to take the return", "Arese", "LOCATION"),
    ("the parcel is stuck in customs in Kettering", "Kettering", "LOCATION"),
    ("send it to 234 Ben Villages, please", "234 Ben Villages", "STREET_ADDRESS"),
    ("I'm at 880 Cristina Throughway now", "880 Cristina Throughway", "STREET_ADDRESS"),
]


@pytest.mark.parametrize(("text", "place", "entity"), PLACE_CASES)
def test_more_place_cues_and_street_types(pii: PiiDetector, text: str, place: str,
                                          entity: str) -> None:
    assert place in _flagged(pii, text).get(entity, [])


@pytest.mark.parametrize("text", [
    "the store in the mall was closed",  # a cue, but no capitalised name after it
    "I paid 30 Euros at the Club yesterday",  # a number and a street-type word, no street
])
def test_place_near_misses(pii: PiiDetector, text: str) -> None:
    found = _flagged(pii, text)
    assert "LOCATION" not in found and "STREET_ADDRESS" not in found, found


def test_street_prefix_is_a_whole_word(pii: PiiDetector) -> None:
    found = _flagged(pii, "please cancel the subscription for Alejandra, she moved out")
    assert "STREET_ADDRESS" not in found
    found = _flagged(pii, "I live at Aleja Jana Pawła 12, Kraków, and ship to ul. Długa 7")
    assert found.get("STREET_ADDRESS") == ["Aleja Jana Pawła 12, Kraków", "ul. Długa 7"]


def test_valid_phone_region_needs_a_full_national_number() -> None:
    assert valid_phone_region("(415) 867-5309") == "US"
    assert valid_phone_region("020 7183 8750") == "GB"
    assert valid_phone_region("06 12 34 56 78") == "FR"
    assert valid_phone_region("224 4966") is None  # a local number: too short to tell
    assert valid_phone_region("704 143 612") is None  # nine digits without a trunk 0
    assert valid_phone_region("(000) 000-0000") is None  # no plan allows it
    assert valid_phone_region("536-22-8514") is None  # SSN layout


def test_places(pii: PiiDetector) -> None:
    found = _flagged(pii, "I'm glad to hear that Norway is moving in that direction")
    assert found.get("LOCATION") == ["Norway"]  # a country name is never demoted
    found = _flagged(pii, "Magnus spent a year at the plant")
    assert "Magnus" not in found.get("LOCATION", [])  # a given name the NER took for a place
    assert found.get("PERSON") == ["Magnus"]
    found = _flagged(pii, "We moved to Jordan last year")
    assert found.get("LOCATION") == ["Jordan"]  # "la" in "last" is no particle of a place name
    found = _flagged(pii, "I drove to Charlotte for the weekend")
    assert "Charlotte" in found.get("LOCATION", [])  # a place word before a given name


def test_given_name_list_builder_and_shipped_list() -> None:
    from pipeline.training.pii_names import given_names

    built = set(given_names())
    for word in ("May", "Will", "My", "Hope", "Summer"):
        assert word not in built
    assert {"Magnus", "Rebecca", "Halldór"} <= built
    shipped = first_names()
    assert shipped == frozenset(FIRST_NAMES_FILE.read_text(encoding="utf-8").split())
    assert len(built ^ shipped) < 0.02 * len(shipped), "rebuild data/first_names.txt"


def test_hostile_digit_runs_cost_like_ordinary_text(pii: PiiDetector) -> None:
    ordinary = "Hi, my order hasn't arrived yet and I'd like an update please. " * 150
    hostile = "0612345678 212-555-0134 " * 390  # every token a candidate for the validator

    from detectors.features import shared_encoder

    encoder = shared_encoder("onnx-int8")  # the NER head's token states: each text costs anew

    def cost(text: str) -> float:
        encoder.configure_cache(0)
        t0 = time.process_time()
        pii.analyze([text], 0.05)
        return time.process_time() - t0

    try:
        cost(ordinary)
        assert cost(hostile) < 8 * max(cost(ordinary), 0.01)
    finally:
        encoder.configure_cache(8192)
