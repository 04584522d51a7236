"""Presidio recognizers chatmon adds or adapts, in presidio's own style: named scored patterns,
context words, and validation hooks. Imported only by ``PiiDetector.load()`` (presidio and spaCy
are heavy); nothing here touches the network.

- ``OfflineEmailRecognizer``: presidio's email recognizer, but its domain check uses tldextract's
  bundled public-suffix snapshot (the stock one fetches the list from the internet on first use).
- ``CardRecognizer``: presidio's Luhn-checked card recognizer plus unseparated 12-19 digit numbers
  with a known issuer prefix (Maestro and 19-digit Visa numbers escape the stock pattern).
- ``PhonePatternRecognizer``: digit groups that look like a phone number in any country's
  layout; weak on its own, strong next to "phone", "call", "fax"...; a number right after
  "order", "invoice", "tracking"... is dropped (a negative-context hook).
- ``LocationCueRecognizer``: country names and place names after a place cue.
- ``SpeakerNameRecognizer``: dialogue speaker labels and full-name lines.
- Street addresses live in ``detectors.pii.address``.
- ``PersonCueRecognizer``: capitalised names right after a cue ("my name is", "Dear", "Mr.").
"""

from __future__ import annotations

from functools import cache
from typing import Any

import regex as re
from presidio_analyzer import Pattern, PatternRecognizer, RecognizerResult
from presidio_analyzer.predefined_recognizers import CreditCardRecognizer, EmailRecognizer

_DIGITS = re.compile(r"\d")
_FLAGS = re.MULTILINE  # case-sensitive: capitalisation is evidence; cues use inline (?i:...)
_NAME_WORD = r"\p{Lu}[\p{Ll}\p{M}][\p{L}\p{M}'’\-]*"

PHONE_CONTEXT = [
    "phone",
    "telephone",
    "cellphone",
    "smartphone",
    "call",
    "tel",
    "ph",
    "mobile",
    "mob",
    "cell",
    "fax",
    "office",
    "number",
    "reach",
    "text",
    "sms",
    "message",
    "whatsapp",
    "signal",
    "telegram",
    "contact",
    "dial",
    "ring",
    "landline",
    "hotline",
    "voicemail",
    "extension",
    "ext",
]
NEGATIVE_NUMBER_CONTEXT = re.compile(
    r"(?i)(?:order|invoice|ticket|tracking|ref|reference|case|confirmation|booking|receipt|"
    r"transaction|sku|serial|model|part|account|acct|policy|claim)"
    r"(?:\s*(?:numbers?|no\.?|nr\.?|#|ids?|is|was|are|:))*\s*$"
)


@cache
def offline_tld_extract() -> Any:
    """tldextract with the bundled suffix-list snapshot: no fetch, no disk cache."""
    import tldextract

    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


class WindowContextMixin:
    """Context words matched in a character window around the match, case-insensitively.

    Presidio's own enhancer compares lemmas and skips spaCy stop words, which include "call",
    "name" and "from"; chat cues are often exactly those words. A boost here marks the result
    as enhanced, so presidio's enhancer does not add a second one."""

    context_regex: Any = None
    window: tuple[int, int] = (40, 12)
    boost: float = 0.35

    def _boost(self, text: str, results: list[RecognizerResult]) -> list[RecognizerResult]:
        for r in results:
            before = text[max(0, r.start - self.window[0]) : r.start]
            after = text[r.end : r.end + self.window[1]]
            m = self.context_regex.search(before) or self.context_regex.search(after)
            if m:
                r.score = min(1.0, max(r.score + self.boost, 0.4))
                r.recognition_metadata[RecognizerResult.IS_SCORE_ENHANCED_BY_CONTEXT_KEY] = True
                if r.analysis_explanation is not None:
                    r.analysis_explanation.set_supportive_context_word(m.group().lower())
                    r.analysis_explanation.set_improved_score(r.score)
        return results


def _context(words: list[str]) -> Any:
    """Whole words, with plural and verb endings ("phones", "called", "texting")."""
    return re.compile(r"(?i)\b(?:" + "|".join(words) + r")(?:s|es|ed|ing)?\b")


