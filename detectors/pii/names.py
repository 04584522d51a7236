"""``GivenNameRecognizer``: person names found by their given name, whatever the sentence says.

spaCy's small NER misses names in phrasing it has not seen ("Magnus spent a year...", names in
lists); the cue recognizers need a cue word. This recognizer looks each capitalised word up in a
list of given names (``data/first_names.txt``, built from Faker's per-locale name lists by
``pipeline/training/pii_names.py``; names that are everyday English words, "May", "Will",
"Hope", are left out) and scores:

- a given name followed by one to three more capitalised name words or initials ("Maria
  Gonzalez", "Janka M. Szász"): ``given name + surname`` (0.6);
- a given name alone: ``given name alone`` (0.5, at the flagging cut: on presidio-synth dev,
  scoring it 0.4 instead, flagged only next to a context word, left PERSON recall at 0.867
  against 0.898, for the same precision).

Words right after a street number or before a street type ("12 Ella Street") are addresses, and
the post-processing drops a name that overlaps one. Imported only by ``PiiDetector.load()``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import regex as re
from presidio_analyzer import AnalysisExplanation, EntityRecognizer, RecognizerResult

FIRST_NAMES_FILE = Path(__file__).parent / "data" / "first_names.txt"
NAME = "GivenNameRecognizer"
FULL_SCORE = 0.6
ALONE_SCORE = 0.5
_WORD = r"\p{Lu}[\p{Ll}\p{M}]+(?:[-'’]\p{Lu}?[\p{Ll}\p{M}]+)?"
_CANDIDATE = re.compile(
    rf"(?<![\p{{L}}\p{{M}}\d@.'’-])({_WORD})"
    rf"((?:[ \t]+(?:\p{{Lu}}\.?(?=[ \t])|{_WORD}|(?:de|da|van|von|der|del|di|le|la|dos|bin)"
    rf"(?=[ \t]+\p{{Lu}}))){{0,3}})"
    r"(?![\p{L}\p{M}@])"
)
# Capitalised words that end a name run: they start the next thing, not a surname.
_STOP_AFTER = frozenset(
    """
    and or but the a an in on at of to for from with by is was are were has had have will would
    can could should may might street st avenue ave road rd lane drive dr way court place square
    boulevard blvd inc llc ltd corp company group bank university hospital school hotel
    research investments investment capital partners holdings solutions systems technologies
    technology labs media studios studio consulting services foods motors airlines insurance
    financial international global associates foundation institute enterprises industries
    records press books games software pharmaceuticals logistics energy trust fund
    monday tuesday wednesday thursday friday saturday sunday january february march april june
    july august september october november december i i'm i've i'll
    """.split()  # noqa: SIM905
)
@cache
def first_names() -> frozenset[str]:
    return frozenset(FIRST_NAMES_FILE.read_text(encoding="utf-8").split())


def _trim(rest: str) -> tuple[str, int]:
    """The surname part of a run, cut before a word that starts something else."""
    kept: list[str] = []
    for w in rest.split():
        if w.lower().strip(".") in _STOP_AFTER:
            break
        kept.append(w)
    while kept and kept[-1] in {"de", "da", "van", "von", "der", "del", "di", "le", "la", "dos",
                                "bin"}:
        kept.pop()
    if not kept:
        return "", 0
    end = rest.index(kept[-1], sum(len(w) for w in kept[:-1])) + len(kept[-1])
    return rest[:end], end


class GivenNameRecognizer(EntityRecognizer):
    def __init__(self) -> None:
        super().__init__(supported_entities=["PERSON"], name=NAME,
                         supported_language="en")

    def load(self) -> None:
        first_names()

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None
                ) -> list[RecognizerResult]:
        names = first_names()
        out = []
        for m in _CANDIDATE.finditer(text):
            if m.group(1) not in names:
                continue
            _, extra = _trim(m.group(2))
            end = m.end(1) + extra
            pattern, score = ("given name + surname", FULL_SCORE) if extra else (
                "given name alone", ALONE_SCORE)
            expl = AnalysisExplanation(recognizer=NAME, original_score=score,
                                       pattern_name=pattern, textual_explanation=pattern)
            out.append(RecognizerResult(
                "PERSON", m.start(), end, score, analysis_explanation=expl,
                recognition_metadata={RecognizerResult.RECOGNIZER_NAME_KEY: NAME}))
        return out
