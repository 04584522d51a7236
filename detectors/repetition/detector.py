"""Formulaic repetition across conversations, per bot: a stateful detector.

For each assistant reply, against the recent replies of the same (tenant, bot):

- ``repetition.stock_phrase``: a sentence, clause or word 5-gram of the reply that other
  conversations of the bot also used. Flagged from its second conversation on, never for
  repeats inside one conversation. Score: ``max(1 - 0.5**(k - 1), share / 0.2)`` for ``k``
  conversations in the window and ``share`` of the window's replies using it (capped at 1),
  so a phrase in two conversations scores 0.5 and one in a fifth of all replies scores 1.
  Evidence: the phrase (lower-cased reply text), conversations, replies, share. The phrase text
  is safe to report: it recurs across conversations, so it is not user-specific, and phrase
  candidates never hold digits, e-mail addresses, URLs or mid-sentence capitalised words.
- ``repetition.stock_empathy``: the same, for a phrase that overlaps an empathy formula of
  the reply (an apology for the user's trouble, "I understand your frustration", "thank you
  for your patience"...; ``formulas.FORMULAS``): formulaic empathy said to everyone.
  ``repetition.stock_phrase`` keeps the procedural rest (a task bot's script, "your order
  will be ready shortly"). Same score; evidence adds the formula's name.
- ``repetition.near_duplicate``: the reply is a near-copy of a recent reply in another
  conversation. Score: estimated Jaccard similarity of word-bigram sets (b-bit MinHash, LSH
  bands). Evidence: similarity and the matched reply's conversation id and turn. Dropped below
  0.3 (negligible).
- ``repetition.template_sequence``: the reply follows the bot's most common sentence-function
  sequence (e.g. apology > info > closing; functions from small regexes, ``repetition_text``).
  Score: that sequence's share of the window. Only once the window holds ``min_window`` replies.
- ``repetition.window``: on every reply, the bot's window diversity (distinct-1/2, compression
  ratio, top opener share, near-duplicate share, template share, replies). Score: 1 - diversity,
  see ``WindowStats.score``.

State: per (tenant, bot) under ``state_key(turn)`` in ``Context.state``, a JSON-serialisable
dict (see ``repetition_state``) that a faust Table can hold. Without a state store (``state`` is
None) the detector keeps a private in-process store, so it still works in a plain loop but its
memory is lost with the instance. A batch is processed turn by turn in order, and each touched
state is written back once per batch, so a batch gives the same findings as one-by-one calls.
A turn whose (conversation, turn) is already in the window (a redelivery) is scored without
being counted again.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from detectors.base import DictStateStore, Example, Finding, ScoringInput, StateStore, Turn
from detectors.features import SENTENCES
from detectors.repetition import erase
from detectors.repetition.formulas import formula_spans
from detectors.repetition.sketch import MinHasher
from detectors.repetition.state import BotState, Config, conversation_hash, readable
from detectors.repetition.text import (
    Analysis,
    Candidate,
    analyse,
    decode_sequence,
    encode_sequence,
)
from detectors.repetition.window import PhraseStats

NAME = "repetition"
FULL_SHARE = 0.2  # a phrase in this share of the window's replies scores 1
MIN_NEAR_DUPLICATE = 0.3  # below this estimated Jaccard similarity nothing is reported
MIN_TOKENS_NEAR_DUPLICATE = 4  # shorter replies ("Thanks!") are not compared


def state_key(turn: Turn) -> str:
    """The state store key of a turn's bot: one state per (tenant, bot)."""
    return f"{NAME}/{turn.tenant or ''}/{turn.bot_id or ''}"


def state_owner(key: str) -> tuple[str, str] | None:
    """(tenant, bot) of a ``state_key``; None for another detector's key. A tenant name with a
    '/' in it is read up to the slash."""
    prefix, _, rest = key.partition("/")
    if prefix != NAME or "/" not in rest:
        return None
    tenant, _, bot = rest.partition("/")
    return tenant, bot


