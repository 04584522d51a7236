"""``StreetAddressRecognizer``: street addresses, which presidio lacks, in presidio's style.

Named scored patterns for address pieces (number + name + street type, European "name + number"
and "Rua/Avenida/Rue ..." forms, units, PO and military boxes); a validation hook rejects
number runs with only plain lowercase English words; context words in a window around the
match ("address", "live", "ship", "meet"...) raise the score. Adjacent pieces are merged into one
block, which is extended over following city / region / postcode / country lines. Imported only
by ``PiiDetector.load()``.
"""

from __future__ import annotations

from typing import Any

import regex as re
from presidio_analyzer import Pattern, RecognizerResult

from detectors.pii.recognizers import ChatPatternRecognizer, WindowContextMixin, _context

_WORD = r"[\p{L}][\p{L}\p{M}'’.\-]*"
_CAP = r"\p{Lu}[\p{L}\p{M}'’.\-]*"
# _WORD and _CAP with at most 64 characters, where every word start of "A.A.A.A..." would
# otherwise scan to the end of the run (quadratic)
_WORD64 = r"[\p{L}][\p{L}\p{M}'’.\-]{0,63}"
_CAP64 = r"\p{Lu}[\p{L}\p{M}'’.\-]{0,63}"

STREET_TYPES = (
    "street|st|avenue|ave|road|rd|drive|dr|lane|ln|boulevard|blvd|court|courts|ct|terrace|way|"
    "place|pl|circle|cir|parkway|pkwy|highway|hwy|square|sq|alley|crescent|close|trail|row|"
    "gardens|grove|mews|plaza|loop|ridge|heights|pike|route|esplanade|promenade|quay|wharf|"
    "crossing|junction|bypass|landing|estates?|turnpike|walk|green|park|hills?|views?|point|"
    "lakes?|village|station|summit|valley|harbou?r|port|fields?|meadows?|springs?|mills?|falls|"
    "vista|glen|haven|ranch|oval|cove|creek|shores?|path|trace|track|spur|orchard|pines?|plains?|"
    "prairie|rapids|river|stream|ville|wells?|knolls?|isle|lodge|manor|neck|skyway|tunnel|flats"
)
# USPS street suffixes (Publication 28, appendix C1) the list above lacks, plurals included:
# "234 Ben Villages", "7868 Elizabeth Divide", "880 Cristina Throughway".
STREET_TYPES += (
    "|villages|divide|cent(?:er|re)s?|throughway|expressway|freeway|motorway|causeway|"
    "extensions?|forks?|fords?|gateway|inlet|islands?|keys?|mount(?:ain)?s?|overpass|passage|"
    "radial|ramp|shoals?|stravenue|trafficway|underpass|unions?|viaduct|bluffs?|bottom|branch|"
    "bridge|brooks?|burgs?|canyon|cape|cliffs?|commons?|corners?|curve|dale|ferry|forges?|"
    "hollow|lights?|locks?|missions?|points|ports|ridges|roads|squares|streets|valleys|walks|"
    "ways|harbou?rs|lanes|drives|courts|circles|crescents|loops|rows|trails|islands|expy|fwy|"
    "cres|gdns|tce|pde|"  # Crescent, Gardens, Terrace, Parade as written on letters
    "rise|reach|buildings"
)
_MAIN_TYPES = "street|avenue|road|drive|lane|boulevard|terrace|court|place|square|way"
# Street-type words written as the end of the name ("Bundesstrasse", "Þorsteinsgata", "-katu").
STREET_ENDINGS = (
    "stra(?:ss|ß)e|str\\.|gasse|weg|platz|allee|damm|ufer|gata|gatan|gränd|vägen|väg|stigen|"
    "vej|vænget|veien|vegen|gate|gaten|tie|katu|kuja|polku|tér|utca|útja|út|körút|ulica|ulice|"
    "straat|laan|plein|gracht|kade|singel|dreef|steeg|terrasse|vegur|stræti|braut"
)
STREET_PREFIXES = (
    "rua|rúa|avenida|avda\\.|av\\.|calle|c/|carrer|via|viale|piazza|corso|largo|rue|avenue|"
    "boulevard|chemin|allée|praça|travessa|alameda|paseo|plaza|ulica|ul\\.|aleja|strada|camino|"
    "πλατεία|οδός"
)
UNIT = r"(?i:apt\.?|apartment|suite|ste\.|unit|flat|floor|fl\.|bldg\.?|building|plot|bungalow)"
ADDRESS_CONTEXT = [
    "address", "live", "lives", "living", "street", "moved", "move", "located", "ship",
    "shipping", "deliver", "delivery", "send", "sent", "mail", "billing", "meet", "corner",
    "side", "restaurant", "apartment", "house", "home", "taxi", "drop", "enter", "arrived",
]
_TAIL = re.compile(
    r"(?:[ \t]*,[ \t]*|[ \t]*\n[\s>]*|[ \t]+(?=\p{Lu}{2})|(?<=\d\.?)[ \t]+(?=\p{Lu}))"
    r"(?:(?:nan|\p{Lu}[\p{L}\p{M}'’.\-]*)(?:[ \t]+(?:\p{Lu}[\p{L}\p{M}'’.\-]*|nad|de|del|la|am))"
    r"{0,3}(?:[ \t]+\([\p{L} ]+\))?)?"
    r"(?:[ \t]*,?[ \t]*(?:\p{Lu}{2,3}|nan))?"
    r"(?:[ \t]*,?[ \t]*(?:\d{4,6}(?:-\d{3,4})?|\d{3}[ \t]\d{2}))?"
    r"(?=[ \t]*(?:$|[,.;!?)]))", re.MULTILINE)


