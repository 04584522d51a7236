"""Post-processing of presidio's results for one text, after every recognizer ran.

- ``resolve``: drop name/place hits that are really part of something else.
- ``demote_lone_places``: spaCy's small model often tags a lone surname or company as a place
  ("Henderson", "Factset"); a one-word NER place with no place cue before it is kept for
  redaction but scored below the flagging threshold, unless the encoder head is sure of it.
- ``propagate_names``: a name found once is a name everywhere in the text ("Alvir spent a year
  ... assistant to Alvir D. Pušaver"), and a capitalised word coordinated with a found name is a
  name too ("Usamov and Bowers").

Measured on presidio-synth dev (docs/models/pii.md): place demotion +1.7 points of precision
for -0.9 of recall; propagation +0.6 points of recall for -0.1 of precision.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import regex as re
from presidio_analyzer import RecognizerResult

from detectors.pii.ner import places
from detectors.pii.recognizers import COUNTRIES

NAME_LIKE = frozenset({"PERSON", "LOCATION"})
DEMOTED_SCORE = 0.45  # below the 0.5 flagging threshold, above the 0.2 redaction threshold
# A one-word place the NER itself is this sure of keeps its score: the encoder head's score is
# its probability in context ("cover Stavanger to Bergen"); spaCy's fixed 0.85 never is.
CONFIDENT_PLACE = 0.9
PROPAGATED_SCORE = 0.55
_PLACE_CUE = re.compile(
    r"(?i)(?:\b(?:in|from|to|at|near|of|the|visit|visiting|around|across)|,)\s*$")
_NAME_TOKEN = re.compile(r"\p{Lu}[\p{Ll}\p{M}][\p{L}\p{M}'’\-]*")
_AFTER = re.compile(r"\s+(?:and|&|or)\s+(\p{Lu}[\p{Ll}\p{M}][\p{L}\p{M}'’\-]*)")
_BEFORE = re.compile(r"(\p{Lu}[\p{Ll}\p{M}][\p{L}\p{M}'’\-]*)\s+(?:and|&|or)\s+$")


def resolve(text: str, results: Sequence[Any]) -> list[Any]:
    """A PERSON or LOCATION that overlaps a pattern entity (an address, email, phone...) or
    holds digits, '@' or '://' is dropped (spaCy tags "Avenida Otoniel Dutra" or "7349 Box" as
    names). Pattern entities win: their spans come with structure (and checksums)."""
    anchors = [r for r in results if r.entity_type not in NAME_LIKE]
    out = []
    for r in results:
        if r.entity_type in NAME_LIKE:
            if re.search(r"\d|@|://", text[r.start:r.end]):
                continue
            if any(a.start < r.end and r.start < a.end for a in anchors):
                continue
        out.append(r)
    return out


def _recognizer(r: Any) -> str:
    return str(r.recognition_metadata.get(RecognizerResult.RECOGNIZER_NAME_KEY, ""))


_COUNTRY = re.compile(rf"(?i:{COUNTRIES})")
_PLACE_WORD = re.compile(r"(?i)\b(?:in|from|to|at|near|visit|visiting|around|across)\s*$")


def listed_places(text: str, results: Sequence[Any]) -> list[Any]:
    """A name of two words or more (the NER's, or a given name and surname) that is, whole, a
    place of the place list ("Milton Keynes", "Santiago de Compostela") is a place: full names
    are rarely town names, though one word alone often is ("Adams", "Morales"), so single words
    are left to the NER. Where the NER already has that place, the name is dropped."""
    known = places()
    out = []
    for r in results:
        name = " ".join(text[r.start:r.end].split())
        if (r.entity_type == "PERSON" and " " in name and name.casefold() in known
                and _recognizer(r) in ("SpacyRecognizer", "GivenNameRecognizer")):
            if any(o.entity_type == "LOCATION" and (o.start, o.end) == (r.start, r.end)
                   for o in results):
                continue
            r.entity_type = "LOCATION"
        out.append(r)
    return out


def demote_lone_places(text: str, results: Sequence[Any]) -> list[Any]:
    """One-word NER places with no place cue drop below the flagging cut, except country names
    and places the NER scores ``CONFIDENT_PLACE`` or more;
    one that is also a given name found by ``GivenNameRecognizer`` ("Magnus spent a year") is
    dropped: the small model tags unfamiliar first names as places."""
    given = {(r.start, r.end) for r in results if _recognizer(r) == "GivenNameRecognizer"}
    out = []
    for r in results:
        if r.entity_type != "LOCATION" or _recognizer(r) != "SpacyRecognizer":
            out.append(r)
            continue
        cued = _PLACE_CUE.search(text[max(0, r.start - 20):r.start])
        if (r.start, r.end) in given and not _PLACE_WORD.search(text[max(0, r.start - 20):r.start]):
            continue
        out.append(r)
        if _COUNTRY.fullmatch(text[r.start:r.end].strip()):
            continue
        single = " " not in text[r.start:r.end].strip()
        line_start = "\n" in text[max(0, r.start - 2):r.start] or r.start == 0
        if (single and not line_start and not cued and r.score < CONFIDENT_PLACE
                and text[r.start:r.end].strip().casefold() not in places()):
            r.score = min(r.score, DEMOTED_SCORE)
    return out


def _new(start: int, end: int, how: str) -> RecognizerResult:
    return RecognizerResult(
        "PERSON", start, end, PROPAGATED_SCORE,
        recognition_metadata={RecognizerResult.RECOGNIZER_NAME_KEY: "NamePropagation",
                              "pattern": how})


def propagate_names(text: str, results: Sequence[Any], threshold: float = 0.5) -> list[Any]:
    out = list(results)
    persons = [r for r in results if r.entity_type == "PERSON" and r.score >= threshold]

    def free(a: int, b: int) -> bool:
        return not any(r.start < b and a < r.end and r.score >= threshold for r in out)

    tokens = {m.group() for r in persons for m in _NAME_TOKEN.finditer(text[r.start:r.end])}
    for tok in tokens:
        for m in re.finditer(rf"(?<!\w){re.escape(tok)}(?!\w)", text):
            if free(m.start(), m.end()):
                out.append(_new(m.start(), m.end(), "same name elsewhere"))
    for r in persons:
        after = _AFTER.match(text, r.end)
        if after and free(after.start(1), after.end(1)):
            out.append(_new(after.start(1), after.end(1), "coordinated with a name"))
        before = _BEFORE.search(text[max(0, r.start - 40):r.start])
        if before:
            a, b = max(0, r.start - 40) + before.start(1), max(0, r.start - 40) + before.end(1)
            if free(a, b):
                out.append(_new(a, b, "coordinated with a name"))
    return out