class RepetitionDetector:
    name = NAME
    version = "0.2.0"
    roles = frozenset({"assistant"})
    features = frozenset({SENTENCES})

    def __init__(self, max_replies: int = 2000, window_days: float = 7.0, ngram: int = 5,
                 num_perm: int = 32, bands: int = 16, hll_precision: int = 10,
                 max_candidates: int = 8000, max_phrases: int = 1000,
                 near_duplicate_jaccard: float = 0.7, min_window: int = 20) -> None:
        if max_replies < 1 or window_days <= 0 or ngram < 2 or num_perm % bands:
            raise ValueError("repetition: need max_replies >= 1, window_days > 0, ngram >= 2 "
                             "and num_perm divisible by bands")
        self.cfg = Config(max_replies=max_replies, window_s=window_days * 86400.0,
                          num_perm=num_perm, bands=bands, hll_precision=hll_precision,
                          max_candidates=max_candidates, max_phrases=max_phrases,
                          near_duplicate_jaccard=near_duplicate_jaccard)
        self.ngram = ngram
        self.min_window = min_window
        self._hasher = MinHasher(num_perm)
        self._private = DictStateStore()
        # (id(store), key) -> (the value last written, its working form): skips decoding when
        # the store still holds exactly what this instance wrote.
        self._cache: dict[tuple[int, str], tuple[Any, BotState]] = {}

    def load(self) -> None:
        """Nothing to load: rules and sketches only."""

    def score(self, batch: Sequence[ScoringInput]) -> list[list[Finding]]:
        touched: dict[tuple[int, str], tuple[StateStore, str, BotState]] = {}
        out: list[list[Finding]] = []
        try:
            for item in batch:
                store = item.context.state if item.context.state is not None else self._private
                key = state_key(item.turn)
                ck = (id(store), key)
                if ck not in touched:
                    touched[ck] = (store, key, self._state(store, key))
                out.append(self._score_one(item, touched[ck][2]))
            for ck, (store, key, st) in touched.items():
                value = st.to_json()
                store.set(key, value)
                self._cache[ck] = (value, st)
        except Exception:
            for ck in touched:  # the working copies may be half-updated: forget them
                self._cache.pop(ck, None)
            raise
        return out

    def _state(self, store: StateStore, key: str) -> BotState:
        value = store.get(key)
        cached = self._cache.get((id(store), key))
        if cached is not None and cached[0] is value:
            return cached[1]
        return BotState.from_json(self.cfg, value) if value else BotState(self.cfg)

    state_owner = staticmethod(state_owner)

    def forget(self, value: Any, conversations: Collection[int] = (),
               before: datetime | None = None) -> tuple[Any | None, int]:
        """A stored state without these conversations (``conversation_hash`` values) and, with
        ``before``, without replies older than it: (the new value, entries removed). The value
        is returned as it was when nothing went, and None when it is of another state version
        or sketch layout (the detector would start afresh anyway: delete it).

        Cached working copies are dropped: the next batch reads the store again."""
        self._cache.clear()
        if not value:
            return value, 0
        if not readable(self.cfg, value):
            return None, 1
        st = BotState.from_json(self.cfg, value)
        n = erase.forget(st, conversations)
        if before is not None:
            n += erase.expire_before(st, before.timestamp())
        return (st.to_json() if n else value), n

    def _score_one(self, item: ScoringInput, st: BotState) -> list[Finding]:
        turn = item.turn
        a = analyse(turn.text, item.context.features.get(SENTENCES), self.ngram)
        conv = conversation_hash(turn.conversation_id)
        sig = self._hasher.signature(a.shingles)
        match = st.nearest(sig, conv) if a.tokens.size >= MIN_TOKENS_NEAR_DUPLICATE else None
        near = match is not None and match.similarity >= self.cfg.near_duplicate_jaccard
        if not st.is_duplicate(conv, turn.turn):
            for c in a.candidates:
                st.phrases.observe(c.key, conv, st.seq)
            if near and match is not None:
                st.mark_near_duplicate(match.conversation_id, match.turn)
            st.insert(a, turn.ts.timestamp(), conv, turn.conversation_id, turn.turn, sig, near)
        found = self._stock_phrases(st, a, turn.text)
        if match is not None and match.similarity >= MIN_NEAR_DUPLICATE:
            found.append(self._finding("near_duplicate", match.similarity, None, {
                "similarity": round(match.similarity, 4),
                "conversation_id": match.conversation_id, "turn": match.turn}))
        stats = st.stats()
        seq_code = encode_sequence(a.sequence) if len(a.sequence) >= 2 else 0
        if stats.replies >= self.min_window and seq_code and seq_code == stats.template:
            found.append(self._finding("template_sequence", stats.template_share, None, {
                "sequence": ">".join(decode_sequence(seq_code)),
                "share": round(stats.template_share, 4), "replies": stats.replies}))
        found.append(self._finding("window", stats.score, None, {
            "replies": stats.replies, "distinct_1": round(stats.distinct_1, 4),
            "distinct_2": round(stats.distinct_2, 4),
            "compression_ratio": round(stats.compression_ratio, 4),
            "top_opener_share": round(stats.top_opener_share, 4),
            "near_duplicate_share": round(stats.near_duplicate_share, 4),
            "template_share": round(stats.template_share, 4)}))
        return found

    def _stock_phrases(self, st: BotState, a: Analysis, text: str) -> list[Finding]:
        """Stock phrases grouped by overlap, empathy formulas apart from procedure: a reply's
        repeated apology and its repeated script are two findings, not one span."""
        empathic: list[Hit] = []
        procedural: list[Hit] = []
        formulas: list[tuple[int, int, str]] | None = None  # found once, only when needed
        for c in a.candidates:
            s = st.phrases.stats(c.key)
            if s.conversations >= 2:
                if formulas is None:
                    formulas = formula_spans(text)
                name = next((n for fs, fe, n in formulas if fs < c.span[1] and c.span[0] < fe),
                            None)
                (empathic if name else procedural).append((c, s, name))
        denominator = max(1, st.block_replies())
        out = []
        for subtype, hits in (("stock_empathy", empathic), ("stock_phrase", procedural)):
            for start, end, convs, replies, name in _groups(hits):
                share = min(1.0, replies / denominator)
                score = max(1.0 - 0.5 ** (convs - 1), min(1.0, share / FULL_SHARE))
                evidence: dict[str, Any] = {
                    "phrase": " ".join(text[start:end].lower().split()),
                    "conversations": convs, "replies": replies, "share": round(share, 4)}
                if name:
                    evidence["formula"] = name
                out.append(self._finding(subtype, score, (start, end), evidence))
        return out

    def _finding(self, subtype: str, score: float, span: tuple[int, int] | None,
                 evidence: dict[str, Any]) -> Finding:
        return Finding(self.name, self.version, f"{self.name}.{subtype}",
                       float(min(1.0, max(0.0, score))), span, evidence)