_MONTHS = ("jan|january|feb|february|mar|march|apr|april|may|jun|june|jul|july|aug|august|"
           "sep|sept|september|oct|october|nov|november|dec|december")
NO_TYPE = "number, name (no street type)"
HOUSE = "house name"
NAMED_HOUSE = "house name, street line"
NAMED_HOUSE_BACKED = 0.5
# Public buildings, not homes: "Town Hall", "the Opera House", "Guest House".
_PUBLIC = r"(?:Town|City|Village|Church|Opera|Court|Coffee|Guest|Open|White|Public|Music|Club)"
# The last word of a house's name ("Ivy Cottage", "The Old Forge", "Glenview House"); with no
# number, such a name is kept only with the evidence a NO_TYPE address needs.
HOUSE_WORDS = ("Cottage|Cottages|House|Farm|Farmhouse|Barn|Forge|Granary|Grange|Hall|Villa|"
               "Bungalow|Croft|Rectory|Vicarage|Stables|Lodge|Manor|Mill|Chalet|Oast|Maltings")
# The cheap skip: every pattern needs a digit, a street word (``_KEYWORDS``) or a house word.
_HINT = re.compile(rf"\d|(?i:corner of)|(?:{HOUSE_WORDS})\b")
# A name word: capitalised and then lower-case (not "GB", "PM"), at most 40 letters.
_NAME = (r"(?!(?i:apt|apartment|suite|unit|flat|floor|bldg|building)\b)"
         r"\p{Lu}\p{Ll}[\p{L}\p{M}'’\-]{1,39}")
# Words a house number may follow; a number after any other word ("iPhone 15 Pro", "buy 2
# Large") is not taken without a street type.
_NO_TYPE_BEFORE = (r"\b(?:to|at|is|was|it'?s|it’s|from|in|into|address|for|outside|opposite|"
                   r"behind)")
# Evidence for a NO_TYPE candidate: a place, postcode or unit after it, a unit before it, or an
# address cue right before it ("live at", "deliver to", "my address is", "send it to").
_NOT_NAMES = re.compile(
    rf"(?i:{_MONTHS}|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun|(?:mon|tues|wednes|thurs|fri|"
    r"satur|sun)day)|(?i:large|small|medium|regular|pro|max|"
    # a business named by its number ("1512 Barber Shop", "7 Stages Theatre")
    r"shops?|theatre|theater|cafe|café|restaurant|bar|grill|brasserie|hotel|inn|salon|studio|"
    r"cinema|bakery|kitchen|pizzeria|diner|club|pub|market|stores?|gym|spa|clinic|"
    r"plus|mini|ultra|lite|edition|items?|units?|pieces?|pcs|packs?|people|persons?|adults?|"
    r"kids|children|friends|colleagues|guests|members|customers|users|staff|days?|hours?|minutes?|mins?|weeks?|months?|years?|nights?|stars?|tickets?|"
    r"seats?|bags?|boxes|bottles?|cups?|slices?|inches|feet|miles|percent|dollars?|euros?|"
    r"pounds?|points?|gb|tb|mb|gbps|mbps)")