class OfflineEmailRecognizer(EmailRecognizer):
    # Presidio's pattern with the local part capped at RFC 5321's 64 characters: unbounded, every
    # word start of "a.a.a.a...@" scanned to the "@" and back (quadratic: 1 s at 5,000 chars).
    PATTERNS = [
        Pattern(p.name, p.regex.replace(r"\.\w]{0,}", r"\.\w]{0,62}"), p.score)
        for p in EmailRecognizer.PATTERNS
    ]

    def __init__(self) -> None:
        super().__init__(patterns=self.PATTERNS)

    def validate_result(self, pattern_text: str) -> bool:
        return offline_tld_extract()(pattern_text.rsplit("@", 1)[-1]).fqdn != ""


class CardRecognizer(CreditCardRecognizer):
    PATTERNS = [
        *CreditCardRecognizer.PATTERNS,
        Pattern(
            "Card, issuer prefix, no separators (weak)",
            r"\b(?:4\d{11,18}|5[0-8]\d{10,17}|6\d{11,18}|3[0-8]\d{10,17}|2[2-7]\d{10,17})\b",
            0.3,
        ),
    ]

    def __init__(self) -> None:
        super().__init__(patterns=self.PATTERNS, name="CardRecognizer")


class ChatPatternRecognizer(PatternRecognizer):
    """A pattern recognizer built from class attributes: ``ENTITY``, ``PATTERNS`` and optional
    ``CONTEXT`` words; its name is the class name, its regexes use the module's flags."""

    ENTITY: str = ""
    PATTERNS: list[Pattern] = []
    CONTEXT: list[str] = []

    def __init__(self) -> None:
        super().__init__(
            supported_entity=self.ENTITY,
            patterns=self.PATTERNS,
            context=list(self.CONTEXT),
            name=type(self).__name__,
            global_regex_flags=_FLAGS,
        )


_EXT = r"(?:[ \t]*(?i:x|ext\.?|extension)[ \t]*\d{1,5})?"  # "555-0132 x204", "ext. 12"
# Regions whose numbering plans decide "valid" for a number written without a country code.
# Germany, Austria and Finland are left out: their plans have variable-length numbers, so most
# 7-10 digit runs (street numbers, postcodes) are "valid" there.
PHONE_REGIONS = ("US", "GB", "FR", "ES", "IT", "NL", "BE", "CH", "IE", "AU", "IN", "BR", "SE",
                 "NO", "DK", "PL", "PT")
_NOT_PHONE_LAYOUT = re.compile(r"\d{3}-\d{2}-\d{4}|\d{1,3}(?:\.\d{1,3}){3}")  # SSN, IPv4
# Layout and numbering-plan evidence is a floor, not a boost: a number in a phone layout, or
# valid in a region, scores at least 0.5 (flagged) with no context word; with one it keeps the
# score its pattern family always had (digit groups 0.55, brackets 0.8), so leak weights and
# pages for numbers next to "call" are what they were (docs/models/pii.md, Leak).
PHONE_FLOOR = 0.5
_PHONE_LAYOUTS = re.compile(
    r"(?:(?:1|001)[ .\-])?(?:\(\d{3}\)[ .\-]?|\d{3}[.\-])\d{3}[.\-]\d{4}"  # North American
    r"|\(0\d{1,4}\)[ .\-]?\d{2,5}(?:[ .\-]\d{2,5}){0,3}"  # trunk-0 area code: "(01620) 69409"
    + _EXT
)


