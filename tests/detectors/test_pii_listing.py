"""Names of things in a bot's listings are not people (pii 1.8.0): songs, albums, films,
restaurants, hotels, venues, attractions, flats, cars and the performers of listed events keep
their text and raise no pii.person or pii.leak, also where the name holds a given name ("Lady
Grace Diner", "St. Catherine's Hall") or a town ("the Corvale Hotel Lisbon"); a customer's own
name in the same sentences is still redacted. Every sentence and name here was written for
this test (none is copied from an evaluation set)."""

from __future__ import annotations

import pytest

from detectors.base import Context, Finding, ScoringInput, Turn
from detectors.pii.catalogue import thing_evidence
from detectors.pii.detector import PiiDetector
from tests.detectors.conftest import TS, assert_names_kept, pii_after

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


# The rules alone: a thing named by "a park called", a town inside a venue's name, a performer
# in a listing of events; and the person cues that keep a name.
EVIDENCE = [
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
]


# pii 1.8.1: what still made names of things into people or addresses after 1.8.0, as rules
# (each sentence written for this test): a thing said to be one ("... is a great restaurant"),
# a venue's word after the name ("Vine Cinema & Alehouse"), a title credited or played, a thing
# called something a few words on ("a museum in Tarrow called ..."), tickets to a performer on a
# date, names offered in a listing, a capitalised cue word inside a name ("Star City Music
# Festival"), and "from" an artist in a sentence about music.
EVIDENCE_1_8_1 = [
    ("Orsolya Dree is a great restaurant for a date.", "Orsolya Dree", "PERSON", "said_thing"),
    ("Try Kelmarsh Point, which is a historical landmark.", "Kelmarsh Point", "LOCATION",
     "said_thing"),
    ("The Halden Crown Tarrow is also a nice 3 star hotel.", "Tarrow", "LOCATION",
     "said_thing"),
    ("Maria Lopez is a nurse at the clinic.", "Maria Lopez", "PERSON", None),
    ("Sam Porter is a hotel manager in Tarrow.", "Sam Porter", "PERSON", None),
    ("Maria is a regular at the restaurant.", "Maria", "PERSON", None),
    ("There is 1 showing at 7 pm in Brenlow Cinema & Alehouse.", "Brenlow", "LOCATION",
     "catalogue_word"),
    ("One showtime tonight in Brenlow 12 Cinemas.", "Brenlow", "LOCATION", "catalogue_word"),
    ("Please confirm Tomas Vey's Irish Pub at 8 pm.", "Tomas Vey", "PERSON", "catalogue_word"),
    ("Can you confirm the visit to Ashgrove Row apartments on Friday?", "Ashgrove Row",
     "LOCATION", "catalogue_word"),
    ("It is from the Paper Kites Over Tarrow album.", "Tarrow", "LOCATION", "catalogue_word"),
    ("How about Evening Fern by Odile Marchetti from the album Quiet Orchards?", "Evening Fern",
     "PERSON", "media_title"),
    ("Sure, I'm playing Evening Fern on the kitchen speaker.", "Evening Fern", "PERSON",
     "media_title"),
    ("There is a museum in Tarrow called Wenlock Hall. Any interest?", "Wenlock Hall",
     "PERSON", "named_thing"),
    ("There is a 3 star hotel by the name of Corvale Tarrow.", "Corvale Tarrow", "PERSON",
     "named_thing"),
    ("The event is called Amberline Nights at the Velvet Room.", "Amberline Nights", "PERSON",
     "named_thing"),
    ("I found 1 film and its name is Marta Fell.", "Marta Fell", "PERSON", "named_thing"),
    ("The title of the song is Idra Sol.", "Idra Sol", "PERSON", "named_thing"),
    ("The event is Kestrel Moon.", "Kestrel Moon", "PERSON", "named_thing"),
    ("The hotel staff called Maria Lopez this morning.", "Maria Lopez", "PERSON", None),
    ("I know a guy called Sam Porter.", "Sam Porter", "PERSON", None),
    ("Book 2 tickets for Kim Vale in Tarrow on March 3rd.", "Kim Vale", "PERSON", "performer"),
    ("I'll get you 4 tickets to Marek Oduya at Brackwell Park on Friday.", "Marek Oduya",
     "PERSON", "performer"),
    ("Tamsin Greaves is also playing at the Lantern Room on Sunday.", "Tamsin Greaves",
     "PERSON", "performer"),
    ("Book 2 tickets for Sam Porter, please.", "Sam Porter", "PERSON", None),
    ("The tickets are for Sam Porter on March 3rd.", "Sam Porter", "PERSON", None),
    ("I found 4 films. Harbour Lights, Marigold or Quiet Orchards?", "Marigold", "PERSON",
     "listing"),
    ("I found 3 restaurants. How about Nonna Vittoria?", "Nonna Vittoria", "PERSON",
     "listing"),
    ("How about Evening Fern, The Glass Tide or Marigold?", "Marigold", "PERSON", "listing"),
    ("I found 3 stylists. How about Marisol Vega?", "Marisol Vega", "PERSON", None),
    ("Which stylist? How about Sam, Maria or Lee?", "Maria", "PERSON", None),
    ("Would you like Sam, Maria or Lee to call you back?", "Maria", "PERSON", None),
    ("I found 3 films for Sam Porter and Maria.", "Sam Porter", "PERSON", None),
    ("What about Quiet Orchards, Marigold: A Tale of Tides or Bad Girls?", "Tides", "PERSON",
     "listing"),
    ("Well, there's Harbour Lights, Kestrel! and Marigold.", "Kestrel", "PERSON", "listing"),
    ("What do you think about Marigold, Kestrel or One Night in Lisbon?", "Lisbon", "LOCATION",
     "listing"),
    ("Please confirm 1 regular ticket to Kestrel Moon at 10:45 pm on March 8th.", "Kestrel Moon",
     "LOCATION", "performer"),
    ("I want to get tickets to Kim Vale on March 2nd.", "Kim Vale", "PERSON", "performer"),
    ("I'll book you 4 tickets for Kim Vale for March 3rd in Tarrow.", "Kim Vale", "PERSON",
     "performer"),
    ("I sent the tickets to Sam Porter on Monday.", "Sam Porter", "PERSON", None),
    ("Please email 2 tickets to Maria Lopez in Tarrow.", "Maria Lopez", "PERSON", None),
    ("Do you want to watch Marta Fell?", "Marta Fell", "PERSON", "media_title"),
    ("I wish to watch Marta Fell with subtitles.", "Marta Fell", "PERSON", "media_title"),
    ("I will watch Sam play football.", "Sam", "PERSON", None),
    ("Can you watch Maria while I am out?", "Maria", "PERSON", None),
    ("Which restaurant? How about Orsolya Dree?", "Orsolya Dree", "PERSON", "listing"),
    ("Which stylist? How about Maria?", "Maria", "PERSON", None),
    # a title or a self-introduction before a name beats every rule of 1.8.1
    ("I found 3 films. How about Marigold, Dr. Lena Okafor or Quiet Orchards?", "Lena Okafor",
     "PERSON", None),
    ("Hi, I'm Dana Whitfield. How about Marigold?", "Dana Whitfield", "PERSON", None),
    ("My name is Orsolya Dree, which is a great restaurant name.", "Orsolya Dree", "PERSON",
     None),
    ("Which songs do you have from Odile Marchetti?", "Odile Marchetti",
     "LOCATION", "media_credit"),
    ("The songs are from Portugal.", "Portugal", "LOCATION", None),
    ("She moved from Tarrow to Lisbon last year.", "Tarrow", "LOCATION", None),
]