_TO_BEFORE = re.compile(r"(?i:\bto)[ \t]*$")
# A house number right after "at" or "outside" is a door ("the bin at 23 Millbrook", "outside
# 3 The Shambles"); quantities, times and sizes are already out (_NOT_NAMES).
_AT_BEFORE = re.compile(r"(?i:\b(?:at|outside|opposite|behind))[ \t]*$")
_PLACE_AFTER = re.compile(r"[ \t]*(?:,|[ \t](?:in|near)\b)[ \t]*")
_PLACE_WORD = re.compile(r"[\p{L}][\p{L}\p{M}'’\-]*")
_STREET_AFTER = re.compile(rf"[ \t]*,[ \t]*(?:{_CAP}[ \t]+){{1,3}}(?i:{STREET_TYPES})\b")
# Words after a candidate that name it an address ("recorded 2 Kingsmead as the supply address")
_ADDRESS_AFTER = re.compile(r"[ \t]+(?i:as|is)[ \t]+(?i:the|my|our|your|his|her|their)?[ \t]*"
                            r"(?:\p{L}+[ \t]+)?(?i:address)\b")
_POSTCODE_AFTER = re.compile(
    r"[ \t]*,?[ \t]*(?:\p{Lu}[\p{L}\p{M}'’\-]{1,39}[ \t]*,?[ \t]+)?"
    r"(?:\p{Lu}{1,2}\d[\dA-Z]?[ \t]?\d\p{Lu}{2}|\d{4,5}(?:-\d{4})?)\b")
_UNIT_AFTER = re.compile(rf"[ \t]*,?[ \t]*(?:{UNIT}|#)[ \t]*#?[ \t]*\d")
_UNIT_BEFORE = re.compile(rf"(?:{UNIT}|(?i:house|block))[ \t]*#?[ \t]*\w{{1,5}}[ \t]*,?[ \t]*$")
_CUE_BEFORE = re.compile(
    r"(?i:\b(?:live[sd]?|living|moved|staying|go(?:es|ing)?|went|head(?:ed|ing)?|"
    r"deliver(?:ed)?|ship(?:ped)?|send|sent|post(?:ed)?|come|came|coming|"
    r"mail(?:ed)?|forward(?:ed)?|collect|return(?:ed)?)(?:[ \t]+(?:it|them|this|that|these|"
    r"everything|over|back|round))?[ \t]+(?:to|at|from)|\baddress(?:[ \t]+(?:is|was))?|"
    r"\b(?:moved|moving|move)[ \t]+into|\bvisit(?:s|ing)?|"
    r"\b(?:i'?m|i’m|we'?re|we’re|i[ \t]+am|we[ \t]+are)[ \t]+at)[ \t]*:?[ \t]*$")


def _listed_place_at(text: str, pos: int) -> int | None:
    """The end of the longest run of up to four words at ``pos`` that the place list holds."""
    from detectors.pii.ner import places

    known = places()
    words = []
    p = pos
    for _ in range(4):
        m = _PLACE_WORD.match(text, p)
        if m is None:
            break
        words.append(m.end())
        gap = re.match(r"[ \t]+", text[m.end():m.end() + 4])
        if gap is None:
            break
        p = m.end() + gap.end()
    return next((e for e in reversed(words) if text[pos:e].casefold() in known), None)