class PhonePatternRecognizer(WindowContextMixin, ChatPatternRecognizer):
    ENTITY = "PHONE_NUMBER"
    PATTERNS = [
        Pattern(
            "Phone, international (medium)",
            r"(?<![\w+.-])\+\d{1,3}[ .\-]?(?:\(\d{1,4}\)[ .\-]?)?\d{1,4}(?:[ .\-]\d{2,5}){1,4}"
            + _EXT + r"(?![\w.-]?\d)",
            0.5,
        ),
        Pattern(
            "Phone, area code in brackets (medium)",  # "(0118)", "(01620)": trunk 0 + 4 digits
            r"(?<![\w.-])\((?:0\d{4}|\d{1,4})\)[ .\-]?\d{2,5}(?:[ .\-]\d{2,5}){0,3}" + _EXT
            + r"(?![\w.-]?\d)",
            0.45,
        ),
        Pattern(
            "Phone, digit groups (weak)",
            r"(?<![\w./:+-])(?<!\d,)\d{2,5}(?:[ .\-]\d{2,8}){1,4}" + _EXT
            + r"(?![\w.,/:-]?\d)",
            0.2,
        ),
        Pattern("Phone, 9-11 digits (very weak)", r"(?<![\w.+-])\d{9,11}(?![\w.-]?\d)", 0.15),
    ]
    CONTEXT = PHONE_CONTEXT
    context_regex = _context(PHONE_CONTEXT)

    def invalidate_result(self, pattern_text: str) -> bool:
        number = re.sub(r"(?i)[ \t]*(?:x|ext\.?|extension)[ \t]*\d{1,5}$", "", pattern_text)
        digits = re.sub(r"\D", "", number)  # an extension's digits are not the number's
        if not 7 <= len(digits) <= 15 or len(set(digits)) < 3:
            return True
        # Dates (2024-05-01, 01.05.2024) are not phones.
        return bool(
            re.fullmatch(
                r"(?:\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{4})",
                pattern_text.strip(),
            )
        )

    def analyze(
        self,
        text: str,
        entities: list[str],
        nlp_artifacts: Any = None,
        regex_flags: int | None = None,
    ) -> list[RecognizerResult]:
        if len(_DIGITS.findall(text)) < 7:  # cheap skip: no phone without 7 digits
            return []
        results = super().analyze(text, entities, nlp_artifacts, regex_flags)
        # Negative context: "order 555-1234-99" is an order number, not a phone.
        results = [
            r
            for r in results
            if not NEGATIVE_NUMBER_CONTEXT.search(text[max(0, r.start - 24) : r.start])
        ]
        floors = {id(r): why for r in results if (why := self._floor(text[r.start:r.end]))}
        results = self._boost(text, results)
        for r in results:
            if id(r) in floors and r.score < PHONE_FLOOR:
                r.score = PHONE_FLOOR
                if r.analysis_explanation is not None:
                    r.analysis_explanation.pattern_name = floors[id(r)]
        return results

    @staticmethod
    def _floor(candidate: str) -> str | None:
        if _PHONE_LAYOUTS.fullmatch(candidate.strip()):
            return "Phone, layout (North American or trunk-0 area code)"
        region = valid_phone_region(candidate)
        return f"Phone, valid number ({region})" if region else None


def valid_phone_region(candidate: str) -> str | None:
    """The first of ``PHONE_REGIONS`` whose numbering plan makes ``candidate`` a valid number
    (Google's libphonenumber rules, via ``phonenumbers``; a candidate is one short match, so
    this costs microseconds, unlike scanning the whole text per region)."""
    import phonenumbers

    digits = re.sub(r"\D", "", candidate)
    # A full national number: ten digits or more, or a trunk "0" and nine or more. Shorter runs
    # are local numbers that no plan can tell from a street number or a postcode.
    if len(digits) < 9 or (len(digits) < 10 and not candidate.lstrip("(").startswith("0")):
        return None
    if _NOT_PHONE_LAYOUT.fullmatch(candidate.strip()):
        return None
    for region in PHONE_REGIONS:
        try:
            num = phonenumbers.parse(candidate, region)
        except phonenumbers.NumberParseException:
            return None
        if phonenumbers.is_valid_number(num):
            return region
    return None


_CUE = (
    r"(?i:\bmy name is|\bname is|\bname's|\bname:|\bnamed|\bcalled|\bcall me|\bi am|\bi'm|"
    r"\bthis is|\bname of|\bnamed (?:him|her)|\bcalled (?:him|her)|\bdear|\bhi|\bhello|"
    r"\bhey|\bthanks|\bthank you|\bregards|\bsincerely|"
    r"\bcheers|\bmr\.?|\bmrs\.?|\bms\.?|\bmiss|\bdr\.?|\bprof\.?|\bspeak (?:to|with)|"
    r"\btalk (?:to|with)|\bask for|\bname\?|\bsigned|\bmy (?:son|daughter|kid|child|wife|"
    r"husband|partner|mother|father|mom|mum|dad|brother|sister|friend|boss|manager|colleague|"
    r"neighbou?r|grandmother|grandfather|aunt|uncle|cousin))"
)
_NOT_NAMES = frozenset(
    """
    sorry glad happy afraid sure unable able here there not the a an just also so very really
    still now going looking trying calling writing interested ok okay fine good great thanks
    thank hello hi hey team all everyone support sir madam bot assistant user customer agent
    your my our it this that yes no please back new done currently told getting in on at from
    with about for to and or but if when what why how who which monday tuesday wednesday
    thursday friday saturday sunday today tomorrow yesterday january february march april may
    june july august september october november december
""".split()  # noqa: SIM905
)


