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

_HINT = re.compile(r"\d|(?i:corner of)")
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
    "ways|harbou?rs|lanes|drives|courts|circles|crescents|loops|rows|trails|islands|expy|fwy"
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
UNIT = r"(?i:apt\.?|apartment|suite|ste\.|unit|flat|floor|fl\.|bldg\.?|building)"
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
        results = sorted((r for r in super().analyze(text, entities, nlp_artifacts, regex_flags)
                          if not _time_price_or_date(text, r.start, r.end)),
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


_MONTHS = ("jan|january|feb|february|mar|march|apr|april|may|jun|june|jul|july|aug|august|"
           "sep|sept|september|oct|october|nov|november|dec|december")
_MONTH_NUMBER = re.compile(rf"(?i:{_MONTHS})\.?[ \t]+\d")
_LEADING = re.compile(r"\d+")
_TRAILING = re.compile(r"\d+$")
_TIME_AFTER = re.compile(r"[ \t]*(?i:[ap]\.?m\b|o'?clock\b|dollars?\b|euros?\b|pounds?\b|"
                         r"bucks\b|cents?\b|usd\b|eur\b|gbp\b|%|percent\b)|:\d\d\b|[.,]\d")


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
