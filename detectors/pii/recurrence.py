"""Names that recur across a bot's conversations are its catalogue, not its customers.

What only a monitor sees: a menu item, a title or a venue comes back in many conversations of
the same bot; a customer's name comes back in the conversations of that customer. A
**catalogue file** holds, per (tenant, bot), the keyed hashes of the normalised PERSON and
LOCATION span texts that were seen in at least ``min_conversations`` distinct conversations
and at least ``min_share`` of the bot's conversations (``pipeline/pii_catalogue`` learns it
from a file of traffic, on request). With it, the PII detector drops such a span from a turn
of that bot (not redacted, not flagged, no leak) unless it may be a person all the same:

- a word of the span is a given name of ``data/first_names.txt`` ("Sam", "Maria Lopez":
  common first names recur across conversations too);
- a person cue stands before it ("my name is", "I'm", "ask for", "Mr", "Hi", "for": "the
  order is for Sam"), or the user introduced it that way earlier in the conversation;
- it is a listed place or a country, or two or three capitals (a city a travel bot names
  every day is still a place: "San Francisco", "SF", "LAX"; initials are a person's: "AJ").

Nothing here keeps raw text: the file holds HMAC-SHA256 digests under the file's own random
key, truncated to 128 bits, with conversation counts. The decision is a pure function of the
turn, its history and the file, whose digest is part of the detector's version: a turn's
findings are the same in a batch or a stream, on any worker and after a restart, and change
only when a team installs another file.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import regex as re

from detectors.base import DetectorError, Turn

NAME_LIKE = frozenset({"PERSON", "LOCATION"})

FORMAT = "chatmon-pii-catalogue"
FORMAT_VERSION = 1
DIGEST_HEX = 32  # 128 bits of the HMAC: no collision in any catalogue's size
# Defaults of `chatmon pii catalogue learn` (docs/models/pii.md explains the choice).
MIN_CONVERSATIONS = 5
MIN_SHARE = 0.01

_PERSON_CUE = re.compile(
    r"(?i)(?:\b(?:my name is|name is|name's|names? (?:are|is)|under the name(?: of)?|under|"
    r"i am|i'm|im|this is|it's|call me|called|named|ask for|asking for|speak (?:to|with)|"
    r"talk to|for|mr|mrs|ms|miss|mx|dr|prof|sir|madam|dear|hi|hello|hey|thanks|thank you|"
    r"bye|goodbye),?\.?\s+$)")
_WORD = re.compile(r"[\p{L}\p{M}\p{N}]+")
_INITIALS = re.compile(r"\p{Lu}\.?\s*\p{Lu}\.?(?:\s*\p{Lu}\.?)?")
_POSSESSIVE = re.compile(r"['’]s$")


def normalise(span: str) -> str:
    """The text a span is counted under: NFKC, case-folded words, no possessive, the last word
    without a plural -s ("Cortados" and "the cortado's" are one entry)."""
    text = _POSSESSIVE.sub("", unicodedata.normalize("NFKC", span).strip())
    words = [w.casefold() for w in _WORD.findall(text)]
    if words and len(words[-1]) > 3 and words[-1].endswith("s") and \
            not words[-1].endswith("ss"):
        words[-1] = words[-1][:-1]
    return " ".join(words)


def span_digest(key: bytes, span: str) -> str:
    """The keyed digest a catalogue holds for ``span`` (empty string: nothing to count)."""
    norm = normalise(span)
    if not norm:
        return ""
    return hmac.new(key, norm.encode(), hashlib.sha256).hexdigest()[:DIGEST_HEX]


def may_be_person(text: str, start: int, end: int, history: Sequence[Turn] = ()) -> bool:
    """Whether the span ``text[start:end]`` may name a person or a place whatever its
    recurrence: a given name in it, a person cue before it (here, or before the same words in
    an earlier user turn), or a listed place or country."""
    # Imported here: the lists come with presidio's recognizers, loaded by ``load()`` (a
    # catalogue is read by the detector's constructor, which stays cheap).
    from detectors.pii.names import first_names
    from detectors.pii.ner import places
    from detectors.pii.recognizers import COUNTRIES

    span = text[start:end]
    names = first_names()
    words = _WORD.findall(span)
    if any(w[:1].upper() + w[1:].lower() in names for w in words):
        return True
    if _PERSON_CUE.search(text[max(0, start - 30):start]):
        return True
    plain = " ".join(span.split())
    if _INITIALS.fullmatch(plain) or plain.casefold() in places() or \
            re.fullmatch(rf"(?i:{COUNTRIES})", plain):
        return True
    return _introduced(span, history)


def _introduced(span: str, history: Sequence[Turn]) -> bool:
    """The user wrote the span's words after a person cue earlier in the conversation."""
    if not history:
        return False
    pattern = re.compile(r"(?i)(?<![\p{L}\p{M}])" + re.escape(" ".join(span.split())) +
                         r"(?![\p{L}\p{M}])")
    for turn in history:
        if turn.role != "user":
            continue
        for m in pattern.finditer(turn.text):
            if _PERSON_CUE.search(turn.text[max(0, m.start() - 30):m.start()]):
                return True
    return False


BotKey = tuple[str, str]  # (tenant, bot); "" where the turn has none


def bot_key(turn: Turn) -> BotKey:
    return (turn.tenant or "", turn.bot_id or "")