Hit = tuple[Candidate, PhraseStats, str | None]  # a stock candidate and its formula's name


def _groups(hits: list[Hit]) -> list[tuple[int, int, int, int, str | None]]:
    """Overlapping candidates merged: (span start, span end, conversations, replies, formula),
    the largest counts of the merged phrases and the formula of the first."""
    groups: list[list[Any]] = []  # [first, last, span_start, span_end, convs, replies, name]
    for c, s, name in sorted(hits, key=lambda h: (h[0].first, -h[0].last)):
        if groups and c.first < groups[-1][1]:
            g = groups[-1]
            g[1], g[3] = max(g[1], c.last), max(g[3], c.span[1])
            g[4], g[5] = max(g[4], s.conversations), max(g[5], s.replies)
        else:
            groups.append([c.first, c.last, c.span[0], c.span[1], s.conversations, s.replies,
                           name])
    return [(g[2], g[3], g[4], g[5], g[6]) for g in groups]


# Repetition needs several conversations; the generic example runner scores single turns, so
# these are singles and near misses: one reply, however formulaic or self-repetitive, is not
# yet a stock phrase, a near-duplicate or a template. The multi-conversation positives are in
# tests/detectors/test_repetition*.py.
_PER_REPLY = frozenset({"repetition.stock_phrase", "repetition.stock_empathy",
                        "repetition.near_duplicate", "repetition.template_sequence"})
_STOCK_OPENERS = (
    "I'm sorry to hear that. Your parcel left the depot this morning.",
    "I'm sorry to hear that. I have reset your password; check your inbox.",
    "I'm sorry to hear that. The invoice was corrected and re-sent.",
)
_SCRIPT = (
    "Your latte is paid. Your order will be ready shortly at the counter.",
    "Two muffins, got it. Your order will be ready shortly at the counter.",
)

EXAMPLES: tuple[Example, ...] = (
    Example("I'm sorry to hear that. A replacement card is on its way to you.",
            expect=frozenset({"repetition.stock_empathy"}),
            absent=frozenset({"repetition.stock_phrase"}), preceded_by=_STOCK_OPENERS),
    Example("One flat white. Your order will be ready shortly at the counter.",
            expect=frozenset({"repetition.stock_phrase"}),
            absent=frozenset({"repetition.stock_empathy"}), preceded_by=_SCRIPT),
    Example("I'm sorry to hear that. Let me check the status of your order right away.",
            absent=_PER_REPLY),
    Example("Your refund was issued to the original card; banks usually post it within a week.",
            absent=_PER_REPLY),
    Example("Thank you for reaching out! Is there anything else I can help you with today?",
            absent=_PER_REPLY, prompt="Thanks, that fixed it."),
    Example("Sorry about that, sorry about that, sorry about that, sorry about that, sorry about "
            "that, sorry about that.", absent=_PER_REPLY | {"repetition.window"}),
)