@pytest.mark.parametrize(("text", "span", "entity", "why"), EVIDENCE + EVIDENCE_1_8_1)
def test_listing_evidence(text: str, span: str, entity: str, why: str | None) -> None:
    start = text.index(span)
    assert thing_evidence(text, start, start + len(span), entity) == why


@pytest.mark.parametrize(("text", "kept"), [
    ("Another good one is Amberly Court at 3405 Westfield Terrace, with 2 bedrooms.",
     "Amberly Court"),
    ("I found an apartment called Linden Creek Place, at 18 Holm Avenue.", "Linden Creek Place"),
    ("You can see it at Brenlow 12 Cinema at 7 pm.", "Brenlow 12"),
    ("What do you think of 1 Hotel Harbour Bridge? It has a 4.5 rating.",
     "1 Hotel Harbour Bridge"),
    ("I found 4 Tarrow Drive events; one is on March 1st.", "Tarrow Drive"),
    ("Westbrook Gardens Apartments is at 73 North Keeble Avenue.", "Westbrook Gardens"),
])
def test_venue_names_are_not_addresses(text: str, kept: str) -> None:
    from detectors.pii.address import StreetAddressRecognizer

    found = StreetAddressRecognizer().analyze(text, ["STREET_ADDRESS"])
    assert not any(r.start < text.index(kept) + len(kept) and text.index(kept) < r.end
                   for r in found), [text[r.start:r.end] for r in found]


