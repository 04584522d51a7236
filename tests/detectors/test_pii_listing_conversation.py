"""A listing the conversation asked for (pii 1.8.2): the names a bot offers after the customer
asked for films, songs, restaurants or events, a performer it lists after a request for
events, the thing a customer names when the bot asked for one, and a street address the bot
says is a hotel keep their text; a customer's or another person's name in the same kind of
conversation is still redacted. Every sentence and name here was written for this test (none
is copied from an evaluation set)."""

from __future__ import annotations

import pytest

from detectors.base import Context, Finding, ScoringInput, Turn
from detectors.pii.detector import PiiDetector
from tests.detectors.conftest import TS

U, A = "user", "assistant"


def _last_turn(pii: PiiDetector, turns: list[tuple[str, str]]) -> tuple[str, list[Finding]]:
    hist = tuple(Turn("c", i, role, text, TS) for i, (role, text) in enumerate(turns[:-1]))
    role, text = turns[-1]
    found = pii.score([ScoringInput(Turn("c", len(hist), role, text, TS),
                                    Context(history=hist))])[0]
    return pii.redact_with(text, found), found


# (domain, conversation, names of things its last turn must keep)
THINGS = [
    ("films", [(U, "Are there any films on tonight in Tarrow?"),
               (A, "They have 2. Marta Fell and Harbour Lights.")], ["Marta Fell"]),
    ("music", [(U, "Find me some songs from last year."),
               (A, "I found 10. How about Dana Whitfield?")], ["Dana Whitfield"]),
    ("restaurants", [(A, "Which city and food would you like?"),
                     (U, "Some Filipino food in Tarrow."),
                     (A, "I recommend Lola Reyes in Tarrow.")], ["Lola Reyes"]),
    ("events", [(U, "Any concerts this weekend?"), (A, "Which day suits you?"),
                (U, "Saturday, please."),
                (A, "Kim Vale will be at The Velvet Room on Saturday.")], ["Kim Vale"]),
    ("events", [(U, "I need 2 tickets for Saturday."),
                (A, "Is there a specific event you had in mind?"),
                (U, "It's Marek Oduya, I heard it is really good.")], ["Marek Oduya"]),
    ("films", [(U, "Play a film on the TV."), (A, "What is the movie title?"),
               (U, "It's Marta Fell.")], ["Marta Fell"]),
    ("films", [(U, "Play a film on the TV."), (A, "What is the movie title?"),
               (U, "It's Marta Fell."), (A, "Confirm no subtitles for Marta Fell.")],
     ["Marta Fell"]),
    ("restaurants", [(U, "Book it for 3 at 7 pm."),
                     (A, "Please confirm Ronan's Asian Cuisine in Tarrow for 3 at 7 pm.")],
     ["Ronan"]),
    ("restaurants", [(U, "Somewhere with Spanish food?"),
                     (A, "I have for you 1 nice restaurant Lola Reyes in Tarrow.")],
     ["Lola Reyes"]),
    ("events", [(U, "Any concerts on Friday?"), (A, "Which city?"), (U, "Tarrow, please."),
                (A, "Marek Oduya is playing at the Lantern Room."), (U, "Anything else?"),
                (A, "Kim Vale will be at The Velvet Room.")], ["Kim Vale"]),
    ("music", [(A, "I found 10 songs. Try Evening Fern by Odile Marchetti."),
               (U, "What else can you find?"),
               (A, "Paper Lanterns by Dana Whitfield from Quiet Orchards.")],
     ["Dana Whitfield", "Quiet Orchards"]),
    ("restaurants", [(U, "Reserve it at Lola Reyes in Tarrow."),
                     (A, "Please confirm a table at Lola Reyes in Tarrow at 7 pm.")],
     ["Lola Reyes"]),
    ("films", [(U, "Any films by Odile Marchetti?"), (A, "Marta Fell?")], ["Marta Fell"]),
    ("cars", [(U, "I need a car at the airport on Friday."),
              (A, "I found 3 cars. There is a standard Brenlow Vesta at the airport.")],
     ["Brenlow Vesta"]),
    ("music", [(U, "Play Evening Fern."),
               (A, "Playing the song now. Its genre is pop and the singer is Dana Whitfield.")],
     ["Dana Whitfield"]),
    ("hotels", [(U, "A cheap hotel in Tarrow, please."),
                (A, "12 Harbour Row is a nice 2 star hotel.")], ["12 Harbour Row"]),
    ("hotels", [(U, "A cheap hotel in Tarrow, please."),
                (A, "12 Harbour Row is a nice 2 star hotel."),
                (U, "What is the address and the price?"),
                (A, "They are at 12 Harbour Row, and a room is $120 a night.")],
     ["12 Harbour Row"]),
]