def _no_type_evidence(text: str, r: RecognizerResult, places: list[tuple[int, int]]) -> bool:
    """Whether "41 Kinloch" or "Glenview House" is an address: not a date or quantity, and an
    address cue before it ("live at", "send it to", "visit") or after it ("as the supply
    address"), a unit before or after it, a street line after a comma, or a place (the NER's or
    the place list's) or a postcode after a comma, which the span then takes in. Without
    evidence it is dropped. A house name takes a place after a comma or "near", not after
    "in"."""
    if any(_NOT_NAMES.fullmatch(w) for w in re.findall(r"[\p{L}\p{M}'’\-]+",
                                                       text[r.start:r.end])):
        return False
    before = text[max(0, r.start - 40):r.start]
    cued = bool(_CUE_BEFORE.search(before)
                or (_pattern(r) in (NO_TYPE, NAMED_HOUSE) and _AT_BEFORE.search(before)))
    if not cued and _TO_BEFORE.search(before):  # "upgraded to 14 Sonoma, London": needs a cue
        return False
    place = _PLACE_AFTER.match(text, r.end)
    if place and _pattern(r) == HOUSE and "in" in place.group():
        place = None  # "the Teriyaki House in Brisbane" is a restaurant
    end = next((e for s, e in places if place and s == place.end()), None)
    if end is None and place:
        end = _listed_place_at(text, place.end())
    if end is None and (postcode := _POSTCODE_AFTER.match(text, r.end)):
        end = postcode.end()
    if end is not None:
        r.end = end
    backed = end is not None or cued or bool(
        _UNIT_AFTER.match(text, r.end) or _UNIT_BEFORE.search(before)
        or _STREET_AFTER.match(text, r.end) or _ADDRESS_AFTER.match(text, r.end))
    if backed and _pattern(r) == NAMED_HOUSE:
        r.score = NAMED_HOUSE_BACKED  # with evidence, flagged with the street line it holds
    return backed


def _places(nlp_artifacts: Any) -> list[tuple[int, int]]:
    """The NER's place spans (the encoder head's LOCATION, spaCy's GPE/LOC)."""
    ents = getattr(nlp_artifacts, "entities", None) or ()
    return [(e.start_char, e.end_char) for e in ents if e.label_ in ("LOCATION", "GPE", "LOC")]


def _pattern(r: RecognizerResult) -> str:
    return getattr(r.analysis_explanation, "pattern_name", "") or ""


