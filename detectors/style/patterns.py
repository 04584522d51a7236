"""The style detector's counted features as data: named patterns, each with an optional
``invalidate`` hook that discards a match that only looks like the feature (presidio-recognizer
style). Findings record pattern ids and offsets, never the matched text.

Measures (the style counts of Lee et al. 2024, plus hedges):

- ``emoji``: emoji clusters (a skin tone, a variation selector or a ZWJ sequence is one emoji; a
  flag is one) and common ASCII emoticons (``:)``, ``;-)``, ``:D``, ``<3``).
- ``exclamation``: exclamation marks, each one counted ("Great!!!" is 3).
- ``question``: question-mark runs that end a question ("Really??" is 1; a URL query is not).
- ``first_person`` / ``second_person``: English personal pronouns and determiners.
- ``hedge``: English hedging (Hyland's hedges and approximators): might, perhaps, it seems,
  I think, kind of...; requests ("Could you...", "May I...") and the month May are not hedges.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

Invalidator = Callable[[str, "re.Match[str]"], bool]
_I = re.IGNORECASE


@dataclass(frozen=True, slots=True)
class StylePattern:
    id: str
    measure: str
    regex: re.Pattern[str]
    invalidate: Invalidator | None = None


# --- emoji ---------------------------------------------------------------------------------------
# Extended pictographic code points, approximated by block: the emoji blocks of the SMP, misc
# symbols and dingbats, and the few emoji of the technical and arrow blocks.
_PICTO = ("\U0001F000-\U0001F1E5\U0001F200-\U0001FAFF\u2600-\u27BF\u231A\u231B\u2328\u23CF"
          "\u23E9-\u23F3\u23F8-\u23FA\u2B05-\u2B07\u2B1B\u2B1C\u2B50\u2B55")
_MOD = "\uFE0F\U0001F3FB-\U0001F3FF"  # variation selector 16, skin tones
_ONE = f"[{_PICTO}][{_MOD}]*"
_EMOJI = re.compile(
    f"[\U0001F1E6-\U0001F1FF]{{2}}"  # a flag: two regional indicators
    f"|[0-9#*]\uFE0F?\u20E3"  # keycap
    f"|{_ONE}(?:\u200D{_ONE})*"  # one emoji, or a ZWJ sequence of several
)
# ASCII emoticons, standing alone: not inside a word, a time ("9:30") or a URL ("https://").
_EMOTICON = re.compile(r"(?<![\w:/])(?:[:;][-']?[)(DPp\]\[/\\|*]|<3|\^_\^)(?![\w/])")


def _url_slash(text: str, m: re.Match[str]) -> bool:
    """":/" just before a word is a URL scheme's colon-slash, not a frown."""
    return m.group().endswith(("/", "\\")) and m.end() < len(text) and not text[m.end()].isspace()


# --- punctuation ---------------------------------------------------------------------------------
_EXCLAMATION = re.compile(r"!")
_QUESTION = re.compile(r"\?+(?![\w=&/])")  # "?id=3" in a URL is not a question

# --- pronouns ------------------------------------------------------------------------------------
_FIRST_SINGULAR = re.compile(r"\b(?:I|me|my|mine|myself)\b", _I)
_FIRST_PLURAL = re.compile(r"\b(?:we|us|our|ours|ourselves|let's)\b", _I)
_SECOND = re.compile(r"\b(?:you|your|yours|yourself|yourselves|y'all|ya)\b", _I)


_NAME_BEFORE = re.compile(r"\b[A-Z][a-z]+\s$")


def _not_pronoun_i(text: str, m: re.Match[str]) -> bool:
    """Lower-case "i" as a list marker ("(i)", "i.") and a middle initial ("Kalpana I. Nathan")
    are not the pronoun."""
    before = text[m.start() - 1] if m.start() else ""
    after = text[m.end()] if m.end() < len(text) else ""
    if m.group() == "I":
        return after == "." and bool(_NAME_BEFORE.search(text[max(0, m.start() - 20):m.start()]))
    return m.group() == "i" and (before == "(" or after in ").:")


def _country_us(text: str, m: re.Match[str]) -> bool:
    """"US"/"U.S." in capitals is the country."""
    return m.group() == "US"


# --- hedges --------------------------------------------------------------------------------------
_DETERMINER_BEFORE = re.compile(
    r"\b(?:what|which|this|that|any|some|every|the|a|an|these|those|all|other|same|each|no|"
    r"one|what's|whatever|multiple|several|many|different|various|another|certain|specific|"
    r"particular|new|right|best|first|last)\s+$", _I)


def _determined(text: str, m: re.Match[str]) -> bool:
    """"what kind of phone" is a category, not a hedge ("it's kind of slow")."""
    return bool(_DETERMINER_BEFORE.search(text[max(0, m.start() - 12) : m.start()]))


def _not_modal_may(text: str, m: re.Match[str]) -> bool:
    """Capitalised "May" is the month or a request ("May I have your order number?")."""
    return m.group()[0] == "M"