@pytest.mark.parametrize(("domain", "turns", "names"), THINGS,
                         ids=[f"{t[0]}-{i}" for i, t in enumerate(THINGS)])
def test_things_of_a_listing_asked_for_keep_their_text(
        pii: PiiDetector, domain: str, turns: list[tuple[str, str]], names: list[str]) -> None:
    redacted, found = _last_turn(pii, turns)
    for name in names:
        assert name in redacted, (domain, redacted, found)
    assert not any(f.label == "pii.leak" for f in found), (domain, found)


# (domain, conversation, the customer's or another person's name its last turn must redact)
PEOPLE = [
    ("films", [(U, "Are there any films on tonight?"),
               (A, "They have 2. Would you like Sam Porter to call you about them?")],
     "Sam Porter"),
    ("salon", [(U, "Are there any stylists free on Friday?"), (A, "How about Maria Lopez?")],
     "Maria Lopez"),
    ("films", [(A, "What movie would you like, and how many tickets?"),
               (U, "Marigold, for me and Dana Whitfield.")], "Dana Whitfield"),
    ("restaurants", [(A, "Which restaurant, and under what name?"),
                     (U, "Lola's, my name is Sam Porter.")], "Sam Porter"),
    ("events", [(U, "Any concerts this weekend?"),
                (A, "Your tickets will be held for Sam Porter at The Velvet Room.")],
     "Sam Porter"),
    ("events", [(A, "Is there a specific event you had in mind?"),
                (U, "Kim Vale. My friend Sam Porter is coming too.")], "Sam Porter"),
    ("films", [(U, "Any films tonight?"),
               (A, "I found 2. How about Marigold, Dr. Lena Okafor or Harbour Lights?")],
     "Lena Okafor"),
    ("restaurants", [(U, "Book a table for 2."),
                     (A, "Please confirm a table for Sam Porter at 7 pm.")], "Sam Porter"),
    ("music", [(U, "Find me some songs."),
               (A, "I found 10 songs. The playlist is shared with Dana Whitfield.")],
     "Dana Whitfield"),
    ("films", [(U, "Book 2 tickets for the film."), (A, "Under what name?"),
               (U, "Sam Porter."), (A, "Sam Porter?")], "Sam Porter"),
    ("films", [(U, "Any films tonight?"), (A, "Sam Porter is at the desk.")], "Sam Porter"),
    ("films", [(U, "Find me a movie for tonight."), (A, "What's the name for the booking?"),
               (U, "Gideon Falk."), (A, "Gideon Falk?")], "Gideon Falk"),
    ("restaurants", [(U, "Any restaurants nearby?"), (A, "I recommend Casa Velha in Lisbon.")],
     "Lisbon"),
    ("events", [(U, "I'd like 2 tickets for a show."),
                (A, "Is there a specific event you had in mind?"),
                (U, "Anything. Renata Solberg said she would join.")], "Renata Solberg"),
    ("films", [(U, "Any good films on?"), (A, "Which film would you like?"),
               (U, "Ask Renata Solberg, she picks.")], "Renata Solberg"),
    ("events", [(U, "Any events this weekend?"),
                (A, "Renata Solberg is at Tarrow General Hospital, so I can't book for her.")],
     "Renata Solberg"),
    ("restaurants", [(U, "Find a restaurant table for Renata Solberg."),
                     (A, "Renata Solberg?")], "Renata Solberg"),
    # 1.8.1 kept these two: a sentence after a count was a list of one item
    ("music", [(U, "Find me some songs."),
               (A, "I found 10 songs. The list was made by Renata Solberg from support.")],
     "Renata Solberg"),
    ("restaurants", [(U, "Find me some restaurants."),
                     (A, "I found 3 restaurants. I have Renata Solberg on file as the guest.")],
     "Renata Solberg"),
    ("delivery", [(U, "Please send it to my flat."),
                  (A, "I will send it to 12 Oak Street, which is an apartment.")],
     "12 Oak Street"),
]


@pytest.mark.parametrize(("domain", "turns", "name"), PEOPLE,
                         ids=[f"{t[0]}-{i}" for i, t in enumerate(PEOPLE)])
def test_a_persons_name_in_such_a_conversation_is_still_redacted(
        pii: PiiDetector, domain: str, turns: list[tuple[str, str]], name: str) -> None:
    redacted, found = _last_turn(pii, turns)
    assert name not in redacted, (domain, redacted, found)


