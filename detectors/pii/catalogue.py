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

from collections.abc import Callable, Sequence
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
# People who work at a place: "the hotel staff called Maria" names a person.
_STAFF = (r"(?:staff|team|desk|reception|receptionist|office|owner|owners|chef|waiter|waitress|"
          r"host|hostess|concierge|manager|workers?|employees?|support|front|just|also|then|"
          r"finally|already|has|have|had|never|and|who|which|that)")
# A thing noun right before the span, after a determiner or before "called", "named" or
# "titled": "the song Shallow", "a movie called After", "a place called Zaoh", "the album
# Lifers" (not "show Maria around": a verb takes no determiner).
_THING_NOUN = (r"(?:song|album|track|single|record|movie|film|show|series|episode|book|novel|"
               r"game|musical|hotel|restaurant|diner|caf[eé]|bar|place|property|apartment|"
               r"event|concert|venue|attraction|museum|shop|store|brand|product|item|drink|"
               r"plan|app|band|title|"
               # pii 1.8.2: a rental car's class or body ("a standard Brenlow Vesta")
               r"suv|sedan|hatchback|minivan|convertible|standard|compact|intermediate)s?")
_NAMED_THING = re.compile(
    rf"(?i)(?:\b(?:the|a|an|this|that|our|your|their|its|\d{{1,3}})\s+(?:\w+\s+)?{_THING_NOUN}|"
    rf"\b{_THING_NOUN}\s+(?:called|named|titled)|\btitled|\b{_THING_NOUN}(?:'s)?\s+name\s+is|"
    rf"\b(?:it|it's|its|one|this|that|which)\s+(?:is\s+|was\s+|to\s+be\s+)?(?:called|named)|"
    rf"\b(?:a|an|one)\s+(?!{_PERSON_NOUN}\b)[a-z]+\s+(?:called|named)|"
    # pii 1.8.1: "the event is called", "its name is", "the title of the song is", "a
    # restaurant in Brisbane called", "a hotel by the name of"
    rf"\b{_THING_NOUN}\s+(?:is|was)\s+(?:called|named|titled)|\bits\s+name\s+is|"
    rf"\b(?:title|name)\s+of\s+(?:the|this|that|your)\s+{_THING_NOUN}\s+is|"
    rf"\b(?:the|this|that|your)\s+(?:event|concert|show|movie|film|song|album|venue)"
    rf"(?:\s*,|\s+(?:is|was))|"
    rf"\b(?:a|an|the|one|there'?s|there\s+is)\s+(?:\w+\s+){{0,2}}{_THING_NOUN}\s+"
    rf"(?:(?!{_PERSON_NOUN}\b|{_STAFF}\b)"
    rf"[\w'’]+\s+){{0,3}}(?:called|named|by\s+the\s+name\s+of))\s+(?:the\s+)?$")
# pii 1.8.2: a table booked at a name is at a restaurant: "a table at Nonna Vittoria", "your
# table for 3 at Lola Reyes", "a reservation at Ronan's Pizza Grotto" (the capitalised run
# before the span is the restaurant's name; "a table for Sam" is no such thing).
_BOOKED_AT = re.compile(r"\b(?i:table|reservation|booking)\b[^.?!\n]{0,40}?\b(?i:at)\s+"
                        r"(?:(?i:the)\s+)?(?:\p{Lu}[\p{L}\p{M}'’\-]*\s+){0,3}$")
# "by" before a name in a sentence about media: an artist's or a director's credit.
_MEDIA = re.compile(r"(?i)\b(?:songs?|albums?|tracks?|music|playlists?|artists?|bands?|"
                    r"movies?|films?|directed|starring|listen|play(?:ing)?|hear|sung|sings?|"
                    r"singers?|narrated|novels?)\b")
# pii 1.8.2: a media role said of the name, in a sentence about media: "the singer is ...".
_ROLE_IS = re.compile(r"(?i)\b(?:singer|artist|band|director|composer|songwriter)\s+(?:is|was)"
                      r"\s+$")