class StreetAddressRecognizer(WindowContextMixin, ChatPatternRecognizer):
    """Scores: full street lines 0.5-0.7, bare "Name 12" 0.15 (needs an address context word),
    units alone 0.3; a merged block gets +0.1 per extra piece or tail line."""

    ENTITY = "STREET_ADDRESS"
    CONTEXT = ADDRESS_CONTEXT
    PATTERNS = [
        Pattern("number, name, street type",
                rf"\b\d{{1,6}}[A-Za-z]?(?:[ \t]+\d{{1,5}})?[ \t]+"
                rf"(?:(?i:[NSEW]|north|south|east|west)"
                rf"\.?[ \t]+)?(?:{_CAP}[ \t]+){{1,4}}(?i:{STREET_TYPES})\b\.?", 0.6),
        Pattern("number, lowercase name, street type",
                rf"\b\d{{1,6}}(?:[ \t]+\d{{1,5}})?[ \t]+(?:{_WORD}[ \t]+){{1,3}}"
                r"(?i:street|st|avenue|ave|road|rd|drive|dr|lane|ln|boulevard|blvd|way)\b\.?",
                0.45),
        Pattern("name, street type",
                rf"\b(?:{_CAP64}[ \t]+){{1,3}}(?:{_MAIN_TYPES.title()})\b", 0.4),
        # Starts only where a letter run starts (a start inside a run finds the match the run's
        # start finds): unanchored, every position of a 5,000-letter token was scanned to its
        # end (4 s, quadratic).
        Pattern("name with street ending, number",
                rf"(?<![\p{{L}}\p{{M}}])(?:{_WORD64}[ \t]+){{0,2}}[\p{{L}}\p{{M}}]*"
                rf"(?i:{STREET_ENDINGS})[ \t]+\d{{1,5}}[A-Za-z]?\b\.?",
                0.6),
        Pattern("street-type prefix, name, number",
                rf"(?:\b\d{{1,5}}[ \t]*,?[ \t]+)?(?i:(?<!\w)(?:{STREET_PREFIXES}))"
                r"(?:(?<=[./])|(?!\w))[ \t]*"  # a whole prefix: "Aleja", not "Alejandra"
                rf"(?:{_WORD}[ \t]+)"
                rf"{{0,4}}?{_WORD}(?:[ \t]*,?[ \t]+\d{{1,5}}[A-Za-z]?\b\.?)?", 0.55),
        Pattern("number, name, number",
                rf"\b\d{{3,6}}[ \t]+(?:{_WORD}[ \t]+){{1,3}}\d{{1,5}}[A-Za-z]?\b\.?", 0.45),
        Pattern("number, number, name",
                rf"\b\d{{3,6}}[ \t]+\d{{1,5}}[ \t]+{_WORD}(?:[ \t]+{_WORD}){{0,3}}", 0.4),
        Pattern("name, number (weak)",
                rf"\b{_CAP}(?:[ \t]+(?:{_CAP}|(?:de|do|da|del|di|la|le|van|von|der|den)))*"
                r"[ \t]+\d{1,5}[A-Za-z]?\b(?:[ \t]+(?i:st|street|rd|road|ave)\b\.?)?", 0.15),
        Pattern("unit", rf"\b{UNIT}[ \t]*#?[ \t]*\d{{1,5}}[A-Za-z]?\b", 0.3),
        Pattern("PO box", r"\b(?i:p\.?[ \t]?o\.?[ \t]*box|postbox)[ \t]+\d{1,6}\b", 0.6),
        Pattern("military box",
                r"\b(?:PSC|Unit|CMR)[ \t]+\d{3,5},?[ \t]+Box[ \t]+\d{3,5}"
                r"(?:\s*[AFD]PO[ \t]+A[AEP][ \t]+\d{5})?", 0.7),
        Pattern("military ship",
                rf"\b(?:USNS|USNV|USS|USCGC)[ \t]+{_CAP}(?:[ \t]+{_CAP})?\s*"
                r"FPO[ \t]+A[AEP][ \t]+\d{5}",
                0.7),
        # "41 Kinloch", "230 Kingsmead": no street word, so kept only with evidence (below).
        Pattern(NO_TYPE, rf"(?<![\w.,])(?=\d)(?<=(?:^|[\n,:;(.!?]|(?<![\p{{L}}\p{{M}}'’])"
                rf"(?i:{_NO_TYPE_BEFORE}))[ \t]{{0,8}})\d{{1,5}}[A-Za-z]?"
                rf"(?:[ \t]{{1,4}}{_NAME}){{1,3}}(?![\p{{L}}\p{{M}}\d])", 0.5),
        # "Ivy Cottage", "The Old Forge", "Kilnworth Barn": kept only with evidence (below).
        Pattern(HOUSE, rf"(?<![\p{{L}}\p{{M}}])(?!{_PUBLIC}[ \t])"
                rf"(?:The[ \t]+(?:{_NAME}[ \t]+){{0,2}}|(?:{_NAME}[ \t]+){{1,2}})"
                rf"(?:{HOUSE_WORDS})(?![\p{{L}}\p{{M}}])", 0.5),
        # "Rosedene, Mill Road", "Larkspur, Back Lane": a name, then a street line; kept only
        # with evidence, like the two above.
        Pattern(NAMED_HOUSE, rf"(?<![\p{{L}}\p{{M}}])(?:{_NAME}[ \t]+){{0,2}}{_NAME},[ \t]*"
                rf"(?:{_CAP}[ \t]+){{1,3}}(?i:{_MAIN_TYPES}|close|crescent|grove|gardens)\b",
                0.35),  # under the street line's 0.4, which presidio would drop as contained
        Pattern("corner of",
                rf"(?i:corner of)[ \t]+(?:{_WORD}[ \t]+|\d{{1,5}}[ \t]+){{1,4}}?(?i:and|&)[ \t]+"
                rf"(?:{_WORD}[ \t]+){{0,3}}{_WORD}", 0.5),
    ]
    _KEYWORDS = re.compile(rf"(?i:\b(?:{STREET_TYPES})\b|(?<!\w)(?:{STREET_PREFIXES})|"
                           rf"{STREET_ENDINGS}|\b(?:apt|suite|unit|box|corner)\b)")
    context_regex = _context(ADDRESS_CONTEXT)
    window = (48, 16)

    def invalidate_result(self, pattern_text: str) -> bool:
        words = re.findall(r"[\p{L}\p{M}]+", pattern_text)
        if not words:
            return True
        if self._KEYWORDS.search(pattern_text):
            return False
        # "100 dollars 20": every word plain lowercase ASCII and no street word.
        return all(w.isascii() and w.islower() for w in words)

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None,
                regex_flags: int | None = None) -> list[RecognizerResult]:
        if not (_HINT.search(text) or self._KEYWORDS.search(text)):
            return []  # cheap skip: every pattern needs a digit or a street word
        places = _places(nlp_artifacts)
        results = sorted((r for r in super().analyze(text, entities, nlp_artifacts, regex_flags)
                          if not _time_price_or_date(text, r.start, r.end)
                          and not _sentence_end_before_number(text, r)
                          and not _venue_name(text, r)
                          and (_pattern(r) not in (NO_TYPE, HOUSE, NAMED_HOUSE)
                               or _no_type_evidence(text, r, places))),
                         key=lambda r: (r.start, -r.end))
        merged: list[tuple[RecognizerResult, int]] = []
        for r in results:
            last = merged[-1][0] if merged else None
            if last is not None and (r.start <= last.end or
                                     re.fullmatch(r"[\s,;>]*", text[last.end:r.start])):
                merged[-1] = (_join(last, r), merged[-1][1] + (r.end > last.end))
            else:
                merged.append((r, 1))
        out = []
        for r, pieces in merged:
            r.end, tails = _extend(text, r.end)
            r.score = min(1.0, r.score + 0.1 * (pieces - 1 + tails))
            if r.analysis_explanation is not None:
                r.analysis_explanation.score = r.score
            out.append(r)
        return self._boost(text, out)