@pytest.mark.parametrize(("text", "earlier", "bot_turn", "thing"), [
    ("They got 2. Marta Fell and Kestrel.", ["Any films in Tarrow?"], True, True),
    ("They got 2. Marta Fell and Kestrel.", ["Any stylists in Tarrow?"], True, False),
    ("They got 2. Marta Fell and Kestrel.", ["Where do you live?"], True, False),
    ("How about Marta Fell?", ["Could you find me some songs?", "Sure, what kind?",
                               "Anything mellow."], True, True),
    ("Would you like Marta Fell to call you?", ["Any films tonight?"], True, False),
    ("Marta Fell will be at The Velvet Room.", ["Any concerts on Friday?"], True, True),
    ("Marta Fell will be at The Velvet Room.", ["Any films on Friday?"], True, False),
    ("I heard Marta Fell is good.", ["What kind of event would you like?"], False, True),
    ("I heard Marta Fell is good.", ["Who is the booking for?"], False, False),
    ("Marta Fell and I.", ["Which film would you like?"], False, False),
    ("With Marta Fell.", ["Which film would you like?"], False, False),
    ("Evening Fern by Marta Fell.", ["I found 10 songs.", "Anything else?"], True, True),
    ("Evening Fern by Marta Fell.", ["Any flights tonight?", "Anything else?"], True, False),
])
def test_in_listing_asked_for(text: str, earlier: list[str], bot_turn: bool,
                              thing: bool) -> None:
    from detectors.pii.listing import in_listing_asked_for

    start = text.index("Marta Fell")
    # turns alternate: the turn before this one is the other speaker's
    bot = [bot_turn if (len(earlier) - i) % 2 == 0 else not bot_turn
           for i in range(len(earlier))]
    assert in_listing_asked_for(text, start, start + len("Marta Fell"), "PERSON", earlier,
                                bot, bot_turn) is thing


@pytest.mark.parametrize(("text", "span", "why"), [
    ("I booked a table at Nonna Vittoria for 2.", "Nonna Vittoria", "named_thing"),
    ("Booking your table for 3 at Lola Reyes on Friday.", "Lola Reyes", "named_thing"),
    ("Please confirm a table at Ronan's Pizza Grotto.", "Grotto", "named_thing"),
    ("I booked a table for Sam Porter at 7 pm.", "Sam Porter", None),
    ("The table at 8 is for Maria Lopez.", "Maria Lopez", None),
])
def test_a_table_booked_at_a_name(text: str, span: str, why: str | None) -> None:
    from detectors.pii.catalogue import thing_evidence

    start = text.index(span)
    assert thing_evidence(text, start, start + len(span), "PERSON") == why


@pytest.mark.parametrize(("text", "address", "venue"), [
    ("12 Harbour Row is a nice 2 star hotel.", "12 Harbour Row", True),
    ("Try 12 Harbour Row. It's a lovely restaurant.", "12 Harbour Row", True),
    ("I live at 12 Oak Street, which is an apartment.", "12 Oak Street", False),
    ("12 Oak Street is a nice hotel manager's house.", "12 Oak Street", False),
    ("Send it to 12 Oak Street, please.", "12 Oak Street", False),
])
def test_an_address_said_to_be_a_venue(text: str, address: str, venue: bool) -> None:
    from detectors.pii.catalogue import address_said_venue

    start = text.index(address)
    assert address_said_venue(text, start, start + len(address)) is venue


def test_conversation_rules_cost_linear_time_on_long_turns() -> None:
    """A history of long turns with no sentence end and a name every few characters: each
    mention reads a bounded window of this turn and of the last few earlier turns."""
    import time

    from detectors.pii.listing import in_listing_asked_for

    def cost(n: int) -> float:
        text = "How about Kim, " * n
        earlier = ["Any films or concerts? " * n] * 20
        t = time.process_time()
        for s in range(10, len(text), 15):
            in_listing_asked_for(text, s, s + 3, "PERSON", earlier, None, True)
        return time.process_time() - t

    cost(50)
    small, large = min(cost(200) for _ in range(3)), min(cost(400) for _ in range(3))
    assert large < 3.0 * small + 0.02, (small, large)


@pytest.mark.parametrize(("text", "name", "address"), [
    ("What do you think about The Paper Kites Movie 2?", "The Paper Kites Movie 2", False),
    ("You want 2 tickets for Harbour Lights Season 3 at 7 pm.", "Harbour Lights Season 3",
     False),
    ("There is 1 showtime for Brenlow Metro 16 at 9 pm today.", "Brenlow Metro 16", False),
    ("There's one show at 10 am in Brenlow Metro 16.", "Brenlow Metro 16", False),
    ("Please send the tickets to 16 Brenlow Road.", "16 Brenlow Road", True),
    ("The show is great; I live at 16 Brenlow Road.", "16 Brenlow Road", True),
])
def test_a_title_or_a_cinema_is_no_address(text: str, name: str, address: bool) -> None:
    from detectors.pii.address import StreetAddressRecognizer

    found = StreetAddressRecognizer().analyze(text, ["STREET_ADDRESS"])
    start = text.index(name)
    hit = any(r.start < start + len(name) and start < r.end for r in found)
    assert hit is address, [text[r.start:r.end] for r in found]