@pytest.mark.parametrize(("text", "address"), [
    ("Another good one is Amberly Court at 3405 Westfield Terrace, with 2 bedrooms.",
     "3405 Westfield Terrace"),
    ("Please send it to 12 Hotel Street, Tarrow.", "12 Hotel Street"),
    ("I live on Linden Creek Place.", "Linden Creek Place"),
    ("Deliver to 4 Tarrow Drive, Brackwell, please.", "4 Tarrow Drive"),
])
def test_addresses_beside_venues_are_still_found(text: str, address: str) -> None:
    from detectors.pii.address import StreetAddressRecognizer

    found = StreetAddressRecognizer().analyze(text, ["STREET_ADDRESS"])
    start = text.index(address)
    assert any(r.start <= start and start + len(address) <= r.end for r in found), \
        [text[r.start:r.end] for r in found]


@pytest.mark.parametrize(("text", "place"), [
    ("I found the Brackwell City Music Festival on Friday.", None),
    ("The event is Murder Town Devils at the Velvet Room.", None),
    ("It's from the album A Boy From Tarrow.", None),
    ("She grew up in the city Tarrow and now lives in Brackwell.", "Tarrow"),
    ("Great news. Visit Tarrow in May.", "Tarrow"),
    ("We drove into town Brackwell last night.", "Brackwell"),
])
def test_a_cue_word_inside_a_name_is_no_place_cue(text: str, place: str | None) -> None:
    from detectors.pii.recognizers import LocationCueRecognizer

    found = [text[r.start:r.end] for r in LocationCueRecognizer().analyze(text, ["LOCATION"])]
    if place is None:
        assert not found, found
    else:
        assert place in found, found


LISTINGS_1_8_1 = [
    ("restaurants", "Somewhere for dinner?",
     "I found 4 restaurants in Tarrow. Orsolya Dree is a great restaurant.", ["Orsolya Dree"]),
    ("cinema", "Where can I see it?",
     "There is 1 showtime at 6:30 pm in Brenlow Cinema & Alehouse.", ["Brenlow Cinema"]),
    ("films", "Anything good tonight?",
     "I found 10 films. How about Harbour Lights, Marta Fell or The Glass Tide?",
     ["Harbour Lights", "Marta Fell", "The Glass Tide"]),
    ("music", "Play something mellow",
     "Sure, I'm playing Evening Fern by Odile Marchetti on the kitchen speaker.",
     ["Evening Fern", "Odile Marchetti"]),
    ("events", "Any concerts in Tarrow?",
     "Please confirm: 2 tickets for Kim Vale in Tarrow on March 3rd.", ["Kim Vale"]),
    ("attractions", "Something to visit?",
     "There is a museum in Tarrow called Wenlock Hall. Any interest?", ["Wenlock Hall"]),
    ("flats", "Any two-bed flats?",
     "Another good one is Amberly Court at 3405 Westfield Terrace, with 2 bedrooms.",
     ["Amberly Court"]),
    ("festivals", "Anything this weekend?",
     "I found the Brackwell City Music Festival at Tarrow Community Park.",
     ["Brackwell City Music Festival"]),
]


@pytest.mark.parametrize(("domain", "user", "reply", "names"), LISTINGS + LISTINGS_1_8_1,
                         ids=[f"{t[0]}-{i}" for i, t in enumerate(LISTINGS + LISTINGS_1_8_1)])
def test_catalogue_names_in_listings_keep_their_text(pii: PiiDetector, domain: str, user: str,
                                                     reply: str, names: list[str]) -> None:
    assert_names_kept(pii, domain, user, reply, names)


# The customer's or another person's name beside the same kinds of listing is still redacted.
PEOPLE_1_8_1 = [
    ("restaurants", "Anything else?", "The table is booked under Priya Raman at Luigi's.",
     "assistant", "Priya Raman"),
    ("restaurants", "Who is the booking for?",
     "Orsolya Dree is a great restaurant; the table is for Maria Lopez at 8.", "assistant",
     "Maria Lopez"),
    ("events", "Who picks up the tickets?",
     "Book 2 tickets for Kim Vale on March 3rd; they are held for Sam Porter.", "assistant",
     "Sam Porter"),
    ("hotels", "Who is staying?",
     "My name is Ines Kowalczyk and I'd like a room at the Corvale Hotel.", "user",
     "Ines Kowalczyk"),
    ("films", "Who is coming with you?",
     "I found 3 films for Dana Whitfield and me. How about Marigold?", "user",
     "Dana Whitfield"),
    ("flats", "Who should we contact?",
     "You can call Tomasz Wierzbicki about Amberly Court at 3405 Westfield Terrace.",
     "assistant", "Tomasz Wierzbicki"),
]