_NEXT_WORD = re.compile(r"(?:'s|’s)?[ \t]+([\p{L}\p{M}][\p{L}\p{M}'’\-]*)")
# After a street-like name, what makes it a venue's or an event's name, not an address: the
# place is *at* an address ("Amberly Court at 3405 Westfield Terrace", "Halvern, located at
# 20 ..."), or events and tickets are "of" it ("4 Tarrow Drive events", "the Tarrow Drive gig").
_AT_ADDRESS_AFTER = re.compile(r"[ \t]*,?[ \t]+(?:(?:which|that)[ \t]+is[ \t]+)?"
                               r"(?:(?:located|situated|found)[ \t]+)?at[ \t]+(?:the[ \t]+)?\d")
_EVENT_AFTER = re.compile(r"[ \t]+(?:events?|concerts?|shows?|gigs?|tickets?|tours?|"
                          r"performances?)\b")
_NUMBERLESS = ("name, street type", "street-type prefix, name, number")
# pii 1.8.2: a title's word inside it ("The Paper Kites Movie 2", "Harbour Lights Season 3"),
# or where a film is shown ("one show at 10 am in Brenlow Metro 16", "1 showtime for Brenlow
# Metro 16"): a title or a cinema, not an address.
_TITLE_WORDS = frozenset({"movie", "movies", "film", "films", "album", "albums", "song", "songs",
                          "episode", "episodes", "season", "sequel", "trilogy", "soundtrack"})
_SHOWN_AT = re.compile(r"(?i)\b(?:shows?|showtimes?|show[ \t]+times?|showings?|screenings?)"
                       r"(?:[ \t]+(?:at|from)[ \t]+\d{1,2}(?::\d\d)?[ \t]*[ap]\.?m\.?)?"
                       r"[ \t]+(?:in|at|for)[ \t]+(?:the[ \t]+)?$")


