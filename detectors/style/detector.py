"""Style of assistant replies: emojis, exclamation marks, first- and second-person pronouns,
questions, length and hedges (the measures on which Lee et al. 2024 found LLMs differ more than
in substance). Measurements, not alerts: the shipped policy never flags them.

Findings per assistant reply:

- ``style.length`` on every reply: score ``1 - 0.5 ** (words / 50)`` (50 words: 0.5, 100: 0.75,
  200: 0.94); its evidence is the reply's whole profile of raw counts (``words``, ``chars``,
  ``sentences`` and one count per measure), so one row per reply is enough for means.
- ``style.<measure>`` (``emoji``, ``exclamation``, ``question``, ``first_person``,
  ``second_person``, ``hedge``) only when the measure's count is at least 1: score
  ``1 - 0.5 ** count`` (1: 0.5, 2: 0.75, 3: 0.875), span = the first occurrence, evidence =
  ``count``, ``per_100_words``, the pattern ids that fired and up to 10 spans. "Replies with an
  emoji" is then the number of ``style.emoji`` findings over the number of ``style.length`` ones.

Pronouns and hedges are English word lists: for a turn in another language (``Turn.lang``) they
are not counted, and the profile holds ``null`` for them (not 0, so means leave those turns out).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from detectors.base import Example, Finding, ScoringInput, primary_language
from detectors.features import SENTENCES, split_sentences
from detectors.style.patterns import LEXICAL, MEASURES, SCANS

LENGTH_HALF_WORDS = 50.0  # a reply of this many words gets style.length 0.5
MAX_SPANS = 10
_WORD = re.compile(r"\w+(?:['\u2019]\w+)*")


def count_score(count: float, half: float = 1.0) -> float:
    """Counts mapped into [0, 1): ``1 - 0.5 ** (count / half)``; strictly monotone (not rounded:
    rounding would make large counts equal 1), 0 for 0."""
    return 1.0 - 0.5 ** (count / half)


def _hits(text: str, words: frozenset[str], english: bool
          ) -> dict[str, list[tuple[str, int, int]]]:
    """measure -> (pattern id, start, end) of every valid match, in text order. ``words``: the
    text's lower-cased words, for the scans' gates."""
    out: dict[str, list[tuple[str, int, int]]] = {m: [] for m in MEASURES}
    for regex, members, gate in SCANS:
        if not english and all(p.measure in LEXICAL for p in members):
            continue
        if not gate(text, words):
            continue
        for m in regex.finditer(text):
            p = members[int(m.lastgroup[1:])] if m.lastgroup else None
            if p is None or (p.invalidate is not None and p.invalidate(text, m)):
                continue
            out[p.measure].append((p.id, m.start(), m.end()))
    return out


class StyleDetector:
    """Regex counting, no model: deterministic and cheap (microseconds per reply)."""

    name = "style"
    version = "1.0.0"
    roles = frozenset({"assistant"})

    def load(self) -> None:
        """Nothing to load: the patterns compile at import."""

    def score(self, batch: Sequence[ScoringInput]) -> list[list[Finding]]:
        return [self._score_one(item) for item in batch]

    def _score_one(self, item: ScoringInput) -> list[Finding]:
        text = item.turn.text
        lang = primary_language(item.turn.lang)
        english = lang is None or lang == "en"
        tokens = _WORD.findall(text)
        words = len(tokens)
        hits = _hits(text, frozenset(t.lower() for t in tokens), english)
        sentences = item.context.features.get(SENTENCES) or split_sentences(text)
        profile: dict[str, Any] = {"words": words, "chars": len(text),
                                   "sentences": len(sentences)}
        for measure in MEASURES:
            lexical_off = measure in LEXICAL and not english
            profile[measure] = None if lexical_off else len(hits[measure])
        if not english:
            profile["lang"] = lang
        found = [self._finding("length", count_score(words, LENGTH_HALF_WORDS), None, profile)]
        for measure in MEASURES:
            found += self._measure(measure, hits[measure], words)
        return found

    def _measure(self, measure: str, hits: list[tuple[str, int, int]], words: int
                 ) -> list[Finding]:
        if not hits:
            return []
        evidence = {
            "count": len(hits),
            "per_100_words": round(100.0 * len(hits) / words, 2) if words else None,
            "patterns": sorted({h[0] for h in hits}),
            "spans": [[s, e] for _, s, e in hits[:MAX_SPANS]],
        }
        return [self._finding(measure, count_score(len(hits)), (hits[0][1], hits[0][2]),
                              evidence)]

    def _finding(self, sub: str, score: float, span: tuple[int, int] | None,
                 evidence: Mapping[str, Any]) -> Finding:
        return Finding(self.name, self.version, f"{self.name}.{sub}", score, span, evidence)


def _ex(text: str, expect: Iterable[str], absent: Iterable[str] = ()) -> Example:
    return Example(text, frozenset(f"style.{m}" for m in expect),
                   frozenset(f"style.{m}" for m in absent))


# Style labels are measurements (never flagged by the shipped policy): for them, "expect" means
# the finding is present and "absent" that it is not.
EXAMPLES: tuple[Example, ...] = (
    _ex("Great news! Your refund is on its way \U0001F389", {"exclamation", "emoji", "length"},
        {"question", "hedge", "first_person"}),
    _ex("I can check that for you. What is your order number?",
        {"first_person", "second_person", "question"}, {"emoji", "exclamation", "hedge"}),
    _ex("It might take a few days; perhaps the courier is delayed.", {"hedge"},
        {"first_person", "second_person", "question"}),
    _ex("What kind of phone do you have? We open at 9:30 in May.",
        {"question", "second_person", "first_person"}, {"hedge", "emoji"}),
    _ex("See https://example.com/help?topic=refunds for details.", {"length"},
        {"question", "emoji", "exclamation"}),
    _ex("Thanks :) We'll sort it out \U0001F44D\U0001F3FD", {"emoji", "first_person"},
        {"second_person", "hedge"}),
)