class PersonCueRecognizer(ChatPatternRecognizer):
    ENTITY = "PERSON"
    PATTERNS = [
        Pattern(
            "name after cue",
            rf"(?<={_CUE}[ \t]*[,:]?[ \t]+)(?:\p{{Lu}}\.[ \t]*)?{_NAME_WORD}(?:[ \t]+(?:\p{{Lu}}\.|"
            rf"{_NAME_WORD}|"
            rf"(?:de|da|van|von|der|del|di|le|la|bin|al)(?=[ \t]+\p{{Lu}}))){{0,3}}"
            r"(?:[ \t]+(?:II|III|IV|Jr\.?|Sr\.?))?",
            0.6,
        ),
    ]

    def invalidate_result(self, pattern_text: str) -> bool:
        return pattern_text.split()[0].lower().strip(".,'’") in _NOT_NAMES


_PLACE_CUE = (
    r"(?i:\bfrom|\bgrew up in|\bbased in|\blives? in|\bliving in|\bmoved to|\bborn in|"
    r"\blocated in|\bcity|\btown|\buniversity of|\bvisit(?:ing)?|\bnear|"
    # moving, travelling and where things are: "we relocated to", "the store in", "stuck in"
    r"\b(?:re)?locat(?:e|ed|ing) to|\bmoving to|\bflying to|\bfly to|\btrave(?:l|ll)(?:ing)? to|"
    r"\btrip to|\bholiday in|\bvacation in|\bstay(?:ing)? in|\bback in|\bhere in|\bover in|"
    r"\b(?:store|shop|branch|office|depot|warehouse|hospital|hotel|airport|customs) in|"
    r"\bstuck in|\bshipp(?:ed|ing) to|\bsent to|\bdeliver(?:ed|y)? to|\barrived? in|"
    r"\bcitizen of|\bresident of|\bresiding in|\bborn and raised in)"
)
_ORG_SUFFIX = re.compile(r"\b(?:LLC|Inc|Ltd|Corp|Group|GmbH|Company|Partners|Bank|University)\b")
_ACRONYMS = frozenset(
    """
    ASAP FAQ USD EUR GBP HTML HTTP HTTPS JSON API PDF SMS CEO CTO HR IT IBAN SSN ZIP URL VPN
    WIFI USB ETA FYI TBD NASA
""".split()  # noqa: SIM905
)
COUNTRIES = (
    "Afghanistan|Albania|Algeria|Andorra|Angola|Argentina|Armenia|Australia|Austria|Azerbaijan|"
    "Bahamas|Bahrain|Bangladesh|Barbados|Belarus|Belgium|Belize|Benin|Bhutan|Bolivia|Bosnia|"
    "Botswana|Brazil|Brunei|Bulgaria|Burundi|Cambodia|Cameroon|Canada|Chad|Chile|China|Colombia|"
    "Congo|Costa Rica|Croatia|Cuba|Cyprus|Czech Republic|Czechia|Denmark|Djibouti|Dominica|"
    "Ecuador|Egypt|El Salvador|Eritrea|Estonia|Eswatini|Ethiopia|Fiji|Finland|France|Gabon|Gambia|"
    "Georgia|Germany|Ghana|Greece|Greenland|Grenada|Guatemala|Guinea|Guyana|Haiti|Honduras|"
    "Hungary|Iceland|India|Indonesia|Iran|Iraq|Ireland|Israel|Italy|Jamaica|Japan|Jordan|"
    "Kazakhstan|Kenya|Kosovo|Kuwait|Kyrgyzstan|Laos|Latvia|Lebanon|Lesotho|Liberia|Libya|"
    "Liechtenstein|Lithuania|Luxembourg|Madagascar|Malawi|Malaysia|Maldives|Mali|Malta|Mauritania|"
    "Mauritius|Mexico|Moldova|Monaco|Mongolia|Montenegro|Morocco|Mozambique|Myanmar|Namibia|Nepal|"
    "Netherlands|New Zealand|Nicaragua|Niger|Nigeria|North Macedonia|Norway|Oman|Pakistan|Panama|"
    "Paraguay|Peru|Philippines|Poland|Portugal|Qatar|Romania|Russia|Rwanda|Saudi Arabia|Senegal|"
    "Serbia|Seychelles|Singapore|Slovakia|Slovenia|Somalia|South Africa|South Korea|Spain|"
    "Sri Lanka|Sudan|Suriname|Sweden|Switzerland|Syria|Taiwan|Tajikistan|Tanzania|Thailand|Togo|"
    "Tunisia|Turkey|Türkiye|Uganda|Ukraine|United Arab Emirates|United Kingdom|United States|"
    "Uruguay|Uzbekistan|Venezuela|Vietnam|Yemen|Zambia|Zimbabwe"
)


