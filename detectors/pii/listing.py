"""A listing the conversation asked for: names a bot offers after a request for things (pii 1.8.2).

``offered_in_listing`` (``detectors.pii.catalogue``) reads a listing inside one turn: "I found
4 films. How about Marigold or Quiet Orchards?". A bot often splits it over turns: the
customer asks for films, songs, restaurants or events, the bot counts them in one turn ("I
found 10.") or not at all, and offers names in the next ("How about Marigold or Kestrel?",
"They got 2. Marigold and Kestrel.", "Would you like Quiet Orchards?"). Those names are the
options of the listing the conversation asked for: titles, venues, performers, products, not
personal data. Read from the turn and its history only (no state), like the rest of the
catalogue rules:

- **the request**: one of the last two earlier turns (the customer's request or the bot's own
  count) names things of a listing (``_LISTING_NOUN``: films, songs, restaurants, events...)
  and no word for a person who could be offered (stylist, doctor, dentist, agent, "someone");
- **the offer**: in this turn, after an offer ("how about", "would you like", "there's",
  "we have"...), or as the sentence right after a bare count ("They got 2.", "I found 10."),
  a list of one or more items, each written as a title ("Marigold", "Kim Vale at the Velvet
  Room", "Harbour Lights on March 3rd"; not "Sam to call you back"), with no person cue before
  it ("for", "with", "my name is", "Dr.").

A listed town or country alone is never such an item (it is where, not what). A name the
customer then picks ("Marigold is perfect") is a thing by :mod:`detectors.pii.history`, which
asks this rule about the earlier turns too.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice

import regex as re

from detectors.pii.catalogue import (
    _FROM_CREDIT,
    _LIST_ITEM_SEP,
    _LISTING_NOUN,
    _MENTIONS,
    _NAME_HEAD,
    _NAME_REST,
    _OFFER,
    _PERFORMER_AFTER,
    _PERSON_NOUN,
    _PLACE_CUE,
    _STRONG_PERSON,
    _STRONGEST_PERSON,
    _TITLE_BY,
    _TITLE_ITEM,
    _WEAK_PERSON,
    _listed,
    _sentence_bounds,
)

_REQUEST = re.compile(rf"(?i)\b(?:{_LISTING_NOUN}|food|cuisine)\b")
# A bot's word for offering, beyond ``_OFFER``: "I recommend Luigi's", "I suggest Marigold".
_OFFER_MORE = re.compile(r"(?i)\b(?:recommend|suggest)\s+(?:the\s+)?")
# Whom a listing may offer that is a person: "How about Maria?" after "any stylists free?";
# lower-case only, as a request or a role is written ("Paper Harbour Boy" is a title)
_PERSON_OFFERED = re.compile(
    rf"\b(?:[Ww]ho|{_PERSON_NOUN}s?|stylists?|hairdressers?|barbers?|doctors?|dentists?|"
    rf"therapists?|agents?|tutors?|trainers?|physicians?|vets?|lawyers?|nannies|nanny|"
    rf"babysitters?|cleaners?|plumbers?|electricians?|instructors?|coaches?)\b")
# A count with no noun: "They got 2.", "I found 10.", "I see 10 of those."
_BARE_COUNT = re.compile(
    r"(?i)\b(?:found|got|have|see|are|is)\s+(?:\d+|one|two|three|four|five|six|seven|eight|"
    r"nine|ten)(?:\s+(?:of\s+(?:them|those|these)|results?|matches|options))?\s*[.!:]\s*$")
# A person's pronoun or a message sent to the name, in the span's sentence: "Kim Vale is at
# Tarrow Hospital, so I can't book for her", "Ask Kim Vale, she picks".
_PERSON_SAID = re.compile(r"(?i)\b(?:he|she|him|her|his|hers|himself|herself)\b|"
                          r"\b(?:ask|tell|call|email|e-mail|text|message|contact)\s+$")
_FOR_WITH = re.compile(r"(?i)\b(?:for|with|under)\s+$")
_VERB = re.compile(r"\b(?:is|are|was|were|will|would|has|have|had|can|could|should)\b")
_RECENT = 4  # earlier turns read for the request
_REACH = 400  # characters of each earlier turn read (its end: the request is its last words)


def listing_requested(earlier: Sequence[str]) -> bool:
    """Whether one of the last earlier turns asks for or counts things of a listing, and none
    names a person who could be offered or asks for a name ("Under what name?")."""
    recent = [t[-_REACH:] for t in earlier[-_RECENT:]]
    return any(_REQUEST.search(t) for t in recent) and not any(
        _PERSON_OFFERED.search(t) or _ASKED_PERSON.search(t) for t in recent)


def _as_person(text: str, start: int, end: int, earlier: Sequence[str]) -> bool:
    """Whether the span's sentence speaks of a person ("she", "ask Kim Vale"), or one of the
    last earlier turns named the same words after a person cue ("a table for Kim Vale", "my
    name is Kim Vale")."""
    lo, hi = _sentence_bounds(text, start, end)
    if _PERSON_SAID.search(text, lo, hi) or _PERSON_SAID.search(text, max(lo, start - 20), start):
        return True
    value = " ".join(text[start:end].split())
    if len(value) < 2:
        return False
    pattern = re.compile(rf"(?<![\p{{L}}\p{{M}}\d]){re.escape(value)}(?![\p{{L}}\p{{M}}\d])")
    for t in earlier[-_RECENT:]:
        for m in islice(pattern.finditer(t), _MENTIONS):
            before = t[max(0, m.start() - 30):m.start()]
            if _FOR_WITH.search(before) or _STRONG_PERSON.search(before):
                return True
    return False


def offered_after_request(text: str, start: int, end: int, entity: str,
                          earlier: Sequence[str]) -> bool:
    """Whether ``text[start:end]`` is an option this turn offers from a listing the last
    earlier turns asked for (see the module doc)."""
    if not text[start:start + 1].isupper() or not listing_requested(earlier):
        return False
    lo, hi = _sentence_bounds(text, start, end)
    head = text[lo:start]
    offer = None
    for m in _OFFER.finditer(head):
        offer = m
    for m in _OFFER_MORE.finditer(head):
        offer = m if offer is None or m.end() > offer.end() else offer
    if offer is not None:
        list_start = lo + offer.end()
    elif (lo and _BARE_COUNT.search(text, max(0, lo - 60), lo)) or (
            not text[:lo].strip() and not text[hi:].strip(" \t\n.?!")
            and len(text[lo:hi].split()) <= 8 and not _VERB.search(text, lo, hi)):
        # after a bare count, or a short turn that is only the list, no sentence: "Krua Lan in
        # Tarrow.", "Marigold?" after "Anything else?" (not "Sam Porter is at the desk.")
        list_start = lo + len(head) - len(head.lstrip())
    else:
        return False
    region = text[list_start:hi]
    if len(region) > 160 or _PERSON_OFFERED.search(text[lo:hi]) \
            or _WEAK_PERSON.search(text[max(0, list_start - 12):list_start]) \
            or _STRONGEST_PERSON.search(text[max(0, list_start - 30):start]):
        return False
    items = [i for i in _LIST_ITEM_SEP.split(region.strip()) if i]
    if not items or not all(_TITLE_ITEM.fullmatch(i) for i in items):
        return False
    pos = list_start
    for item in items:  # the item the span is in
        at = text.find(item, pos)
        if at <= start < at + len(item):
            span = text[start:end]
            # a listed town alone, or after "in", "at", "near" ("Casa Velha in Tarrow"), is
            # where the thing is, not part of its name
            return not (entity == "LOCATION" and _listed(span) and (
                item.strip(" ?!.") == span or _PLACE_CUE.search(text, max(0, start - 12), start)))
        pos = at + len(item)
    return False


# Events asked for: a name then "will be at The Velvet Room", "is at Blue Note" is a performer.
_EVENTS = re.compile(r"(?i)\b(?:events?|concerts?|shows?|gigs?|festivals?|tickets?|games?|"
                     r"matches|playing|perform\w*)\b")


def performer_after_request(text: str, start: int, end: int, entity: str,
                            earlier: Sequence[str]) -> bool:
    """Whether ``text[start:end]`` is a performer a bot's turn lists after the last earlier
    turns asked for events: "Kim Vale will be at The Velvet Room", "On March 1st, Kim Vale is
    at Blue Note" (in one turn, ``thing_evidence``'s performer rule needs an event's word in the
    sentence)."""
    if entity != "PERSON" or not text[start:start + 1].isupper():
        return False
    recent = [t[-_REACH:] for t in earlier[-_RECENT:]]
    if not any(_EVENTS.search(t) for t in recent) or any(_PERSON_OFFERED.search(t)
                                                         for t in recent):
        return False
    rest = _NAME_REST.match(text, end)
    before = text[max(0, start - 40):start]
    head = _NAME_HEAD.search(before)
    lead = before[:head.start()] if head else before
    lo, hi = _sentence_bounds(text, start, end)
    return bool(_PERFORMER_AFTER.match(text, rest.end() if rest else end)) and not (
        _WEAK_PERSON.search(lead) or _STRONG_PERSON.search(lead)
        or _PERSON_OFFERED.search(text, lo, hi))


# Media asked for: "by" or "from" a name then is a credit, as with a media word in the sentence.
_MEDIA_ASKED = re.compile(r"(?i)\b(?:songs?|albums?|tracks?|music|playlists?|artists?|singers?|"
                          r"bands?|movies?|films?)\b")


# "by" after a title (a capitalised word), then at most two capitalised words of the name
_TITLED_CREDIT = re.compile(r"\p{Lu}[\p{L}\p{M}\d'’!?\-]*[ \t]+by[ \t]+"
                            r"(?:\p{Lu}[\p{L}\p{M}'’\-]*[ \t]+){0,2}$")


def credited_after_request(text: str, start: int, end: int, entity: str,
                           earlier: Sequence[str]) -> bool:
    """Whether ``text[start:end]`` is a title or an artist a bot's turn credits after the last
    earlier turns asked for songs or films: "Evening Fern by Odile Marchetti from Quiet
    Orchards." after "What else can you find?" and "I found 10 songs." (in one turn,
    ``thing_evidence`` needs a media word in the sentence)."""
    if not text[start:start + 1].isupper():
        return False
    recent = [t[-_REACH:] for t in earlier[-_RECENT:]]
    if not any(_MEDIA_ASKED.search(t) for t in recent) or any(_PERSON_OFFERED.search(t)
                                                              for t in recent):
        return False
    before = text[max(0, start - 40):start]
    if _STRONGEST_PERSON.search(before):
        return False
    if _TITLED_CREDIT.search(before) or _TITLE_BY.match(text, end) and not _WEAK_PERSON.search(
            before):
        return True  # "Evening Fern by Odile Marchetti" (not "the list was made by Sam Porter")
    return bool(_FROM_CREDIT.search(before)) and not (entity == "LOCATION"
                                                      and _listed(text[start:end]))


# The bot's question for a thing: "What kind of event are you interested in?", "Is there a
# specific film you had in mind?", "What is the movie title?", "Do you have a preferred
# restaurant?"
_ASK_NOUN = (r"(?:movies?|films?|songs?|tracks?|albums?|artists?|bands?|events?|concerts?|"
             r"shows?|restaurants?|hotels?|attractions?|titles?|games?|venues?)")
_ASKED_THING = re.compile(
    rf"(?i)\b(?:what|which)\b[^.?!]{{0,60}}?\b{_ASK_NOUN}\b[^.?!]{{0,80}}\?|"
    rf"\b(?:specific|particular|preferred|favou?rite)\s+{_ASK_NOUN}\b|"
    rf"\b{_ASK_NOUN}\s+(?:title|name)\b")
# ... that asks for no person: "Which restaurant, and under what name?"
_ASKED_PERSON = re.compile(r"(?i)\b(?:your|whose|his|her|their|guest'?s?|contact|what|which)\s+"
                           r"name|\bname\s+(?:for|on|under)\b|"
                           r"\bwho(?:se|m)?\b|\bunder\s+(?:what|which|whose)\b")
# Company named beside the answer: "Marigold. Sam Porter and I.", "me and Sam"
_COMPANY_AFTER = re.compile(r"(?i)(?:\s+\p{Lu}[\p{L}\p{M}'’\-]*){0,2}\s*,?\s*(?:and\s+(?:i|me|"
                            r"myself|my)\b|(?:is|are|will\s+be)\s+(?:coming|joining)|will\s+"
                            r"(?:come|join)|joins?\b)")
_COMPANY_BEFORE = re.compile(r"(?i)\b(?:me|i|myself|us)\s+and\s+(?:\p{Lu}\S*\s+){0,2}$")


def answer_to_request(text: str, start: int, end: int, entity: str,
                      earlier: Sequence[str]) -> bool:
    """Whether ``text[start:end]``, in a customer's turn, names the thing the bot's turn just
    before asked for ("What kind of event are you interested in?" then "I've heard that Kim
    Vale is really good"; "What is the movie title?" then "Watch Marta Fell."), with no person
    asked for there or named beside it here ("for", "with", "my friend", "Sam and I")."""
    if not earlier or not text[start:start + 1].isupper() or (
            entity == "LOCATION" and _listed(text[start:end])):
        return False
    asked = earlier[-1][-_REACH:]
    if not _ASKED_THING.search(asked) or _ASKED_PERSON.search(asked) \
            or _PERSON_OFFERED.search(asked):
        return False
    lo, hi = _sentence_bounds(text, start, end)
    before = text[max(lo, start - 40):start]
    return not (_WEAK_PERSON.search(before) or _STRONG_PERSON.search(before)
                or _PERSON_OFFERED.search(text, lo, hi) or _COMPANY_AFTER.match(text, end)
                or _COMPANY_BEFORE.search(before))


def in_listing_asked_for(text: str, start: int, end: int, entity: str, earlier: Sequence[str],
                         bot: Sequence[bool] | None, bot_turn: bool) -> bool:
    """Whether ``text[start:end]`` names a thing of the listing the conversation asked for: an
    option or a performer a bot's turn (``bot_turn``) offers after a request, or the thing a
    customer names when the bot's turn before asked for one. ``bot``: whether each of the
    ``earlier`` turns is the bot's (all where None)."""
    span = (text, start, end, entity, earlier)
    if bot_turn:
        found = offered_after_request(*span) or performer_after_request(*span) \
            or credited_after_request(*span)
    else:
        found = (bot is None or (bool(bot) and bot[-1])) and answer_to_request(*span)
    return found and not _as_person(text, start, end, earlier)