def _venue_name(text: str, r: RecognizerResult) -> bool:
    """pii 1.8.1: whether a candidate is the name of a venue or an event, not an address: a
    venue's word inside it or right after it ("1 Hotel Harbour Bridge", "Brenlow 12 Cinema",
    "Westbrook Gardens Apartments"), events after it ("the Tarrow Drive event"), or, for a name with
    no number, a thing noun that calls it so before it ("an apartment called Linden Creek
    Place") or an address after "at" ("Amberly Court at 3405 Westfield Terrace")."""
    from detectors.pii.catalogue import _NAMED_THING, VENUE_WORDS

    words = [w.casefold() for w in re.findall(r"[\p{L}\p{M}]+", text[r.start:r.end])]
    nxt = _NEXT_WORD.match(text, r.end)
    if nxt is not None and nxt.group(1)[:1].isupper():
        words.append(nxt.group(1).casefold())
    # "12 Hotel Street", "Cinema Road": a venue's word right before the street type that ends
    # the address names the street
    own = len(re.findall(r"[\p{L}\p{M}]+", text[r.start:r.end]))
    last_type = own >= 2 and re.fullmatch(rf"(?i:{STREET_TYPES})", words[own - 1]) is not None
    if any((w in VENUE_WORDS or w in _TITLE_WORDS) and not (last_type and i == own - 2)
           for i, w in enumerate(words)) or _EVENT_AFTER.match(text, r.end) \
            or _SHOWN_AT.search(text[max(0, r.start - 50):r.start]):
        return True
    if _pattern(r) in _NUMBERLESS and not re.search(r"\d", text[r.start:r.end]):
        return bool(_AT_ADDRESS_AFTER.match(text, r.end)
                    or _NAMED_THING.search(text[max(0, r.start - 40):r.start]))
    return False


_MONTH_NUMBER = re.compile(rf"(?i:{_MONTHS})\.?[ \t]+\d")
_LEADING = re.compile(r"\d+")
_TRAILING = re.compile(r"\d+$")
_TIME_AFTER = re.compile(r"[ \t]*(?i:[ap]\.?m\b|o'?clock\b|dollars?\b|euros?\b|pounds?\b|"
                         r"bucks\b|cents?\b|usd\b|eur\b|gbp\b|%|percent\b)|:\d\d\b|[.,]\d")


_END_THEN_NUMBER = re.compile(r"[.!?][ \t]+\d")


def _sentence_end_before_number(text: str, r: RecognizerResult) -> bool:
    """"AGAIN. 23 Foxglove": the weak "Name 12" pattern ran over a sentence's end, which is no
    street name (a check after the match: a look-behind in the pattern made it quadratic on
    "Mr. Mr. Mr. ...")."""
    return (_pattern(r) == "name, number (weak)"
            and _END_THEN_NUMBER.search(text, r.start, r.end) is not None)


def _time_price_or_date(text: str, start: int, end: int) -> bool:
    """Whether a candidate's number is a time, a price or a date, not a house number: followed
    by am/pm, ":30", decimals or a currency ("It's 4.99 a month", "1512 Barber Shop at 3 pm",
    "Transfer 570 dollars"), the minutes
    of a time ("11:30 am with Dr ..."), after a currency sign, or a month name before it
    ("August 1")."""
    part = text[start:end]
    if _MONTH_NUMBER.match(part):
        return True
    for m in (_LEADING.match(part), _TRAILING.search(part)):
        if m is None:
            continue
        s, e = start + m.start(), start + m.end()
        if _TIME_AFTER.match(text, e):
            return True
        before = text[max(0, s - 2):s]
        if before[-1:] in ("$", "£", "€") or (len(before) == 2 and before[1] in ":."
                                                and before[0].isdigit()):
            return True
    return False


def _extend(text: str, end: int) -> tuple[int, int]:
    """Extend an address over up to four following city / region / postcode lines."""
    tails = 0
    while tails < 4 and (m := _TAIL.match(text, end)) and m.end() > end and \
            re.search(r"\w", m.group()):
        end, tails = m.end(), tails + 1
    return end, tails


def _join(a: RecognizerResult, b: RecognizerResult) -> RecognizerResult:
    best = a if a.score >= b.score else b
    best.start, best.end = min(a.start, b.start), max(a.end, b.end)
    return best