class LocationCueRecognizer(ChatPatternRecognizer):
    """Country names, and place names right after a place cue ("grew up in", "based in", "from",
    "University of"): capitalised words, or upper-case words of 4+ letters after any "in"/"of"."""

    ENTITY = "LOCATION"
    PATTERNS = [
        Pattern("country name", rf"\b(?:{COUNTRIES})\b(?:[ \t]+\([\p{{L}} ]+\))?", 0.6),
        Pattern(
            "place after cue",
            rf"(?<={_PLACE_CUE}[ \t]+(?:the[ \t]+)?)\p{{Lu}}[\p{{L}}\p{{M}}'’\-]+"
            rf"(?:[ \t]+(?:\p{{Lu}}[\p{{L}}\p{{M}}'’\-]*|"
            r"(?:de|del|la|nad|am|an|upon|sur)\b)){0,3}",
            0.5,
        ),
        Pattern(
            "upper-case place after in/of/at/to",
            r"(?<=(?i:\bin|\bof|\bfrom)[ \t]+)\p{Lu}{2}[\p{Lu}\p{M}'’\-]{2,}"
            r"(?:[ \t]+\p{Lu}[\p{Lu}\p{M}'’\-]+){0,2}\b",
            0.5,
        ),
    ]

    def invalidate_result(self, pattern_text: str) -> bool:
        first = pattern_text.split()[0]
        if _ORG_SUFFIX.search(pattern_text):
            return True
        return first.upper() in _ACRONYMS or first.lower() in _NOT_NAMES

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None,
                regex_flags: int | None = None) -> list[RecognizerResult]:
        results = super().analyze(text, entities, nlp_artifacts, regex_flags)
        return [r for r in results if not _cue_inside_name(text, r.start)]


# A capitalised cue word right after another capitalised word is a word of a name, not a cue:
# "Brackwell City Music Festival", "Murder Town Devils", "A Boy From Tarrow" (pii 1.8.1);
# "Visit Paris" at a sentence's start is still a cue.
_CUE_IN_NAME = re.compile(
    r"(?<![.!?:;\n][ \t]{0,3})(?<=\p{Lu}[\p{L}\p{M}'’\-]*[ \t]+)"
    r"(?:City|Town|From|Visit|Visiting|Near)[ \t]+(?:the[ \t]+)?$")


def _cue_inside_name(text: str, start: int) -> bool:
    return _CUE_IN_NAME.search(text[max(0, start - 60):start]) is not None


class SpeakerNameRecognizer(ChatPatternRecognizer):
    """Names as line heads: a dialogue speaker label ("Nicole: ...") when the text has two or
    more such labels, and a line holding only a full name (signatures, pasted address blocks)."""

    ENTITY = "PERSON"
    PATTERNS = [
        Pattern("speaker label", rf"^[ \t>]*{_NAME_WORD}(?=:[ \t])", 0.3),
        Pattern(
            "name line",
            rf"^[ \t>]*{_NAME_WORD}(?:[ \t]+(?:\p{{Lu}}\.?|{_NAME_WORD})){{1,3}}[ \t]*$",
            0.5,
        ),
    ]

    def invalidate_result(self, pattern_text: str) -> bool:
        words = pattern_text.replace(">", " ").lower().split()
        return any(w.strip(".,") in _NOT_NAMES or w.strip(".,") in _FIELD_WORDS for w in words)

    def analyze(
        self,
        text: str,
        entities: list[str],
        nlp_artifacts: Any = None,
        regex_flags: int | None = None,
    ) -> list[RecognizerResult]:
        results = super().analyze(text, entities, nlp_artifacts, regex_flags)
        labels = [r for r in results if text[r.end : r.end + 1] == ":"]
        if len(labels) >= 2:  # a transcript with several named speakers
            for r in labels:
                r.score = 0.6
        return results


_FIELD_WORDS = frozenset(
    """
    name phone date address website email e-mail zip note subject re fwd question answer total
    status order personal info title company customer agent user bot assistant support regards
    best kind warm office fax mobile account summary details thanks profile education experience
    skills contact about references objective
""".split()  # noqa: SIM905
)
