"""Engagement: does a reply sentence take up this user's particular situation, or could it have
been said to anyone?

The emotion-cause task (RECCON, Poria et al. 2021) asks which span of a turn caused the feeling
it expresses; a reply engages when its empathic sentence refers to that cause or to the details
the user gave. Measured per reply sentence from two signals the pipeline already has:

- **specific overlap**: the content words (stems, ``words.terms``) the sentence shares with the
  user turn(s) it answers and the user's few earlier turns, feeling words left out (echoing
  "frustrated" is not engaging with its cause) and
  stock support words ("order", "account", "issue", ``words.STOCK_WORDS``) counting
  ``STOCK_WEIGHT`` each, so that a script with the topic filled in ("I'm sorry your parcel has
  not arrived") stays generic while "losing your daughter's birthday present" does not;
- **similarity**: cosine of the sentence's MiniLM vector with the user turn(s)' vector.

``engagement = sigmoid(a * min(overlap, cap) + b * similarity + c)``; the constants were chosen
on the tuning half of our contrast set only (docs/models/empathy.md). The **cause span** is the
user sentence the addressing reply sentence shares the most specific words with (by weight);
with no shared word, the user sentence with the most specific content.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from detectors.base import Turn
from detectors.empathy.words import FEELING_WORDS, STOCK_WORDS, _stems, terms
from detectors.features import split_sentences

# Share of its credit an unengaged (generic) acknowledgement keeps, in the overall score and in
# empathy.missed (chosen on the tuning half of tests/eval/contrast).
GENERIC_CREDIT = 0.35
STOCK_WEIGHT = 0.35  # a shared stock word counts this much of a specific one
OVERLAP_CAP = 4.0  # shared (weighted) words past this add nothing
EARLIER_TURNS = 3  # earlier user turns whose words a reply may engage
MIN_PREFIX = 5  # a stem this long that starts another is the same word (names_cause)
# When it happened is not what happened: "sorry you had an unpleasant experience this morning"
# names nothing of the user's.
_WHEN = _stems("morning afternoon evening night tonight yesterday tomorrow weekend year recently "
               "ago last earlier")
# An apology or condolence and what it is about: the rest of its clause ("I'm so sorry about your
# grandmother", "sorry your card was stolen"). About nothing of the user's: "Sorry, I need ...",
# "I'm sorry but ...", and a refusal ("I'm sorry we don't sell mocha", "sorry, I can't ...").
# Not "regret" ("We regret to inform you") nor "understand" ("I understand how frustrating it
# is"), which open the notices and scripts of issue 27; nor advice to apologise ("Apologize
# sincerely and offer to replace the bottle"): the bot's own apology has "I" or "we" before it.
_APOLOGY_OBJECT = re.compile(
    r"(?:\bsorry|\b(?:i|we)\s+(?:\w+\s+)?apologi[sz]e\w*|\bapologies|\bcondolences|\bsympathy)\b"
    r"(?!\s+(?:to\s+say\s+)?(?:that\s+)?(?:i|we)\s+(?:do\s+not|don't|dont|can't|cannot|can\s+not|"
    r"only|am\s+not|are\s+not|aren't|won't|will\s+not)\b)"
    r"((?:(?!\bbut\b)[^,;:.!?])*)", re.IGNORECASE)


@dataclass(frozen=True)
class EngagementParams:
    overlap_weight: float = 1.6
    similarity_weight: float = 7.0
    bias: float = -5.0


@dataclass(frozen=True)
class UserSide:
    """The user turn(s) a reply answers, split into sentences with their content stems."""

    spans: list[tuple[int, int, int]]  # (turn index, start, end) per user sentence
    stems: list[frozenset[str]]  # content stems per sentence, feeling words left out

    @classmethod
    def of(cls, prompt: Sequence[Turn], history: Sequence[Turn] = ()) -> UserSide:
        """The user turns answered, and the user's earlier turns of the conversation (up to
        ``EARLIER_TURNS``): a cause told two turns ago ("my dog died") is still the cause when
        the user now writes "Wow. Okay."."""
        answered = {t.turn for t in prompt}
        earlier = [t for t in history if t.role == "user" and t.turn not in answered]
        spans: list[tuple[int, int, int]] = []
        stems_: list[frozenset[str]] = []
        for turn in [*earlier[-EARLIER_TURNS:], *prompt]:
            for s, e in split_sentences(turn.text):
                spans.append((turn.turn, s, e))
                stems_.append(stems(turn.text[s:e]) - FEELING_WORDS)
        return cls(spans, stems_)

    @property
    def empty(self) -> bool:
        return not self.spans


def weight(shared: frozenset[str]) -> float:
    return sum(STOCK_WEIGHT if w in STOCK_WORDS else 1.0 for w in shared)


@dataclass(frozen=True)
class Engagement:
    score: np.ndarray  # (n,) engagement per reply sentence, in [0, 1]
    overlap: np.ndarray  # (n,) weighted shared content words
    similarity: np.ndarray  # (n,) cosine with the user turn(s)
    feeling: np.ndarray  # (n,) 1.0 where the sentence names or infers a feeling
    shared: list[int]  # distinct shared content words per sentence (a count, never the words)
    cause: list[int | None]  # per sentence: index into UserSide.spans of the cause it addresses


def names_feeling(sentence: str) -> bool:
    return not FEELING_WORDS.isdisjoint(stems(sentence))


def stems(sentence: str) -> frozenset[str]:
    return frozenset(t for t, _, _ in terms(sentence))


def measure(sentences: Sequence[str], sent_emb: np.ndarray, prompt_emb: np.ndarray | None,
            user: UserSide, params: EngagementParams | None = None) -> Engagement:
    """Engagement of each reply sentence with the user turn(s) in ``user``."""
    p = params or EngagementParams()
    n = len(sentences)
    reply_stems = [stems(s) for s in sentences]
    feeling = np.array([float(not FEELING_WORDS.isdisjoint(r)) for r in reply_stems],
                       dtype=np.float32)
    if user.empty or prompt_emb is None or n == 0:
        zero = np.zeros(n, dtype=np.float32)
        return Engagement(zero, zero, zero, feeling, [0] * n, [None] * n)
    all_stems = frozenset().union(*user.stems)
    overlap, shared, cause = [], [], []
    for r in reply_stems:
        mine = r - FEELING_WORDS
        both = mine & all_stems
        overlap.append(weight(both))
        shared.append(len(both))
        per = [weight(mine & u) for u in user.stems]
        cause.append(int(np.argmax(per)) if max(per) > 0 else None)
    ov = np.minimum(np.array(overlap, dtype=np.float32), OVERLAP_CAP)
    sim = np.asarray(sent_emb, dtype=np.float32) @ np.asarray(prompt_emb, dtype=np.float32)
    z = p.overlap_weight * ov + p.similarity_weight * sim + p.bias
    score = (1.0 / (1.0 + np.exp(-z))).astype(np.float32)
    return Engagement(score, np.array(overlap, dtype=np.float32), sim.astype(np.float32),
                      feeling, shared, cause)


def names_cause(sentence: str, user: UserSide) -> bool:
    """The sentence apologises for, or commiserates with, something this user named: its apology's
    clause shares a specific content word (not stock, not a feeling word) with the user's turn(s).
    "I'm so sorry about your grandmother" names the user's own cause, however low the cosine of so
    short a sentence with a turn that also asks for something; "sorry for your loss", "sorry to
    hear that", "sorry for the inconvenience" and a script with the topic filled in ("sorry your
    parcel has not arrived": stock words) name nothing of theirs."""
    if user.empty:
        return False
    theirs = frozenset().union(*user.stems) - STOCK_WORDS - _WHEN
    return any(_same_word(w, u) for m in _APOLOGY_OBJECT.finditer(sentence)
               for w in stems(m.group(1)) - FEELING_WORDS - STOCK_WORDS - _WHEN for u in theirs)


def _same_word(a: str, b: str) -> bool:
    """One word with another suffix, which the light stemmer leaves apart: "diagnosed" and
    "diagnosis", "postponed" and "postponement" (the shorter stem, of 5 letters or more, starts
    the longer)."""
    short, long_ = sorted((a, b), key=len)
    return short == long_ or (len(short) >= MIN_PREFIX and long_.startswith(short))


def fallback_cause(user: UserSide) -> int | None:
    """The user sentence with the most specific content: the likeliest cause when the reply
    shares no word with any."""
    if user.empty:
        return None
    weights = [weight(s) for s in user.stems]
    return int(np.argmax(weights)) if max(weights) > 0 else None