@dataclass(frozen=True)
class Catalogue:
    """A learned catalogue: the key, the thresholds it was learned with, and per bot the
    digests of its recurring names (with the number of conversations each was seen in)."""

    key: bytes
    min_conversations: int
    min_share: float
    bots: Mapping[BotKey, Mapping[str, int]]
    conversations: Mapping[BotKey, int] = field(default_factory=dict)
    digest: str = ""

    def entries(self, turn: Turn) -> Mapping[str, int]:
        return self.bots.get(bot_key(turn), {})

    def drop(self, turn: Turn, results: Sequence[Any], history: Sequence[Turn] = ()
             ) -> list[Any]:
        """``results`` (Presidio results on ``turn.text``) without the PERSON and LOCATION spans
        that are this bot's catalogue entries and may not be a person."""
        known = self.entries(turn)
        if not known:
            return list(results)
        text = turn.text
        return [r for r in results if r.entity_type not in NAME_LIKE
                or span_digest(self.key, text[r.start:r.end]) not in known
                or may_be_person(text, r.start, r.end, history)]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT, "format_version": FORMAT_VERSION, "hash": "hmac-sha256/128",
            "key": self.key.hex(), "min_conversations": self.min_conversations,
            "min_share": self.min_share,
            "bots": [{"tenant": t, "bot": b, "conversations": self.conversations.get((t, b), 0),
                      "entries": dict(sorted(entries.items()))}
                     for (t, b), entries in sorted(self.bots.items())],
        }


def dumps(catalogue: Catalogue) -> bytes:
    """The file's bytes: sorted keys, so one catalogue has one byte string (and one digest)."""
    return (json.dumps(catalogue.to_json(), sort_keys=True, indent=1) + "\n").encode()


def loads(raw: bytes, source: str = "catalogue") -> Catalogue:
    """A catalogue from its file's bytes; a clear ``DetectorError`` on anything else."""
    def bad(why: str) -> DetectorError:
        return DetectorError(f"pii: {source} is not a PII catalogue file: {why}")

    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise bad(f"not JSON ({type(exc).__name__})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise bad(f"no \"format\": \"{FORMAT}\"")
    if data.get("format_version") != FORMAT_VERSION:
        raise bad(f"format_version {data.get('format_version')!r}, this chatmon reads "
                  f"{FORMAT_VERSION}")
    try:
        key = bytes.fromhex(str(data["key"]))
        k, share = int(data["min_conversations"]), float(data["min_share"])
        bots: dict[BotKey, dict[str, int]] = {}
        convs: dict[BotKey, int] = {}
        for row in data["bots"]:
            where = (str(row["tenant"]), str(row["bot"]))
            if where in bots:
                raise bad(f"bot {where[1]!r} of tenant {where[0]!r} is listed twice")
            bots[where] = {str(d): int(n) for d, n in row["entries"].items()}
            convs[where] = int(row["conversations"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise bad(f"a missing or malformed field ({type(exc).__name__}: {exc})") from None
    if len(key) < 16:
        raise bad("the key is shorter than 16 bytes")
    if any(len(d) != DIGEST_HEX or not re.fullmatch(r"[0-9a-f]+", d)
           for entries in bots.values() for d in entries):
        raise bad(f"an entry is not a {DIGEST_HEX}-digit hex digest")
    return Catalogue(key, k, share, bots, convs, hashlib.sha256(raw).hexdigest()[:12])


class Counter:
    """Counts, per bot, the distinct conversations each span digest was seen in (in memory;
    only digests are kept) and builds the catalogue of those over the thresholds."""

    def __init__(self, key: bytes, min_conversations: int = MIN_CONVERSATIONS,
                 min_share: float = MIN_SHARE) -> None:
        if min_conversations < 2:
            raise DetectorError("pii catalogue: min_conversations must be 2 or more (a name "
                                "seen in one conversation is that conversation's)")
        if not 0.0 <= min_share <= 1.0:
            raise DetectorError("pii catalogue: min_share is a share from 0 to 1")
        self.key = key
        self.min_conversations = min_conversations
        self.min_share = min_share
        self._seen: dict[BotKey, dict[str, set[str]]] = {}
        self._convs: dict[BotKey, set[str]] = {}

    def add(self, turn: Turn, results: Iterable[Any], history: Sequence[Turn] = ()) -> None:
        """Count ``turn``'s PERSON and LOCATION spans (``results`` on its text) that may not
        be a person; the turn's conversation counts toward its bot's total either way."""
        where = bot_key(turn)
        conv = hashlib.sha256(turn.conversation_id.encode()).hexdigest()[:16]
        self._convs.setdefault(where, set()).add(conv)
        seen = self._seen.setdefault(where, {})
        for r in results:
            if r.entity_type not in NAME_LIKE or \
                    may_be_person(turn.text, r.start, r.end, history):
                continue
            digest = span_digest(self.key, turn.text[r.start:r.end])
            if digest:
                seen.setdefault(digest, set()).add(conv)

    def catalogue(self) -> Catalogue:
        bots: dict[BotKey, dict[str, int]] = {}
        convs = {where: len(c) for where, c in self._convs.items()}
        for where, seen in self._seen.items():
            floor = max(self.min_conversations, self.min_share * convs[where])
            bots[where] = {d: len(c) for d, c in seen.items() if len(c) >= floor}
        return Catalogue(self.key, self.min_conversations, self.min_share, bots, convs)
