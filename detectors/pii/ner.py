"""Named entities (PERSON, LOCATION) from the shared MiniLM encoder's token states.

The shared encoder (``detectors.features.SentenceEncoder``) runs every turn through
all-MiniLM-L6-v2 once; ``TokenStates`` keeps the last hidden state of each word piece of that
pass. This head reads them: per word (the tokenizer's words; a word's first piece), its state,
the previous and next words' states and a few surface features the uncased encoder cannot see
(capitalised, digits, at the start of a sentence, a known given name) go through a small
two-layer network (``data/ner_head.npz``, numpy at run time) to BIO tags for PERSON and
LOCATION. A span is a run of words of one entity (a ``B-`` word more likely than ``I-`` starts a
new one); its score is the mean of its words' entity probability, so a doubtful name is still
redacted (>= 0.2) without being flagged (< 0.5).

Trained by ``pipeline/training/pii_ner.py`` on Faker-filled support-chat templates written for
it (docs/models/pii.md has the data, licences and numbers). A text's spans depend on that text
only: each text is encoded alone and the head works word by word.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from detectors.base import DetectorError

HEAD_FILE = Path(__file__).parent / "data" / "ner_head.npz"
# Towns, countries and states (GeoNames; ``pipeline/training/pii_places.py``), lower-cased.
PLACES_FILE = Path(__file__).parent / "data" / "places.txt"
PLACE_WORDS = 5  # the longest place name looked up, in tokenizer words
TAGS = ("O", "B-PERSON", "I-PERSON", "B-LOCATION", "I-LOCATION")
ENTITIES = ("PERSON", "LOCATION")
# Spans scoring less are not returned: the stored text is redacted from the detector's
# min_score (0.05), and below this the head's spans are mostly common words.
MIN_SCORE = 0.3
N_LEXICAL = 10
_SENTENCE_END = frozenset(".!?\n:;")

Span = tuple[int, int, str, float]  # start, end, entity, score
# Words that are dates or money in support chat, never part of a name or place the head
# reports ("the 5th of March", "93 bucks to Wilson"): a month or weekday that is also a name
# ("June", "August") is lost with them.
NEVER_ENTITY = frozenset(
    """
    january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday
    friday saturday sunday mon tue tues wed thu thur thurs fri sat sun today tomorrow
    yesterday dollars dollar euros euro pounds pound bucks cents cent usd eur gbp
    """.split()  # noqa: SIM905
)
# Function words never start or end a span ("Norway is", "the Lima"); inside one they stay.
EDGE_WORDS = frozenset(
    """
    a an the and or but if so as of to in on at by for from with into about than then that this
    these those it its is are was were be been am has have had do does did will would can could
    should may might must not no yes ok i me my we our you your he him his she her they them
    their there here what which who whom when where why how just also very too please thanks
    """.split()  # noqa: SIM905
)


@cache
def given_names() -> frozenset[str]:
    from detectors.pii.names import first_names

    return frozenset(n.casefold() for n in first_names())


@cache
def places() -> frozenset[str]:
    try:
        return frozenset(PLACES_FILE.read_text(encoding="utf-8").split("\n")) - {""}
    except OSError as exc:
        raise DetectorError(f"pii: the place list {PLACES_FILE} is missing "
                            f"({type(exc).__name__}); pipeline/training/pii_places.py makes it"
                            ) from exc


def in_place_list(text: str, spans: Sequence[tuple[int, int]]) -> list[bool]:
    """Per word, whether it is part of a run of up to ``PLACE_WORDS`` tokenizer words whose text
    the place list holds, case ignored: "Wagga Wagga", "sligo", "Cluj-Napoca" (three words)."""
    known = places()
    out = [False] * len(spans)
    for j in range(len(spans)):
        for k in range(min(len(spans), j + PLACE_WORDS), j, -1):
            if text[spans[j][0]:spans[k - 1][1]].casefold() in known:
                out[j:k] = [True] * (k - j)
                break
    return out


def words_of(text: str, offsets: np.ndarray, words: np.ndarray) -> tuple[list[tuple[int, int]],
                                                                          list[int]]:
    """Character span of each word and the index of its first piece."""
    spans: list[tuple[int, int]] = []
    first: list[int] = []
    last = -2
    for i, w in enumerate(words.tolist()):
        s, e = int(offsets[i, 0]), int(offsets[i, 1])
        if w != last:
            spans.append((s, e))
            first.append(i)
            last = w
        else:
            spans[-1] = (spans[-1][0], max(spans[-1][1], e))
    return spans, first


def _lexical(text: str, spans: Sequence[tuple[int, int]]) -> np.ndarray:
    """The ``N_LEXICAL`` surface features of each word, built as one list of rows and turned
    into an array once (not set cell by cell)."""
    if not spans:
        return np.zeros((0, N_LEXICAL), dtype=np.float32)
    given = given_names()
    words = [text[s:e] for s, e in spans]
    caps = [w[:1].isupper() for w in words]
    place = in_place_list(text, spans)
    n = len(spans)
    rows = []
    last, pos = "", 0  # the last non-space character before ``pos`` (a linear scan in all)
    for j, ((s, e), w) in enumerate(zip(spans, words, strict=True)):
        if s < pos:  # overlapping spans: scan back from the word, as for any text
            before = text[:s].rstrip()[-1:]
        else:
            gap = text[pos:s].rstrip()
            before = last = gap[-1] if gap else last
        rows.append((caps[j], len(w) > 1 and w.isupper(), any(c.isdigit() for c in w),
                     w.isalpha(), not before or before in _SENTENCE_END, w.casefold() in given,
                     j > 0 and caps[j - 1], j + 1 < n and caps[j + 1],
                     "\n" in text[spans[j - 1][1] if j else 0:s], place[j]))
        tail = text[max(s, pos):e].rstrip()
        if tail:
            last = tail[-1]
        pos = max(pos, e)
    return np.array(rows, dtype=np.float32)


def word_features(text: str, states: Any) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """One row per word: its state, its neighbours' states and the surface features."""
    spans, first = words_of(text, states.offsets, states.words)
    if not spans:
        return np.zeros((0, 3 * states.states.shape[1] + N_LEXICAL), np.float32), []
    h = states.states[first]
    zero = np.zeros((1, h.shape[1]), np.float32)
    prev = np.concatenate([zero, h[:-1]])
    nxt = np.concatenate([h[1:], zero])
    return np.concatenate([h, prev, nxt, _lexical(text, spans)], axis=1), spans


