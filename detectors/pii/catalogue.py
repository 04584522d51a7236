"""Names of things are not people: catalogue names the NER takes for names or places.

A support bot's catalogue is written like proper names: "Caramel Macchiato", "Cortado",
"Unlimited Plus", "Abbey Road". The NER (the encoder head, spaCy's small model) tags many of
them PERSON or LOCATION, and redaction then turns the menu into ``<PERSON>`` (pii 1.5.2: 54% of
3,774 menu-item mentions on the Taskmaster-4 coffee bot). ``drop_catalogue_names`` removes a
PERSON or LOCATION span when the text itself says it names a thing, and no person cue says
otherwise. Evidence read from the text only, so the decision is a pure function of the text
(no state: the same in batch, stream, any worker, after a restart):

- **a thing noun before it**, after a determiner or before "called/named/titled": "the song
  Hotel Key", "a movie called After", "a place called Zaoh" (``named_thing``);
- **catalogue vocabulary** (``CATALOGUE_WORDS``): a word of the span, the word right after it,
  or a word of the capitalised run after it is a product noun of a common catalogue (drinks and
  food, add-ons, sizes, phone and subscription plans, media, rooms, venues): "Caramel
  Macchiato", "Jin Xuan tea", "Unlimited Plus plan", "Lanna Thai Restaurant". Wins over the
  given-name list ("Jasmine tea") and the place list ("Mocha" is a town in Yemen), but not
  over a place cue before a LOCATION ("flew to Mocha");
- **a fixture** ("Eagles Vs Cowboys") or **a media credit**: "by" before the name in a sentence
  about songs, albums or films ("Curious by Hayley Kiyoko"; a credited artist or director is a
  public catalogue entry, not personal data);
- **inside a venue's name** (pii 1.8.0): a word of ``VENUE_WORDS`` (hotel, inn, stadium,
  theatre, cinema, museum, apartments, restaurant...) ends the span, or ends the capitalised run
  right before it ("Hilton Hotel Sacramento", "Angel Stadium of Anaheim", "Beach Park
  Apartments"), also after a place cue ("visit Beach Park Apartments");
- **a thing that is called something** (pii 1.8.0): "a park called", "it is called", "one is
  called", "the movie name is" (not "a guy called", "a nurse named": ``_PERSON_NOUN``);
- **a performer in a listing of events** (pii 1.8.0): in a sentence about events, concerts,
  shows or tickets, a name followed by "will perform", "is playing", "at <Venue>" or preceded by
  "there's", "the popular", "featuring" ("There's Aaron Lewis at the Fillmore"): a performer the
  bot lists is a public catalogue entry like a credited artist, not personal data; "for", "with",
  "by", "to" or a strong cue before the name keeps it a person ("tickets held for Sam Porter");
- **thing context**, only for a span with no given name of ``data/first_names.txt`` in it and
  no weak person cue ("for", "with", "by", "to") before it: a quantity or determiner before it
  ("two Frostbites", "an extra Frostbite", "our Premium"; not "the Castro novel", where the
  name modifies a noun), or a menu word in its sentence ("we don't have Frostbite on the
  menu").

A **strong person cue** before the span ("my name is", "I'm", "Mr", "Dr", "called", "named",
"under the name", "ask for") keeps the span a name against all but a thing noun ("a movie
called After"). A customer's own name keeps its redaction: "the order is for Sam" (given name,
and "for"), "my name is Tzvetelina Orsova" (name cue). A LOCATION that is a listed place or a
country is dropped only on a thing noun, a catalogue word, a fixture or a credit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import regex as re

from detectors.pii.names import first_names
from detectors.pii.ner import places
from detectors.pii.recognizers import COUNTRIES

# Singular, lower-case head nouns and modifiers of catalogue entries; written from general
# knowledge of menus, shops and plans (not read off an evaluation set). Everyday English words
# that are also surnames or given names (Baker, Rose, Brown, Honey) are left out.
CATALOGUE_WORDS = frozenset(
    """
    coffee latte macchiato mocha mochaccino cappuccino espresso americano cortado frappuccino
    frappe flat brew decaf decaffeinated roast blend chai matcha tea oolong earl steamer
    smoothie shake milkshake lemonade soda cola juice cocoa chocolate caramel vanilla hazelnut
    cinnamon peppermint pumpkin toffee syrup sauce drizzle sweetener stevia splenda sugar
    creamer cream whip foam froth milk oat almond soy coconut nonfat non-fat skim lactose
    shot shots ristretto lungo doppio affogato breve dirty iced nitro refresher frosted
    muffin croissant bagel scone donut doughnut cookie brownie sandwich panini wrap salad
    soup pizza burger fries taco burrito bowl cake cheesecake pie pastry waffle pancake
    toast sundae gelato sorbet
    grande venti tall trenta small medium large regular size sizes
    plan plans bundle unlimited prepaid postpaid data gigabyte gb subscription tier premium
    edition model album song track single ep playlist remix soundtrack episode season
    series trilogy sequel movie film show
    suite room rooms deluxe king queen twin
    restaurant ristorante trattoria pizzeria cuisine grill kitchen bistro diner cafe café
    bakery brewery tavern pub lounge steakhouse sushi ramen bbq barbecue hotel motel inn
    suites resort hostel apartments condos stadium arena theater theatre cinema museum
    gallery zoo aquarium cast orchestra quartet choir ensemble
    """.split()  # noqa: SIM905
)
# Words between a product's name and its catalogue noun ("Raspberry black tea").
_MODIFIERS = frozenset(
    """
    black green white red herbal iced hot cold sweet unsweet unsweetened decaf sparkling still
    frozen
    """.split()  # noqa: SIM905
)
# Nouns for people: "a guy called Sam" names a person, "a park called Alley Pond" a thing.
_PERSON_NOUN = (r"(?:guy|man|men|woman|women|girl|boy|lady|gentleman|person|people|friend|"
                r"colleague|customer|client|agent|someone|somebody|doctor|nurse|dentist|"
                r"stylist|technician|engineer|driver|courier|neighbou?r|kid|child|son|"
                r"daughter|brother|sister|mother|father|husband|wife|partner|cousin|"
                r"uncle|aunt|nephew|niece|user|member|manager|teacher|student|rep)")
# A thing noun right before the span, after a determiner or before "called", "named" or
# "titled": "the song Shallow", "a movie called After", "a place called Zaoh", "the album
# Lifers" (not "show Maria around": a verb takes no determiner).
_THING_NOUN = (r"(?:song|album|track|single|record|movie|film|show|series|episode|book|novel|"
               r"game|musical|hotel|restaurant|diner|caf[eé]|bar|place|property|apartment|"
               r"event|concert|venue|attraction|museum|shop|store|brand|product|item|drink|"
               r"plan|app|band|title)s?")
_NAMED_THING = re.compile(
    rf"(?i)(?:\b(?:the|a|an|this|that|our|your|their|its)\s+(?:\w+\s+)?{_THING_NOUN}|"
    rf"\b{_THING_NOUN}\s+(?:called|named|titled)|\btitled|\b{_THING_NOUN}(?:'s)?\s+name\s+is|"
    rf"\b(?:it|it's|its|one|this|that|which)\s+(?:is\s+|was\s+)?(?:called|named)|"
    rf"\b(?:a|an|one)\s+(?!{_PERSON_NOUN}\b)[a-z]+\s+(?:called|named))\s+(?:the\s+)?$")
# "by" before a name in a sentence about media: an artist's or a director's credit.
_MEDIA = re.compile(r"(?i)\b(?:songs?|albums?|tracks?|music|playlists?|artists?|bands?|"
                    r"movies?|films?|directed|starring|listen|play(?:ing)?|hear|sung|sings?|"
                    r"singers?|narrated|novels?)\b")
# "by", then at most two capitalised words of the same name ("by Dale Harlan" tagged "Harlan").
_CREDIT = re.compile(r"(?i:\bby)\s+(?:\p{Lu}[\p{L}\p{M}'’\-]*\s+){0,2}$")
# Words that end the name of a public place: a place or name inside such a name is part of the
# venue's name ("Angel Stadium of Anaheim", "Hilton Hotel Sacramento", "Beach Park Apartments").
VENUE_WORDS = frozenset(
    """
    hotel hotels motel inn suites resort hostel apartments condos residences stadium arena
    ballpark amphitheater amphitheatre theater theatre cinema cinemas playhouse museum gallery
    zoo aquarium cathedral ballroom restaurant ristorante trattoria pizzeria bistro diner cafe
    café bakery brewery tavern pub steakhouse brasserie
    """.split()  # noqa: SIM905
)  # not "park", "field", "hall", "lodge", "church", "kitchen": surnames too ("Seo-yeon Park")
# The capitalised run of a venue's name before the span: "Stadium of", "Hotel", "Inn New".
_VENUE_BEFORE = re.compile(
    r"(?:\p{Lu}[\p{L}\p{M}'’\-]*|&)"
    r"(?:\s+(?:by|of|the|de|del|la|le|&|\p{Lu}[\p{L}\p{M}'’\-]*)){0,5}\s+$")
# A performer in a listing of events: "There's Aaron Lewis at the Fillmore", "Kim Vale will
# perform at ...", "The popular Kim Vale will have a show". Read in a sentence about events.
_EVENT = re.compile(r"(?i)\b(?:events?|concerts?|shows?|gigs?|tours?|festivals?|perform\w*|"
                    r"tickets?|live|stage|venue|popular|showtimes?|playing)\b")
_PERFORMER_AFTER = re.compile(
    r"(?:'s|’s)?\s+(?:(?i:will\s+(?:perform\w*|play\w*|appear\w*|sing\w*|have\s+a\s+show|"
    r"be\s+live)|is\s+(?:performing|playing|appearing|live)\b|performs|plays\s+(?:at|live)|"
    r"live\s+at|(?:concert|show|gig|event|tour)\b)|"
    r"(?i:(?:will\s+be\s+|is\s+)?at\s+(?:the\s+)?)\p{Lu})")
_PERFORMER_BEFORE = re.compile(
    r"(?i)\b(?:there's|there\s+is|the\s+popular|popular\s+is|featuring|starring)\s+$")
_NAME_REST = re.compile(r"(?:[ \t]+\p{Lu}[\p{L}\p{M}'’\-]*){1,2}")
_NAME_HEAD = re.compile(r"(?:\p{Lu}[\p{L}\p{M}'’\-]*[ \t]+){1,2}$")
_FIXTURE = re.compile(r"(?i)\b(?:vs\.?|versus|v\.)\s*$")
_FIXTURE_AFTER = re.compile(r"(?i)\s+(?:vs\.?|versus|v\.)\s")
# Words that may continue a name run after the span ("Lanna Thai Restaurant", "Courtyard by
# Marriott"): capitalised words and a few connectors, at most four.
_RUN = re.compile(r"(?:\s+(?:by|of|the|de|del|la|le|&|n'|\p{Lu}[\p{L}\p{M}'’\-]*)){1,4}")
# Before a thing: a determiner, quantity, or an add-on verb; a name rarely follows these.
_THING_BEFORE = re.compile(
    r"(?i)(?<![\p{L}\d'’])(?:a|an|the|one|two|three|four|five|six|seven|eight|nine|ten|dozen|"
    r"(?<!(?:apt|suite|unit|box|no|ste|room|floor|#)\.?\s*)\d{1,2}|another|other|some|any|"
    r"our|your|their|its|no|extra|add|light|without|more|less|"
    r"half|double|triple|quadruple|large|medium|small|iced|hot|decaf|regular|same)\s+$")
# After a determiner, a name that modifies a noun may be a person's ("the Johnson novel", "the
# Smith account"); a thing named after "a"/"the" is followed by a function word or punctuation.
_FUNCTION_AFTER = frozenset(
    """
    with on in and or for please to is are was were at from of but that which instead too
    as if without today now here there then so thanks thank i we you it no extra
    """.split()  # noqa: SIM905
)
_MENU = re.compile(r"(?i)\b(?:menu|flavou?rs?|drinks?|beverages?|toppings?|options|in stock|"
                   r"sold out|our selection|catalog(?:ue)?)\b")
_STRONG_PERSON = re.compile(
    r"(?i)(?:\b(?:my name is|name is|name's|names? (?:are|is)|under the name(?: of)?|"
    r"i am|i'm|this is|called|named|ask for|asking for|speak (?:to|with)|talk to|"
    r"mr|mrs|ms|miss|dr|prof|sir|madam|dear|hi|hello|hey|thanks|thank you),?\.?\s+$)")
_PLACE_CUE = re.compile(r"(?i)\b(?:in|from|to|at|near|visit|visiting|around|across|into|"
                        r"towards?|through|via)\s+$")
_WEAK_PERSON = re.compile(r"(?i)\b(?:for|with|by|to|from|and)\s+$")
_WORD = re.compile(r"[\p{L}\p{M}][\p{L}\p{M}'’\-]*")
_SENTENCE = re.compile(r"[.!?\n]")
NAME_LIKE = frozenset({"PERSON", "LOCATION"})


def _words(s: str) -> list[str]:
    return [w.casefold().rstrip("'’") for w in _WORD.findall(s)]


def _catalogue_word(w: str) -> bool:
    return w in CATALOGUE_WORDS or (w.endswith("s") and w[:-1] in CATALOGUE_WORDS) or (
        w.endswith("es") and w[:-2] in CATALOGUE_WORDS)


def _sentence(text: str, start: int, end: int) -> str:
    lo = max((m.end() for m in _SENTENCE.finditer(text, 0, start)), default=0)
    after = _SENTENCE.search(text, end)
    return text[lo:after.start() if after else len(text)]


def thing_evidence(text: str, start: int, end: int, entity: str = "PERSON") -> str | None:
    """Why ``text[start:end]`` (tagged ``entity``) names a thing, or None where it may be a
    person or a place: ``named_thing``, ``catalogue_word``, ``fixture``, ``media_credit``,
    ``performer``, ``thing_context`` or ``menu_context``."""
    span = text[start:end]
    before = text[max(0, start - 40):start]
    if _NAMED_THING.search(before):
        return "named_thing"
    venue = _VENUE_BEFORE.search(before)
    if (venue is not None and any(w in VENUE_WORDS for w in _words(venue.group())[-3:])) or (
            _words(span)[-1:] and _words(span)[-1] in VENUE_WORDS and span[:1].isupper()):
        return "catalogue_word"  # inside a venue's name: "Stadium of Anaheim", "Park Apartments"
    if _STRONG_PERSON.search(before) or (entity == "LOCATION" and _PLACE_CUE.search(before)):
        return None
    words = _words(span)
    nxt = _WORD.match(text, end + 1) if text[end:end + 1] in (" ", "-") else None
    if nxt is not None and nxt.group().casefold() in _MODIFIERS:  # "Raspberry black tea"
        nxt = _WORD.match(text, nxt.end() + 1) if text[nxt.end():nxt.end() + 1] == " " else nxt
    run = _RUN.match(text, end)
    if any(_catalogue_word(w) for w in words) or (
            nxt is not None and _catalogue_word(nxt.group().casefold())) or (
            run is not None and any(_catalogue_word(w) for w in _words(run.group()))):
        return "catalogue_word"
    if _FIXTURE.search(before) or _FIXTURE_AFTER.match(text, end):
        return "fixture"
    if _CREDIT.search(before) and _MEDIA.search(_sentence(text, start, end)):
        return "media_credit"
    if entity == "PERSON" and span[:1].isupper() and _EVENT.search(
            text[max(0, start - 120):end + 80]):  # its sentence and the one before
        # the whole name the span is part of ("Kim" of "Kim Vale"): up to two capitalised words
        rest = _NAME_REST.match(text, end)
        head = _NAME_HEAD.search(before)
        lead = before[:head.start()] if head else before
        if not _WEAK_PERSON.search(lead) and not _STRONG_PERSON.search(lead) and (
                _PERFORMER_AFTER.match(text, rest.end() if rest else end)
                or _PERFORMER_BEFORE.search(lead)):
            return "performer"  # a performer in a listing of events: public, not personal
    if entity == "LOCATION":
        plain = " ".join(span.split())
        if plain.casefold() in places() or re.fullmatch(rf"(?i:{COUNTRIES})", plain):
            return None
    if _WEAK_PERSON.search(before):
        return None
    names = first_names()
    if any(w[:1].upper() + w[1:] in names for w in words):
        return None
    after = _WORD.match(text, end + 1) if text[end:end + 1] == " " else None
    raw = _WORD.findall(span)
    modifies = (after is not None and after.group().islower()
                and after.group() not in _FUNCTION_AFTER) or (
        any(w[:1].isupper() for w in raw) and any(w.islower() for w in raw))  # "Castro novel"
    # "the" before a capitalised place is its name's own article ("the Grand Canyon", "the
    # Everglades"); before a lower-case word the NER called a place, a thing ("the lake")
    thing = _THING_BEFORE.search(before)
    if thing and not modifies and not (entity == "LOCATION" and span[:1].isupper()
                                       and thing.group().strip().casefold() == "the"):
        return "thing_context"
    if _MENU.search(_sentence(text, start, end)):
        return "menu_context"
    return None


def drop_catalogue_names(text: str, results: Sequence[Any]) -> list[Any]:
    """``results`` without the PERSON and LOCATION spans that name a thing."""
    return [r for r in results if r.entity_type not in NAME_LIKE
            or thing_evidence(text, r.start, r.end, r.entity_type) is None]
