"""Names of things are not people (pii 1.6.0): menu items, hairdos, albums, film titles, phone
plans and hotel rooms named by a bot or a customer keep their text and raise no pii.person,
pii.location or pii.leak; a customer's or another person's name in the same domains is still
found and redacted. Table-driven: the evidence rule alone, then the loaded detector end to end.
Every sentence here was written for this test."""

from __future__ import annotations

import pytest

from detectors.pii.catalogue import thing_evidence
from detectors.pii.detector import PiiDetector, given_by_user
from pipeline.policy import is_flagged
from tests.detectors.conftest import assert_names_kept, pii_after

# (text, span, entity, expected evidence or None where it may be a name or place)
EVIDENCE = [
    ("Could I have a Hazelnut Breve with light whip?", "Hazelnut Breve", "PERSON",
     "catalogue_word"),
    ("We have no Salted Cortado; did you mean the Salted Caramel Latte?", "Salted Cortado",
     "PERSON", "catalogue_word"),
    ("Three Americanos and a Flat White, please.", "Americanos", "PERSON", "catalogue_word"),
    ("Try the Jasmine tea, it is lovely.", "Jasmine", "PERSON", "catalogue_word"),
    ("Add an extra Frostbite on top.", "Frostbite", "PERSON", "thing_context"),
    ("Sorry, Frostbite is not on our menu today.", "Frostbite", "PERSON", "menu_context"),
    ("You are on the Unlimited Plus plan.", "Unlimited Plus", "PERSON", "catalogue_word"),
    ("Mocha is sold out.", "Mocha", "LOCATION", "catalogue_word"),
    ("We also have Unsweet Raspberry black tea.", "Unsweet Raspberry", "PERSON",
     "catalogue_word"),
    # people and places stay what the NER says
    ("The order is for Priya.", "Priya", "PERSON", None),
    ("My name is Tzvetelina Orsova.", "Tzvetelina Orsova", "PERSON", None),
    ("A Mocha for Jean-Luc, please.", "Jean-Luc", "PERSON", None),
    ("Your cut is booked with Marisol Vega.", "Marisol Vega", "PERSON", None),
    ("Ask for Dr. Latte at the front.", "Latte", "PERSON", None),  # a title says person
    ("We flew to Mocha in May.", "Mocha", "LOCATION", None),  # a place cue says place
    ("The shop ships from Portugal.", "Portugal", "LOCATION", None),
    ("We hiked down into the Grand Canyon.", "Grand Canyon", "LOCATION", None),
    ("Enjoy the views of the Grand Canyon!", "Grand Canyon", "LOCATION", None),
    ("Boating on the lake is fun.", "lake", "LOCATION", "thing_context"),
    ("Did Olamide Bankole call?", "Olamide Bankole", "PERSON", None),
    ("I'll show Maria around the shop.", "Maria", "PERSON", None),
    ("The parcel was signed by Olamide Bankole.", "Olamide Bankole", "PERSON", None),
    ("How about the song Hotel Key by Old Dominion?", "Hotel Key", "PERSON", "named_thing"),
    ("a 5.8 star movie called After", "After", "PERSON", "named_thing"),
    ("a pop song by Hayley Kiyoko", "Hayley Kiyoko", "PERSON", "media_credit"),
    ("a pop song by Hayley Kiyoko", "Kiyoko", "PERSON", "media_credit"),
    ("Eagles Vs Cowboys starts at 8.", "Cowboys", "LOCATION", "fixture"),
    ("found Lanna Thai Restaurant for you", "Lanna", "LOCATION", "catalogue_word"),
]


@pytest.mark.parametrize(("text", "span", "entity", "why"), EVIDENCE)
def test_thing_evidence_table(text: str, span: str, entity: str, why: str | None) -> None:
    start = text.index(span)
    assert thing_evidence(text, start, start + len(span), entity) == why


