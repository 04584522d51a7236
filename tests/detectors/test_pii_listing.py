"""Names of things in a bot's listings are not people (pii 1.8.0): songs, albums, films,
restaurants, hotels, venues, attractions, flats, cars and the performers of listed events keep
their text and raise no pii.person or pii.leak, also where the name holds a given name ("Lady
Grace Diner", "St. Catherine's Hall") or a town ("the Corvale Hotel Lisbon"); a customer's own
name in the same sentences is still redacted. Every sentence and name here was written for
this test (none is copied from an evaluation set)."""

from __future__ import annotations

import pytest

from detectors.pii.catalogue import thing_evidence
from detectors.pii.detector import PiiDetector
from tests.detectors.conftest import assert_names_kept, pii_after

# (domain, user turn, bot reply, names that must survive redaction)
LISTINGS = [
    ("music", "Play something mellow",
     "I found 4 songs. How about Paper Lanterns by Odile Marchetti from the album Quiet "
     "Orchards?", ["Paper Lanterns", "Odile Marchetti", "Quiet Orchards"]),
    ("restaurants", "Somewhere for dinner?",
     "Lady Grace Diner and Nonna Vittoria Trattoria both have a table at 8.",
     ["Lady Grace Diner", "Nonna Vittoria Trattoria"]),
    ("venues", "Where is the choir singing?",
     "The concert is at St. Catherine's Hall on Friday at 7:30 pm.", ["St. Catherine's Hall"]),
    ("events", "Anything on this weekend?",
     "There are 3 events you might like. There's Marek Oduya at the Velvet Room on Saturday.",
     ["Marek Oduya", "Velvet Room"]),
    ("events", "Any shows on Sunday?",
     "Tamsin Greaves will perform at the Brackwell Amphitheater on Sunday at 6 pm.",
     ["Tamsin Greaves", "Brackwell Amphitheater"]),
    ("hotels", "A hotel near the airport?",
     "I found 3 hotels. The Corvale Hotel Lisbon has a rating of 4.2.", ["Corvale Hotel Lisbon"]),
    ("attractions", "Something for the kids?",
     "There is a park called Pell Hollow Park, and entry is free.", ["Pell Hollow Park"]),
    ("flats", "Any two-bed flats?",
     "You'd like to visit Harlow Creek Apartments on March 12th, is that right?",
     ["Harlow Creek Apartments"]),
]


@pytest.mark.parametrize(("domain", "user", "reply", "names"), LISTINGS,
                         ids=[f"{t[0]}-{i}" for i, t in enumerate(LISTINGS)])
def test_catalogue_names_in_listings_keep_their_text(pii: PiiDetector, domain: str, user: str,
                                                     reply: str, names: list[str]) -> None:
    assert_names_kept(pii, domain, user, reply, names)


# (domain, user turn, turn text, role, the customer's or another person's name)
PEOPLE = [
    ("restaurants", "Name for the booking?", "The order is for Sam Porter.", "user",
     "Sam Porter"),
    ("hotels", "Who is staying?", "My name is Ines Kowalczyk and I booked the Corvale Hotel.",
     "user", "Ines Kowalczyk"),
    ("restaurants", "Anything else?",
     "Book a table at Lady Grace Diner under the name Tomasz Wierzbicki, please.", "user",
     "Tomasz Wierzbicki"),
    ("events", "Who picks up the tickets?",
     "The tickets for the concert are held for Priya Raman at the box office.", "assistant",
     "Priya Raman"),
    ("music", "Hello", "Hi, I'm Dana Whitfield and I'd like to hear Paper Lanterns.", "user",
     "Dana Whitfield"),
]


@pytest.mark.parametrize(("domain", "user", "text", "role", "name"), PEOPLE,
                         ids=[f"{t[0]}-{i}" for i, t in enumerate(PEOPLE)])
def test_a_customers_name_beside_a_listing_is_still_redacted(
        pii: PiiDetector, domain: str, user: str, text: str, role: str, name: str) -> None:
    found = pii_after(pii, text, user, role)
    assert name not in pii.redact_with(text, found), (domain, found)


# The rules alone: a thing named by "a park called", a town inside a venue's name, a performer
# in a listing of events; and the person cues that keep a name.
@pytest.mark.parametrize(("text", "span", "entity", "why"), [
    ("There is a park called Pell Hollow Park.", "Pell Hollow Park", "PERSON", "named_thing"),
    ("It is called Marigold. Shall I book it?", "Marigold", "PERSON", "named_thing"),
    ("I know a guy called Sam Porter.", "Sam Porter", "PERSON", None),
    ("Corvale Hotel Lisbon has a pool.", "Lisbon", "LOCATION", "catalogue_word"),
    ("The game is at Rook Stadium of Tarrow.", "Tarrow", "LOCATION", "catalogue_word"),
    ("The Corvale Hotel in Lisbon has a pool.", "Lisbon", "LOCATION", None),
    ("Tamsin Greaves will perform at the Brackwell Amphitheater.", "Tamsin Greaves", "PERSON",
     "performer"),
    ("Sam will be at the front desk for the concert.", "Sam", "PERSON", None),
    ("The tickets for the show are for Sam Porter.", "Sam Porter", "PERSON", None),
])
def test_listing_evidence(text: str, span: str, entity: str, why: str | None) -> None:
    start = text.index(span)
    assert thing_evidence(text, start, start + len(span), entity) == why