# "by", then at most two capitalised words of the same name ("by Dale Harlan" tagged "Harlan").
_CREDIT = re.compile(r"(?i:\bby)\s+(?:\p{Lu}[\p{L}\p{M}'’\-]*\s+){0,2}$")
# Words that end the name of a public place: a place or name inside such a name is part of the
# venue's name ("Angel Stadium of Anaheim", "Hilton Hotel Sacramento", "Beach Park Apartments").
VENUE_WORDS = frozenset(
    """
    hotel hotels motel inn suites resort hostel apartments condos residences stadium arena
    ballpark amphitheater amphitheatre theater theatre cinema cinemas playhouse museum gallery
    zoo aquarium cathedral ballroom restaurant ristorante trattoria pizzeria bistro diner cafe
    café bakery brewery tavern pub steakhouse brasserie alehouse shop
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
    r"be\s+(?:live|playing|performing))|is\s+(?:(?:also|now|currently|still)\s+)?"
    r"(?:performing|playing|appearing|live)\b|performs|plays\s+(?:at|live)|"
    r"live\s+at|(?:concert|show|gig|event|tour)\b)|"
    r"(?i:(?:will\s+be\s+|is\s+)?at\s+(?:the\s+)?)\p{Lu})")
_PERFORMER_BEFORE = re.compile(
    r"(?i)\b(?:there's|there\s+is|the\s+popular|popular\s+is|featuring|starring)\s+$")
_NAME_REST = re.compile(r"(?:[ \t]+\p{Lu}[\p{L}\p{M}'’\-]*){1,2}")
_NAME_HEAD = re.compile(r"(?:\p{Lu}[\p{L}\p{M}'’\-]*[ \t]+){1,2}$")
# pii 1.8.1. The capitalised run a span starts, up to a venue's word: "Brenlow Cinema & Alehouse",
# "Ashgrove Point Apartments", "Tomas Vey's Irish Pub" (capitalised words only, so "Maria by
# the Hilton Hotel" is no venue's name).
_VENUE_RUN = re.compile(r"(?:'s|’s)?(?:\s+(?:of|&|\d{1,3}|\p{Lu}[\p{L}\p{M}'’\-]*)){1,4}")
# The span said to be a thing: "Orsolya Dree is a great restaurant", "Kelmarsh Point, which is a
# historical landmark", "The Halden Crown Tarrow is also a nice 3 star hotel"; the noun
# must end the phrase ("Sam is a hotel manager" is a person).
_THING_ROLE = (r"(?:landmark|attraction|venue|museum|restaurant|place\s+of\s+worship|park|"
               r"event|concert|festival|movie|film|song|album|show|musical|play|hotel|motel|"
               r"resort|apartments?|property|complex|cinema|theat(?:er|re)|shop|store|brand|"
               r"bar|pub|caf[eé]|diner|bistro|eatery|spot|destination|gallery|zoo|"
               r"amusement\s+park|theme\s+park|nature\s+preserve|one\s+of\s+the\s+movies)s?")
_SAID_THING = re.compile(
    r"(?:'s|’s)?(?:\s+(?:of|in|&|\p{Lu}[\p{L}\p{M}'’\-]*)){0,4}?,?\s+(?:which\s+)?"
    r"(?i:is|was|'s|’s)\s+(?i:also\s+|really\s+|quite\s+)?(?i:a|an|one\s+of\s+the)\s+"
    r"(?:(?!(?i:at|in|of|for|with|the|from|to|on|by|who|that)\b)[\w'’\-]+\s+){0,3}?(?i:"
    + _THING_ROLE + r")\b(?!\s+(?!(?i:in|at|on|with|for|near|"
    r"and|that|which|you|i)\b)\p{Ll})")
# ... or so said in the next sentence: "You might enjoy Wenlock Hall. It's a Performing Arts
# Venue.", "Try the Tarrow Bridge. It is a historical landmark."
_SAID_NEXT = re.compile(
    r"(?:'s|’s)?(?:\s+(?:of|in|&|\p{Lu}[\p{L}\p{M}'’\-]*)){0,4}?[.!]\s+(?:It|This)(?:'s|’s|"
    r"\s+is)\s+(?i:also\s+|really\s+|quite\s+)?(?i:a|an)\s+(?:(?!(?i:at|in|of|for|with|the|"
    r"from|to|on|by|who|that)\b)[\w'’\-]+\s+){0,3}?(?i:" + _THING_ROLE + r")\b(?!\s+\p{Ll})")
# A title on a screen: "Please confirm Marigold playing with subtitles".
_SHOWING_AFTER = re.compile(r"\s+(?:playing|showing|screening)\s+(?:with|without|on|in)\b")
# A title credited to an artist, in a sentence about media: "How about Evening Fern by Odile
# Marchetti".
_TITLE_BY = re.compile(r"(?:\s+(?:of|the|a|in|for|\p{Lu}[\p{L}\p{M}'’\-]*)){0,3}?\s+by\s+"
                       r"\p{Lu}")
# A title played: "I'm playing Evening Fern on the TV" (a device or media word in the sentence).
_PLAYED = re.compile(r"(?i)\b(?:play|playing|played|stream|streaming)\s+(?:the\s+)?$")
# A title watched or heard: "Do you want to watch Marigold?", "I wish to watch Marigold.", "Listen
# to Evening Fern now" (only what ends the phrase may follow: "watch Sam play" is a person).
_WATCHED = re.compile(r"(?i)\b(?:watch|watching|hear|listen\s+to|listening\s+to)\s+(?:the\s+)?$")
_WATCHED_END = re.compile(r"(?:'s|’s)?(?:\s+(?:of|in|&|\p{Lu}[\p{L}\p{M}'’\-]*|\d+)){0,4}?\s*"
                          r"(?:[?.!,;]|$|\s+(?:with|without|on|now|tonight|today|tomorrow|later|"
                          r"please)\b)")
_DEVICE = re.compile(r"(?i)\b(?:tv|speaker|speakers|device|subtitles|screen|songs?|albums?|"
                     r"tracks?|movies?|films?|shows?|episodes?|playlists?)\b")
# A venue's or a record's noun after a name, lower-case too: "visit Aster Park apartments",
# "from Narrated For You album" (a place cue before it does not make it a place).
_HEAD_AFTER = re.compile(r"[ \t]+(?i:albums?|songs?|tracks?|soundtracks?|playlists?|movies?|films?|"
                         r"events?|concerts?|festivals?|apartments|condos)\b")
# "from" an artist or an album, in a sentence about music or films: a credit, like "by".
_FROM_CREDIT = re.compile(r"(?i)\bfrom\s+(?:the\s+)?(?:(?:album|artist|band|singer|"
                          r"movie|film|show)\s+)?$")
# Tickets to an event: a number of tickets, "to"/"for" the span, then a date, a town or a venue
# ("Book 2 tickets for Kim Vale in Tarrow on March 3rd", "tickets to Kim Vale at 8 pm"); "held
# for", "are for" and a name with nothing of an event after it keep a customer's name ("2
# tickets for Sam, please").
_TICKETS_FOR = re.compile(r"(?i)(?:\b(?:\d+|a|one|two|three|four|five|six|seven|eight|nine|ten)"
                          r"\s+(?:\w+\s+)?tickets?\s+(?:to|for)|\btickets\s+to)\s+(?:the\s+)?"
                          r"(?:\p{Lu}\S*\s+){0,2}$")
# Tickets handed to someone are for a person: "I sent the tickets to Sam Porter on Monday".
_TICKETS_GIVEN = re.compile(
    r"(?i)\b(?:sen[dt]|sending|e?mail(?:ed|ing)?|gave|give|giving|forward(?:ed|ing)?|"
    r"transferr?(?:ed|ing)?|pass(?:ed|ing)?|hand(?:ed|ing)?|text(?:ed|ing)?|deliver(?:ed|ing)?|"
    r"assign(?:ed|ing)?|reserved?|held|hold(?:ing)?)\b(?:\s+\S+){0,3}\s+tickets?\s+(?:to|for)\s+"
    r"(?:the\s+)?(?:\p{Lu}\S*\s+){0,2}$")
_EVENT_AFTER = re.compile(r"(?:\s+(?:and|&)\s+\p{Lu}[\p{L}\p{M}'’\-]*)?\s+(?:on\s+(?:(?i:"
                          r"january|february|march|april|may|june|july|august|september|october|"
                          r"november|december|monday|tuesday|wednesday|thursday|friday|saturday|"
                          r"sunday|the\s+\d)|\d)|for\s+(?i:january|february|march|april|may|"
                          r"june|july|august|september|october|november|december)\s+\d|"
                          r"at\s+\d{1,2}(?::\d\d)?\s*(?i:am|pm)\b|(?:in|at)\s+(?:the\s+)?\p{Lu})")
# pii 1.8.1: names offered as options in a listing: "I found 4 films. How about Quiet Orchards,
# Paper Lanterns or Marigold?" An offer ("how about", "would you like", "including"...) or a
# sentence that is only the list, right after one that counts things of a listing; the things
# are titles, venues or products (not stylists or doctors, whose names stay names).
_LISTING_NOUN = (r"(?:movies?|films?|songs?|tracks?|albums?|events?|concerts?|shows?|"
                 r"showings?|restaurants?|hotels?|attractions?|apartments?|properties|cars?|"
                 r"titles?|matches|results|options|recommendations|showtimes?|plays?|musicals?)")
_OFFER = re.compile(
    r"(?i)(?:\b(?:how|what)\s+about|\bwhat\s+do\s+you\s+think\s+(?:of|about)|"
    r"\bwould\s+you\s+like(?:\s+to\s+(?:see|watch|hear|try))?|"
    r"\bdo\s+you\s+(?:like|want(?:\s+to\s+(?:see|watch|hear))?)|\binterested\s+in|"
    r"\btry|\bincluding|\bsuch\s+as|\bshowings\s+of|\bchoose\s+from|\bthere'?s|"
    r"\bthere\s+(?:is|are)|\bwe\s+have|\bi\s+have|\bthey\s+(?:have|got)|\bnext)"
    r"\s*[,:]?\s+")
# A listing's noun with no number, for an offer: "Which restaurant? How about Luigi's?"
_NAMED_LISTING = re.compile(rf"(?i)\b{_LISTING_NOUN}\b")
_COUNTED = re.compile(rf"(?i)\b(?:\d+|a|one|two|three|four|five|six|seven|eight|nine|ten|some|"
                      rf"several|few)\s+(?:[\w-]+\s+){{0,2}}?{_LISTING_NOUN}\b")
_TITLE_ITEM = re.compile(
    r"[\p{Lu}\d][\p{L}\p{M}\d'’!:.\-]*(?:\s+(?:[\p{Lu}\d][\p{L}\p{M}\d'’!:.\-]*|a|an|the|of|in|on|"
    r"and|or|for|with|is|to|at|by|from|my|your|de|la|le|del))*[?!.]?")
_LIST_ITEM_SEP = re.compile(r"\s*(?:,\s*(?:(?:and|or)\s+)?|\s(?:and|or)\s+)")
_FIXTURE = re.compile(r"(?i)\b(?:vs\.?|versus|v\.)\s*$")
_FIXTURE_AFTER = re.compile(r"(?i)\s+(?:vs\.?|versus|v\.)\s")
# Words that may continue a name run after the span ("Lanna Thai Restaurant", "Courtyard by
# Marriott"): capitalised words and a few connectors, at most four.
_RUN = re.compile(r"(?:'s|’s)?(?:\s+(?:by|of|the|de|del|la|le|&|n'|\p{Lu}[\p{L}\p{M}'’\-]*)){1,4}")
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
# The strong cues no name of a thing stands after (not "called", "named", "this is": "a
# restaurant in Tarrow called ...", the album "This Is Us"; not a greeting): read before the
# rules of pii 1.8.1, so "Dr. Lee" or "my name is Lee" in a listing stays a person.
_STRONGEST_PERSON = re.compile(
    r"(?i)(?:\b(?:my name is|name is|name's|names? (?:are|is)|under the name(?: of)?|"
    r"i am|i'm|ask for|asking for|speak (?:to|with)|talk to|"
    r"mr|mrs|ms|miss|dr|prof|sir|madam|dear),?\.?\s+$)")
_PLACE_CUE = re.compile(r"(?i)\b(?:in|from|to|at|near|visit|visiting|around|across|into|"
                        r"towards?|through|via)\s+$")
_WEAK_PERSON = re.compile(r"(?i)\b(?:for|with|by|to|from|and)\s+$")
_WORD = re.compile(r"[\p{L}\p{M}][\p{L}\p{M}'’\-]*")
_SENTENCE = re.compile(r"[.!?\n]")
NAME_LIKE = frozenset({"PERSON", "LOCATION"})
_MENTIONS = 8  # mentions of a value read per earlier turn


def _words(s: str) -> list[str]:
    return [w.casefold().rstrip("'’") for w in _WORD.findall(s)]


def _catalogue_word(w: str) -> bool:
    return w in CATALOGUE_WORDS or (w.endswith("s") and w[:-1] in CATALOGUE_WORDS) or (
        w.endswith("es") and w[:-2] in CATALOGUE_WORDS)


def _sentence(text: str, start: int, end: int) -> str:
    lo = max((m.end() for m in _SENTENCE.finditer(text, 0, start)), default=0)
    after = _SENTENCE.search(text, end)
    return text[lo:after.start() if after else len(text)]


# A sentence's end, not an abbreviation's full stop ("Dr. Who", "St. Louis").
# "Shazam! and ..." goes on: a mark before lower-case words, a comma or another mark ends none.
_LIST_SENTENCE = re.compile(
    r"(?<!\b(?:Dr|Mr|Mrs|Ms|St|Jr|Sr|Mt|vs|No))[.!?](?![ \t]*(?:\p{Ll}|[,?!]))|\n")


# How far a listing's sentence is looked for around a span: a bound, so that a text with no
# sentence end ("Mr. Mr. Mr. ...", 1,249 spans in 5,000 characters) costs linear time.
_REACH = 300


def _sentence_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    floor = max(0, start - _REACH)
    lo = max((m.end() for m in _LIST_SENTENCE.finditer(text, floor, start)), default=floor)
    ceiling = min(len(text), end + _REACH)
    after = _LIST_SENTENCE.search(text, end, ceiling)
    return lo, after.start() if after else ceiling


# A sentence that files a person, not a listing's item: "I have Sam Porter on file as the guest"
_ON_FILE = re.compile(rf"(?i)\b(?:on\s+file|on\s+record|guests?|booked\s+(?:for|under)|"
                      rf"reservation\s+(?:for|under)|{_PERSON_NOUN}s?)\b")


def offered_in_listing(text: str, start: int, end: int) -> str | None:
    """The item of a listing that ``text[start:end]`` is in, or None where it is none of the
    names a listing offers (pii 1.8.1): in its
    sentence, after an offer ("How about", "including", "would you like") or alone after a
    sentence that counts titles, venues or products ("I found 4 films."), with such a count
    in its sentence or the one before, and every item of the list capitalised. A person cue
    ("for", "with", "my name is") before the list or the span keeps it a name."""
    lo, hi = _sentence_bounds(text, start, end)
    prev_lo, _ = _sentence_bounds(text, max(0, lo - 2), max(0, lo - 1)) if lo else (0, 0)
    counted = _COUNTED.search(text, prev_lo, hi) is not None
    head = text[lo:start]
    found = _offered(text, lo, hi, prev_lo, counted, head)
    if found is None and not counted and _NAMED_LISTING.search(text, prev_lo, hi):
        found = _offered(text, lo, hi, prev_lo, True, head, offer_only=True)
    if found is None:
        return None
    list_start, items = found
    pos = list_start
    for item in items:  # the item the span is in
        at = text.find(item, pos)
        if at <= start < at + len(item):
            # pii 1.8.2: inside an item that is a sentence, not a title, a person cue before
            # the span keeps it a name ("I found 10 songs. The playlist is shared with Dana.")
            if not _TITLE_ITEM.fullmatch(item) and (
                    (at < start and (_WEAK_PERSON.search(text[max(at, start - 12):start])
                                     or _STRONG_PERSON.search(text[max(at, start - 30):start])))
                    or _ON_FILE.search(item)):
                return None  # "I have Sam Porter on file as the guest"
            return item
        pos = at + len(item)
    return None


def _offered(text: str, lo: int, hi: int, prev_lo: int, counted: bool, head: str,
             offer_only: bool = False) -> tuple[int, list[str]] | None:
    offer = None
    for m in _OFFER.finditer(head):
        offer = m
    if offer_only and offer is None:
        return None
    list_start = lo + offer.end() if offer else lo + len(head) - len(head.lstrip())
    if offer is None and not (counted and lo and _COUNTED.search(text, prev_lo, lo)):
        return None
    region = text[list_start:hi]
    if len(region) > 160 or _WEAK_PERSON.search(text[max(0, list_start - 12):list_start]) \
            or _STRONG_PERSON.search(text[max(0, list_start - 30):list_start]):
        return None
    items = [i for i in _LIST_ITEM_SEP.split(region.strip()) if i]
    if counted:
        ok = bool(items) and all(i[:1].isupper() or i[:1].isdigit() for i in items)
        return (list_start, items) if ok else None
    # No count: an offer of three or more titles, each written as one ("Nights with My
    # Family"; not "Lee to call you back"), with no word for a person about it.
    ok = (len(items) >= 3 and all(_TITLE_ITEM.fullmatch(i) for i in items)
          and not re.search(rf"\b{_PERSON_NOUN}s?\b|\b(?:stylists?|doctors?|dentists?|"
                            rf"therapists?|agents?|tutors?|trainers?)\b", text[prev_lo:hi]))
    return (list_start, items) if ok else None


def _near_sentence(text: str, start: int, end: int) -> str:
    """The span's sentence, looked for at most ``_REACH`` characters either side."""
    lo, hi = _sentence_bounds(text, start, end)
    return text[lo:hi]


def _listed(span: str) -> bool:
    plain = " ".join(span.split())
    return plain.casefold() in places() or bool(re.fullmatch(rf"(?i:{COUNTRIES})", plain))


def thing_evidence(text: str, start: int, end: int, entity: str = "PERSON") -> str | None:
    """Why ``text[start:end]`` (tagged ``entity``) names a thing, or None where it may be a
    person or a place: ``named_thing``, ``catalogue_word``, ``fixture``, ``media_credit``,
    ``performer``, ``thing_context`` or ``menu_context``."""
    span = text[start:end]
    before = text[max(0, start - 40):start]
    if _NAMED_THING.search(before):
        return "named_thing"
    venue = _VENUE_BEFORE.search(before)
    if (venue is not None and any(w in VENUE_WORDS for w in _words(venue.group())[-5:])) or (
            _words(span)[-1:] and _words(span)[-1] in VENUE_WORDS and span[:1].isupper()):
        return "catalogue_word"  # inside a venue's name: "Stadium of Anaheim", "Park Apartments"
    if _STRONGEST_PERSON.search(before):  # "my name is", "Dr.", "I'm": a person, whatever follows
        return None
    if span[:1].isupper() and _BOOKED_AT.search(before):
        return "named_thing"  # "a table at Nonna Vittoria", "booking your table for 3 at X"
    venue_run = _VENUE_RUN.match(text, end) if span[:1].isupper() else None
    if venue_run is not None and any(w in VENUE_WORDS for w in _words(venue_run.group())):
        return "catalogue_word"  # the start of a venue's name: "Brenlow Cinema & Alehouse"
    if span[:1].isupper() and (_SAID_THING.match(text, end) or _SAID_NEXT.match(text, end)):
        return "said_thing"  # "Orsolya Dree is a great restaurant"
    run_end = venue_run.end() if venue_run is not None else end
    if span[:1].isupper() and _HEAD_AFTER.match(text, run_end):
        return "catalogue_word"  # "visit Ashgrove Row apartments", "the Paper Kites album"
    if span[:1].isupper() and _TICKETS_FOR.search(before) and not _TICKETS_GIVEN.search(
            before) and _EVENT_AFTER.match(text, run_end):
        return "performer"  # "2 tickets for Kim Vale on March 3rd in Tarrow"
    if span[:1].isupper() and _FROM_CREDIT.search(before) and _MEDIA.search(
            _near_sentence(text, start, end)) and not (entity == "LOCATION" and _listed(span)):
        return "media_credit"  # "songs from Odile Marchetti", "from Quiet Orchards"
    if span[:1].isupper() and not _WEAK_PERSON.search(before) and (
            (_TITLE_BY.match(text, end) and _MEDIA.search(_near_sentence(text, start, end)))
            or ((_PLAYED.search(before) or _SHOWING_AFTER.match(text, end))
                and _DEVICE.search(_near_sentence(text, start, end)))
            or (_WATCHED.search(before) and _WATCHED_END.match(text, end))):
        return "media_title"  # "Evening Fern by Odile Marchetti", "playing Evening Fern on the TV"
    item = offered_in_listing(text, start, end) if span[:1].isupper() else None
    if item is not None and not (entity == "LOCATION" and _listed(span)
                                 and item.strip(" ?!.") == span):
        # a listed town is offered only inside a longer title ("... Time in Hollywood")
        return "listing"  # "I found 4 films. How about Quiet Orchards or Marigold?"
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
    if (_CREDIT.search(before) or _ROLE_IS.search(before)) and _MEDIA.search(
            _sentence(text, start, end)):
        return "media_credit"  # "Curious by Hayley Kiyoko", "the singer is Odile Marchetti"
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
    if entity == "LOCATION" and _listed(span):
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


# A street address said to be a public venue is the venue's name (pii 1.8.2): "45 Harbour Row is
# a nice 2 star hotel" (not a home: "12 Oak Street, which is an apartment", stays an address).
_VENUE_ROLE = re.compile(r"(?i)\b(?:hotel|motel|resort|restaurant|bar|pub|caf[eé]|diner|bistro|"
                         r"eatery|cinema|theat(?:er|re)|museum|gallery|venue|attraction|"
                         r"landmark|park|zoo)s?$")


def address_said_venue(text: str, start: int, end: int) -> bool:
    """Whether the STREET_ADDRESS ``text[start:end]`` is said to be a hotel, restaurant or
    another public venue right after it."""
    said = _SAID_THING.match(text, end) or _SAID_NEXT.match(text, end)
    return said is not None and _VENUE_ROLE.search(said.group()) is not None


def drop_spans(results: Sequence[Any], venue: Callable[[Any], bool],
               thing: Callable[[Any], bool]) -> list[Any]:
    """``results`` without the street addresses that ``venue`` says are a venue and the PERSON
    and LOCATION spans that ``thing`` says name a thing; every other span stays."""
    return [r for r in results
            if not (r.entity_type == "STREET_ADDRESS" and venue(r))
            and not (r.entity_type in NAME_LIKE and thing(r))]


def drop_catalogue_names(text: str, results: Sequence[Any]) -> list[Any]:
    """``results`` without the PERSON and LOCATION spans that name a thing, and the street
    addresses said to be a venue."""
    return drop_spans(
        results, lambda r: address_said_venue(text, r.start, r.end),
        lambda r: thing_evidence(text, r.start, r.end, r.entity_type) is not None)