# (domain, user turn, bot reply, catalogue names that must survive redaction)
THINGS = [
    ("coffee", "What do you recommend?",
     "Can I suggest a Caramel Macchiato with light whip, or two Cortados?",
     ["Caramel Macchiato", "Cortados"]),
    ("coffee", "A Flat Black please",
     "There is not a Flat Black on our menu. Did you mean the Flat White?",
     ["Flat Black", "Flat White"]),
    ("salon", "What styles do you offer?",
     "We do a Classic Bob, a Pixie Cut and a Beach Wave blowout.", ["Pixie Cut"]),
    ("music", "Play something relaxing",
     "Now playing the album Blue Horizon, track Silver Lining.", ["Blue Horizon"]),
    ("music", "Play some country",
     "How about the song Whiskey Rain by Dale Harlan off the album Long Haul?",
     ["Whiskey Rain", "Dale Harlan", "Long Haul"]),
    ("events", "Any games this week?", "There is Hawks Vs Ravens on March 4th at 7:30 pm.",
     ["Hawks Vs Ravens"]),
    ("restaurants", "Somewhere for lunch?",
     "I heard that a place called Zaoh is good, and Lanna Thai Restaurant is nearby.",
     ["Zaoh", "Lanna Thai Restaurant"]),
    ("film", "Anything good tonight?",
     "The Silent Harbour sequel is showing at 7, and the Midnight Garden film at 9.",
     ["Midnight Garden"]),
    ("phone plans", "Which plan am I on?",
     "You are on our Unlimited Premier plan; the Starter Plus plan is cheaper.",
     ["Unlimited Premier", "Starter Plus"]),
    ("hotel", "Any rooms left?",
     "The Harbour View Suite and a Deluxe King room are free on Friday.",
     ["Harbour View Suite"]),
]


@pytest.mark.parametrize(("domain", "user", "reply", "names"), THINGS,
                         ids=[f"{t[0]}-{i}" for i, t in enumerate(THINGS)])
def test_catalogue_names_keep_their_text_and_page_nobody(pii: PiiDetector, domain: str,
                                                         user: str, reply: str,
                                                         names: list[str]) -> None:
    assert_names_kept(pii, domain, user, reply, names)


# (domain, user turn, turn text, role, the person's name that must be redacted)
PEOPLE = [
    ("coffee", "Hi", "A Caramel Macchiato, and the order is for Sam.", "user", "Sam"),
    ("coffee", "Name for the order?", "My name is Sam Jones.", "user", "Sam Jones"),
    ("salon", "Book me in for a Pixie Cut",
     "Done: a Pixie Cut on Friday, and I have told Marisol Vega you are coming.", "assistant",
     "Marisol Vega"),
    ("music", "Who sings it?", "Hi, I'm Dana Whitfield and I love the album.", "user",
     "Dana Whitfield"),
    ("phone plans", "Who else is on my plan?",
     "The other line on your Unlimited Premier plan is registered to Kevin Marsh.",
     "assistant", "Kevin Marsh"),
]


@pytest.mark.parametrize(("domain", "user", "text", "role", "name"), PEOPLE,
                         ids=[f"{t[0]}-{i}" for i, t in enumerate(PEOPLE)])
def test_peoples_names_beside_catalogue_names_are_still_redacted(
        pii: PiiDetector, domain: str, user: str, text: str, role: str, name: str) -> None:
    found = pii_after(pii, text, user, role)
    assert name not in pii.redact_with(text, found), domain


def test_another_persons_name_on_a_plan_still_pages(pii: PiiDetector) -> None:
    reply = "The other line on your Unlimited Premier plan is registered to Kevin Marsh."
    leaks = [f for f in pii_after(pii, reply, "Who else is on my plan?")
             if f.label == "pii.leak" and is_flagged(f.label, f.score)]
    assert leaks and all(f.evidence["entity"] == "PERSON" for f in leaks)


@pytest.mark.parametrize(("user", "reply"), [
    ("Can I book a haircut?", "OK so a 12 pm with Ana Lucia on March 13th, yes?"),
    ("Who is the best fashion star right now?", "I would say Ramona Castellanos."),
    ("Thanks", "okie dokie, it will be right out"),
])
def test_named_provider_public_figure_or_misread_phrase_is_no_page(pii: PiiDetector, user: str,
                                                                   reply: str) -> None:
    leaks = [f for f in pii_after(pii, reply, user) if f.label == "pii.leak"]
    assert not any(is_flagged(f.label, f.score) for f in leaks), leaks


def test_a_word_before_the_users_own_name_is_not_part_of_it() -> None:
    user = ["A Cappuccino please. My name is Bob."]
    assert given_by_user("PERSON", "Sure Bob", user)  # spaCy's span of "Sure Bob, does..."
    assert not given_by_user("PERSON", "Sure Ann", user)
    assert not given_by_user("PERSON", "Bob Marsh", user)