@pytest.mark.parametrize(("domain", "user", "text", "role", "name"), PEOPLE + PEOPLE_1_8_1,
                         ids=[f"{t[0]}-{i}" for i, t in enumerate(PEOPLE + PEOPLE_1_8_1)])
def test_a_customers_name_beside_a_listing_is_still_redacted(
        pii: PiiDetector, domain: str, user: str, text: str, role: str, name: str) -> None:
    found = pii_after(pii, text, user, role)
    assert name not in pii.redact_with(text, found), (domain, found)


# A name an earlier turn of the conversation named as a thing stays a thing when the customer
# picks it or the bot confirms it ("Marigold is perfect"); a name never named as a thing, a
# place on the place list and a name after "my name is" are kept.
@pytest.mark.parametrize(("value", "entity", "earlier", "thing"), [
    ("Marigold", "PERSON", ["I found 4 films. How about Harbour Lights, Marigold or Quiet "
                            "Orchards?"], True),
    ("Orsolya Dree", "PERSON", ["Orsolya Dree is a great restaurant in Tarrow."], True),
    ("Kim Vale", "PERSON", ["There are 3 events. Kim Vale will perform at the Velvet Room."],
     True),
    ("Sam Porter", "PERSON", ["The order is for Sam Porter."], False),
    ("Marigold", "PERSON", ["Marigold called me about the booking."], False),
    ("Lisbon", "LOCATION", ["I found 3 films. How about Lisbon, Marigold or Quiet Orchards?"],
     False),
])
def test_named_as_thing_earlier(value: str, entity: str, earlier: list[str],
                                thing: bool) -> None:
    from detectors.pii.history import named_as_thing_earlier

    assert named_as_thing_earlier(value, entity, earlier) is thing


def _conversation(pii: PiiDetector, turns: list[tuple[str, str]]) -> list[Finding]:
    hist = tuple(Turn("c", i, role, text, TS) for i, (role, text) in enumerate(turns[:-1]))
    role, text = turns[-1]
    return pii.score([ScoringInput(Turn("c", len(hist), role, text, TS),
                                   Context(history=hist))])[0]


@pytest.mark.parametrize(("turns", "name", "kept"), [
    ([("user", "Any films tonight?"),
      ("assistant", "I found 4 films. How about Harbour Lights, Marta Fell or Quiet Orchards?"),
      ("user", "Marta Fell sounds great.")], "Marta Fell", True),
    ([("user", "Somewhere to eat?"),
      ("assistant", "Orsolya Dree is a great restaurant in Tarrow."),
      ("user", "Book Orsolya Dree for 2 at 8 pm.")], "Orsolya Dree", True),
    # the customer's own name, given earlier as a name, is still redacted
    ([("user", "Book a table at Orsolya Dree, the name is Marta Fell."),
      ("assistant", "Done: a table for Marta Fell at Orsolya Dree at 8 pm.")], "Marta Fell",
     False),
    ([("user", "My name is Marta Fell."),
      ("assistant", "I found 4 films. How about Harbour Lights or Quiet Orchards?"),
      ("user", "This is Marta Fell again, the second one please.")], "Marta Fell", False),
])
def test_a_name_the_conversation_named_as_a_thing(pii: PiiDetector,
                                                  turns: list[tuple[str, str]], name: str,
                                                  kept: bool) -> None:
    text = turns[-1][1]
    found = _conversation(pii, turns)
    assert (name in pii.redact_with(text, found)) is kept, found


@pytest.mark.parametrize("unit", ["Mr. ", "How about Kim, ", "Kim Vale is a "])
def test_listing_rules_cost_linear_time_on_a_text_with_no_sentence_end(unit: str) -> None:
    """A name in every few characters and no sentence end ("Mr. Mr. ...", a list that never
    ends): each span's sentence and listing are looked for within a bounded reach, so twice the
    text costs about twice the time, not four times."""
    import time

    def cost(n: int) -> float:
        text = unit * n
        name = "Mr" if unit.startswith("Mr") else "Kim"
        spans = [(m, m + len(name)) for m in range(text.index(name), len(text), len(unit))]
        t = time.process_time()
        for s, e in spans:
            thing_evidence(text, s, e, "PERSON")
        return time.process_time() - t

    cost(100)  # warm the regexes
    small, large = min(cost(300) for _ in range(3)), min(cost(600) for _ in range(3))
    assert large < 3.0 * small + 0.02, (small, large)