class NerHead:
    """The shipped head: ``spans(text, token_states)`` -> [(start, end, entity, score)]."""

    def __init__(self, path: Path = HEAD_FILE) -> None:
        try:
            with np.load(path) as z:
                self.w1, self.b1 = z["w1"], z["b1"]
                self.w2, self.b2 = z["w2"], z["b2"]
                self.mean, self.scale = z["mean"], z["scale"]
        except (OSError, KeyError) as exc:
            raise DetectorError(f"pii: the named-entity head {path} is missing or incomplete "
                                f"({type(exc).__name__}); pipeline/training/pii_ner.py makes it"
                                ) from exc
        # The shipped head has its feature scaling folded into ``w1`` (mean 0, scale 1): then
        # the scaling is skipped, two passes over every word's 1,162 features
        self._scaled = bool(self.mean.any() or (self.scale != 1).any())
        if self.w2.shape[1] != len(TAGS):
            raise DetectorError(f"pii: the head at {path} has {self.w2.shape[1]} tags, "
                                f"expected {len(TAGS)}")

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        if self._scaled:
            x = (x - self.mean) / self.scale
        z = np.maximum(x @ self.w1 + self.b1, 0.0) @ self.w2 + self.b2
        z = np.exp(z - z.max(axis=1, keepdims=True))
        return np.asarray(z / z.sum(axis=1, keepdims=True))

    def spans(self, text: str, states: Any) -> list[Span]:
        x, words = word_features(text, states)
        if not words:
            return []
        if x.shape[1] != self.w1.shape[0]:
            raise DetectorError(f"pii: the head expects {self.w1.shape[0]} features per word, "
                                f"got {x.shape[1]} (another encoder?)")
        return decode(text, words, self.probabilities(x))


def decode(text: str, words: Sequence[tuple[int, int]], p: np.ndarray) -> list[Span]:
    """Runs of words of one entity, each word's entity its likelier one of PERSON and LOCATION
    when that is at least ``MIN_SCORE``; a word whose ``B-`` beats its ``I-`` starts a new run.
    Words that are punctuation only or function words (``EDGE_WORDS``) never start or end a
    span; a word with a digit or in
    ``NEVER_ENTITY`` (months, weekdays, money) ends one and is never part of one."""
    out: list[Span] = []
    run: list[int] = []
    kind = ""

    def edge(j: int) -> bool:
        w = text[words[j][0]:words[j][1]]
        return not any(c.isalnum() for c in w) or w.casefold() in EDGE_WORDS

    def close() -> None:
        while run and edge(run[-1]):
            run.pop()
        while run and edge(run[0]):
            run.pop(0)
        if run:
            col = 1 if kind == "PERSON" else 3
            score = float(np.mean([p[j, col] + p[j, col + 1] for j in run]))
            out.append((words[run[0]][0], words[run[-1]][1], kind, round(score, 4)))
        run.clear()

    for j, (s, e) in enumerate(words):
        per, loc = p[j, 1] + p[j, 2], p[j, 3] + p[j, 4]
        ent, prob = ("PERSON", per) if per >= loc else ("LOCATION", loc)
        alnum = any(c.isalnum() for c in text[s:e])
        if (prob < MIN_SCORE or (not run and not alnum) or text[s:e].casefold() in NEVER_ENTITY
                or any(c.isdigit() for c in text[s:e])):
            close()
            continue
        col = 1 if ent == "PERSON" else 3
        starts = p[j, col] > p[j, col + 1]
        if run and (ent != kind or starts):
            close()
        if not run and not alnum:
            continue
        kind = ent
        run.append(j)
    close()
    return out
