"""Text analysis for the repetition detector: tokens, phrase candidates, opener, and a coarse
sentence-function sequence. Pure and stateless; one ``analyse`` call per reply.

Privacy: phrase candidates never contain a token with a digit, a token inside an e-mail
address or URL, or a capitalised word in mid-sentence (likely a name). Only candidates that
later recur across conversations are ever reported, and those cannot be user-specific.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from detectors.features import split_sentences
from detectors.repetition.sketch import bigram_hashes, token_hashes

_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
# An address matches from the start of its whitespace-free run (the lookbehind says so; it is
# where the unanchored form matched too), so a long token is scanned once, not from each of
# its positions (quadratic: 0.5 s on a 20,000-character token).
_MASKED = re.compile(r"(?<!\S)\S+@\S+|(?:https?://|www\.)\S+", re.IGNORECASE)
_CLAUSE_BREAK = re.compile(r"[,;:—–()]")
_LEADING_JOINERS = frozenset({"and", "but", "so", "also", "then", "however", "or"})
_CAPITAL_OK = frozenset({"i", "i'm", "i've", "i'll", "i'd"})
STOPWORDS = frozenset({
    "a", "about", "above", "after", "again", "all", "am", "an", "and", "any", "are", "as", "at",
    "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can",
    "could", "did", "do", "does", "doing", "don't", "down", "during", "each", "few", "for",
    "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his",
    "how", "i", "i'd", "i'll", "i'm", "i've", "if", "in", "into", "is", "it", "it's", "its",
    "just", "let", "let's", "me", "more", "most", "my", "no", "nor", "not", "now", "of", "off",
    "on", "once", "only", "or", "other", "our", "ours", "out", "over", "own", "same", "she",
    "should", "so", "some", "such", "than", "that", "that's", "the", "their", "them", "then",
    "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up",
    "very", "was", "we", "we're", "were", "what", "when", "where", "which", "while", "who",
    "whom", "why", "will", "with", "would", "you", "you'd", "you'll", "you're", "you've", "your",
    "yours",
})

# Coarse sentence functions, checked in this order; the first that matches wins.
FUNCTIONS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("closing", re.compile(
        r"\b(?:hope (?:this|that) helps|let me know|anything else|feel free|have a (?:great|nice|"
        r"good|wonderful)|take care|glad (?:i|to) (?:could|help))", re.I)),
    ("apology", re.compile(r"\b(?:sorry|apologi[sz]e|my apologies|regret)\b", re.I)),
    ("acknowledgement", re.compile(
        r"\b(?:i (?:completely |totally |really )?(?:understand|hear you|can (?:see|imagine))|that "
        r"(?:sounds|must)|it(?:'s| is) (?:completely |totally )?(?:understandable|normal|okay|ok)|"
        r"thank(?:s| you) for|you're not alone|makes sense|i appreciate)\b", re.I)),
    ("question", re.compile(r"\?\s*$")),
    ("advice", re.compile(
        r"^(?:you (?:should|could|might|may want|can try)|try|consider|please|make sure|"
        r"i (?:recommend|suggest|would suggest)|it (?:might|may|could) help|go to|click|check|"
        r"remember to|don't forget)\b", re.I)),
    ("offer", re.compile(
        r"\b(?:i(?:'ll| will| can| would be| 'd be|'d be) (?:happy|glad)|let me|i(?:'ll| will) "
        r"(?:help|check|look)|happy to help|i can help)\b", re.I)),
)
FUNCTION_NAMES: tuple[str, ...] = ("info",) + tuple(name for name, _ in FUNCTIONS)
MAX_SEQUENCE = 5


@dataclass(frozen=True, slots=True)
class Candidate:
    """A phrase that may be stock: its hash, token range [first, last) and character span."""

    key: int
    first: int
    last: int
    span: tuple[int, int]


@dataclass(frozen=True, slots=True)
class Analysis:
    tokens: np.ndarray  # uint64 token hashes (32-bit CRC values)
    candidates: tuple[Candidate, ...]
    opener: int  # hash of the first three tokens of the first sentence, 0 if none
    sequence: tuple[str, ...]  # sentence functions, consecutive repeats collapsed
    shingles: np.ndarray  # MinHash input: token-bigram hashes (unigram for one-token replies)


def phrase_key(normalised: str) -> int:
    """A 63-bit stable key (fits a signed int64 and JSON without loss)."""
    return int.from_bytes(hashlib.blake2b(normalised.encode(), digest_size=8).digest(),
                          "little") >> 1


def sentence_function(sentence: str) -> str:
    for name, pattern in FUNCTIONS:
        if pattern.search(sentence):
            return name
    return "info"


def encode_sequence(seq: Sequence[str]) -> int:
    """Pack a function sequence into an int (3 bits per function) for compact state."""
    code = 0
    for name in reversed(seq[:MAX_SEQUENCE]):
        code = code * 8 + FUNCTION_NAMES.index(name) + 1
    return code


def decode_sequence(code: int) -> tuple[str, ...]:
    out: list[str] = []
    while code:
        code, digit = divmod(code, 8)
        out.append(FUNCTION_NAMES[digit - 1])
    return tuple(out)


def _masked_ranges(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _MASKED.finditer(text)]


def _tokenise(text: str, sentences: Sequence[tuple[int, int]]
              ) -> tuple[list[str], list[tuple[int, int]], list[bool], list[int]]:
    """Normalised tokens, their spans, whether each may be part of a phrase, and the sentence
    index of each token."""
    masked = _masked_ranges(text)
    words: list[str] = []
    spans: list[tuple[int, int]] = []
    usable: list[bool] = []
    sent_of: list[int] = []
    for si, (s, e) in enumerate(sentences):
        for k, m in enumerate(_TOKEN.finditer(text, s, e)):
            raw = m.group().replace("’", "'")
            low = raw.lower()
            inside = bool(masked) and any(a <= m.start() < b for a, b in masked)
            name_like = k > 0 and raw[0].isupper() and low not in _CAPITAL_OK
            words.append(low)
            spans.append(m.span())
            usable.append(not (inside or name_like or not raw.replace("'", "").isalpha()))
            sent_of.append(si)
    return words, spans, usable, sent_of


def _runs(idx: list[int], spans: list[tuple[int, int]], breaks: list[int]) -> list[list[int]]:
    """Split a sentence's token indexes into clauses at the ``breaks`` (sorted offsets of
    commas, semicolons, dashes...); a sentence without a break is one clause, not repeated."""
    runs: list[list[int]] = [[]]
    j, prev_end = 0, -1
    for cur in idx:
        if prev_end >= 0:
            while j < len(breaks) and breaks[j] < prev_end:
                j += 1
            if j < len(breaks) and breaks[j] < spans[cur][0]:
                runs.append([])
        runs[-1].append(cur)
        prev_end = spans[cur][1]
    return runs if len(runs) > 1 else []


def _phrase(words: list[str], spans: list[tuple[int, int]], first: int, last: int) -> Candidate:
    return Candidate(phrase_key(" ".join(words[first:last])), first, last,
                     (spans[first][0], spans[last - 1][1]))


def _candidates(text: str, words: list[str], spans: list[tuple[int, int]], usable: list[bool],
                sent_of: list[int], ngram: int) -> tuple[Candidate, ...]:
    by_sentence: dict[int, list[int]] = {}
    for i, si in enumerate(sent_of):
        by_sentence.setdefault(si, []).append(i)
    # prefix sums over all tokens: unusable tokens and content words up to each index
    bad = [0]
    content = [0]
    for w, ok in zip(words, usable, strict=True):
        bad.append(bad[-1] + (not ok))
        content.append(content[-1] + (w not in STOPWORDS))
    breaks = [m.start() for m in _CLAUSE_BREAK.finditer(text)]
    out: dict[int, Candidate] = {}
    for idx in by_sentence.values():
        for unit in [idx, *_runs(idx, spans, breaks)]:  # the whole sentence, then each clause
            while unit and words[unit[0]] in _LEADING_JOINERS:
                unit = unit[1:]
            lo, hi = (unit[0], unit[-1] + 1) if unit else (0, 0)
            if 3 <= len(unit) <= 40 and bad[hi] == bad[lo] and content[hi] - content[lo] >= 2:
                c = _phrase(words, spans, lo, hi)
                out.setdefault(c.key, c)
        # sentences hold consecutive token indexes, so n-grams are [j, j + ngram)
        for j in range(idx[0], idx[-1] - ngram + 2):
            if bad[j + ngram] == bad[j] and content[j + ngram] - content[j] >= 2:
                c = _phrase(words, spans, j, j + ngram)
                out.setdefault(c.key, c)
    return tuple(out.values())


def analyse(text: str, sentences: Sequence[tuple[int, int]] | None = None,
            ngram: int = 5) -> Analysis:
    sentences = tuple(sentences) if sentences is not None else split_sentences(text)
    words, spans, usable, sent_of = _tokenise(text, sentences)
    tok = token_hashes(words)
    first = [w for w, si in zip(words, sent_of, strict=True) if si == sent_of[0]] if words else []
    opener = phrase_key(" ".join(first[:3])) if first else 0
    seq: list[str] = []
    for s, e in sentences:
        name = sentence_function(text[s:e])
        if not seq or seq[-1] != name:
            seq.append(name)
    shingles = bigram_hashes(tok) if tok.size > 1 else tok
    return Analysis(tok, _candidates(text, words, spans, usable, sent_of, ngram), opener,
                    tuple(seq[:MAX_SEQUENCE]), shingles)