_HEDGE_PATTERNS: tuple[tuple[str, str, Invalidator | None], ...] = (
    ("might", r"\bmight\b", None),
    ("may", r"\bmay\b(?!\s+I\b)", _not_modal_may),
    ("could_be", r"\bcould\s+(?:be|have|possibly|also\s+be)\b(?!\s+(?:of\s+)?(?:help|service|"
                 r"assistance|any\s+help)\b)", None),
    ("adverb", r"\b(?:perhaps|maybe|possibly|probably|presumably|apparently|arguably|"
               r"likely|roughly|approximately|somewhat|seemingly|conceivably)\b", None),
    ("approximator", r"\b(?:usually|typically|generally|in\s+most\s+cases|in\s+some\s+cases|"
                     r"more\s+or\s+less|to\s+some\s+extent)\b", None),
    ("seems", r"\b(?:seems?|seemed|appears?\s+(?:to|that)|it\s+appears)\b", None),
    ("belief", r"\bI\s+(?:think|believe|guess|suppose|assume|suspect|feel\s+like)\b", None),
    ("uncertain", r"\b(?:I'?m|I\s+am)\s+not\s+(?:entirely\s+|completely\s+|100%\s+)?"
                  r"(?:sure|certain)\b|\bas\s+far\s+as\s+I\s+know\b|"
                  r"\bif\s+I'?m\s+not\s+mistaken\b|\bto\s+my\s+knowledge\b", None),
    ("possible", r"\bit(?:'s|\s+is)\s+possible\b", None),
    ("kind_of", r"\b(?:kind|sort)\s+of\b", _determined),
)

PATTERNS: tuple[StylePattern, ...] = (
    StylePattern("emoji.unicode", "emoji", _EMOJI),
    StylePattern("emoji.emoticon", "emoji", _EMOTICON, _url_slash),
    StylePattern("exclamation", "exclamation", _EXCLAMATION),
    StylePattern("question", "question", _QUESTION),
    StylePattern("first_person.singular", "first_person", _FIRST_SINGULAR, _not_pronoun_i),
    StylePattern("first_person.plural", "first_person", _FIRST_PLURAL, _country_us),
    StylePattern("second_person", "second_person", _SECOND),
    *(StylePattern(f"hedge.{pid}", "hedge", re.compile(rx, _I), hook)
      for pid, rx, hook in _HEDGE_PATTERNS),
)

# Measures that read English words; the others (emoji, punctuation) read any language.
LEXICAL = frozenset({"first_person", "second_person", "hedge"})
MEASURES = ("emoji", "exclamation", "question", "first_person", "second_person", "hedge")


def _combine(patterns: tuple[StylePattern, ...]) -> re.Pattern[str]:
    """One alternation with a named group per pattern: one scan of the text instead of one per
    pattern (about 3x faster on support replies). Patterns of one family never overlap, except
    hedges, whose overlaps count once anyway."""
    parts = [f"(?P<p{i}>{p.regex.pattern})" for i, p in enumerate(patterns)]
    return re.compile("|".join(parts), _I)


# The words without which a hedge pattern cannot match: a reply holding none of them (most do)
# skips the hedge scan.
HEDGE_TRIGGERS = frozenset({
    "might", "may", "could", "perhaps", "maybe", "possibly", "probably", "presumably",
    "apparently", "arguably", "likely", "roughly", "approximately", "somewhat", "seemingly",
    "conceivably", "usually", "typically", "generally", "cases", "less", "extent", "seem", "seems",
    "seemed", "appear", "appears", "think", "believe", "guess", "suppose", "assume", "suspect",
    "feel", "sure", "certain", "far", "mistaken", "knowledge", "possible", "kind", "sort"})
Gate = Callable[[str, frozenset[str]], bool]


def _may_have_emoji(text: str, _words: frozenset[str]) -> bool:
    return not text.isascii() or any(c in text for c in ":;<^")


def _may_have_marks(text: str, _words: frozenset[str]) -> bool:
    return "!" in text or "?" in text


def _always(_text: str, _words: frozenset[str]) -> bool:
    return True


def _may_hedge(_text: str, words: frozenset[str]) -> bool:
    return not words.isdisjoint(HEDGE_TRIGGERS)


# Scan families, each one alternation scanned only when its gate (a cheap test on the text and
# its lower-cased words) says it can match; pronouns overlap hedges ("I think"), so they are
# separate families.
_FAMILIES: tuple[tuple[tuple[str, ...], Gate], ...] = (
    (("emoji",), _may_have_emoji), (("exclamation", "question"), _may_have_marks),
    (("first_person", "second_person"), _always), (("hedge",), _may_hedge))
SCANS: tuple[tuple[re.Pattern[str], tuple[StylePattern, ...], Gate], ...] = tuple(
    (_combine(members), members, gate)
    for members, gate in ((tuple(p for p in PATTERNS if p.measure in fam), gate)
                          for fam, gate in _FAMILIES))
