"""A bot's recurring names (``detectors/pii/recurrence.py``): which spans a catalogue learns,
which it drops at scoring time, per bot, and that its file holds digests, never span text.
Pure: Presidio-like results are written by hand here; the detector and the pipeline are
tested with the real analyser in tests/test_pii_catalogue_pipeline.py."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from detectors.base import DetectorError, Turn
from detectors.pii.recurrence import (
    Catalogue,
    Counter,
    dumps,
    loads,
    may_be_person,
    normalise,
    span_digest,
)

KEY = bytes(range(32))
TS = datetime(2026, 11, 2, tzinfo=UTC)


@dataclass
class R:  # the fields of a Presidio RecognizerResult the catalogue reads
    entity_type: str
    start: int
    end: int


def turn(conv: str, text: str, bot: str = "coffee", role: str = "assistant", i: int = 1,
         tenant: str | None = None) -> Turn:
    return Turn(conv, i, role, text, TS, bot_id=bot, tenant=tenant)  # type: ignore[arg-type]


def spans(text: str, *names: str, entity: str = "PERSON") -> list[R]:
    out = []
    for name in names:
        start = text.index(name)
        out.append(R(entity, start, start + len(name)))
    return out


@pytest.mark.parametrize(("a", "b"), [
    ("Frostbite", "frostbite"), ("Cortados", "cortado"), ("the Cortado's", "the cortado"),
    ("Abbey  Road", "abbey road"), ("Ｆrostbite", "frostbite"),
])
def test_one_name_one_entry(a: str, b: str) -> None:
    assert normalise(a) == normalise(b)
    assert span_digest(KEY, a) == span_digest(KEY, b)


def test_the_digest_is_keyed() -> None:
    assert span_digest(KEY, "Frostbite") != span_digest(bytes(32), "Frostbite")
    assert span_digest(KEY, "Frostbite") != span_digest(KEY, "Frostbyte")
    assert span_digest(KEY, "!!") == ""  # nothing to count


@pytest.mark.parametrize(("text", "name", "person"), [
    ("I would say Frostbite.", "Frostbite", False),
    ("Two Wrenfields, please.", "Wrenfield", False),
    ("The order is for Sam.", "Sam", True),  # a given name
    ("The order is for Wrenfield.", "Wrenfield", True),  # "for": a person cue
    ("My name is Wrenfield.", "Wrenfield", True),
    ("Please ask for Wrenfield at the desk.", "Wrenfield", True),
    ("Thanks Wrenfield, it will be ready soon.", "Wrenfield", True),
    ("I would say Maria Kowalczyk.", "Maria Kowalczyk", True),  # a full name
    ("We ship from Lisbon.", "Lisbon", True),  # a listed place
    ("It comes from Portugal.", "Portugal", True),  # a country
    ("Flights out of SFO are full.", "SFO", True),  # a place's code
    ("Your stylist is AJ.", "AJ", True),  # initials
])
def test_what_may_be_a_person_whatever_its_recurrence(text: str, name: str,
                                                      person: bool) -> None:
    start = text.index(name)
    assert may_be_person(text, start, start + len(name)) is person


def test_a_name_the_user_introduced_earlier_is_a_person() -> None:
    history = (turn("c1", "hi, this is Wrenfield, I ordered a latte", role="user", i=0),)
    text = "Wrenfield, your latte is ready."
    assert may_be_person(text, 0, 9, history)
    assert not may_be_person(text, 0, 9, (turn("c1", "a Wrenfield please", role="user"),))


def _learn(counter: Counter, bot: str, n_convs: int, text: str, *names: str,
           offset: int = 0) -> None:
    for k in range(n_convs):
        t = turn(f"{bot}-{offset + k}", text, bot=bot)
        counter.add(t, spans(text, *names))


def test_a_catalogue_learns_what_recurs_in_many_conversations_of_its_bot() -> None:
    counter = Counter(KEY, min_conversations=5, min_share=0.01)
    _learn(counter, "coffee", 30, "I would say Frostbite.", "Frostbite")
    _learn(counter, "coffee", 3, "Okay Wrenfield, your drink is ready.", "Wrenfield",
           offset=100)  # one customer's name, in 3 conversations: below K
    _learn(counter, "coffee", 20, "The order is for Sam.", "Sam", offset=200)  # given name
    _learn(counter, "coffee", 20, "The order is for Kowalczyk.", "Kowalczyk",
           offset=300)  # a person cue, in many conversations
    cat = counter.catalogue()
    entries = cat.bots[("", "coffee")]
    assert set(entries) == {span_digest(KEY, "Frostbite")}
    assert entries[span_digest(KEY, "Frostbite")] == 30
    assert cat.conversations[("", "coffee")] == 73


def test_a_conversation_counts_once_and_the_share_of_a_big_bot_counts() -> None:
    counter = Counter(KEY, min_conversations=5, min_share=0.05)
    for turn_index in range(10):  # one conversation naming it ten times is one conversation
        counter.add(turn("one", "I would say Frostbite.", i=turn_index),
                    spans("I would say Frostbite.", "Frostbite"))
    _learn(counter, "coffee", 6, "Have you tried Zephyrine?", "Zephyrine")  # 6 of 207: < 5%
    _learn(counter, "coffee", 200, "ok", offset=50)
    cat = counter.catalogue()
    assert cat.bots[("", "coffee")] == {}


def test_a_catalogue_drops_only_its_own_bots_entries_and_never_a_person() -> None:
    counter = Counter(KEY)
    _learn(counter, "coffee", 10, "I would say Frostbite.", "Frostbite")
    cat = counter.catalogue()
    text = "I would say Frostbite."
    found = spans(text, "Frostbite")
    assert cat.drop(turn("x", text, bot="coffee"), found) == []
    assert cat.drop(turn("x", text, bot="music"), found) == found  # another bot
    assert cat.drop(turn("x", text, bot="coffee", tenant="globex"), found) == found
    cue = "The order is for Frostbite."
    assert len(cat.drop(turn("x", cue), spans(cue, "Frostbite"))) == 1
    mail = [R("EMAIL_ADDRESS", 0, 9)]  # only names and places are ever dropped
    assert cat.drop(turn("x", text), mail) == mail


def test_a_given_name_in_the_file_is_still_redacted() -> None:
    """Even a file that holds a given name's digest (learned by another version, or written
    by hand) does not unredact it: the given-name check runs at scoring time too."""
    cat = Catalogue(KEY, 5, 0.01, {("", "coffee"): {span_digest(KEY, "Sam"): 40}})
    text = "Here you go, Sam."
    assert len(cat.drop(turn("x", text), spans(text, "Sam"))) == 1


def test_the_file_holds_digests_and_counts_never_a_name() -> None:
    counter = Counter(KEY)
    _learn(counter, "coffee", 10, "I would say Frostbite.", "Frostbite")
    _learn(counter, "coffee", 10, "Shall I add Zephyrine Dust?", "Zephyrine Dust", offset=50)
    raw = dumps(counter.catalogue())
    for word in ("frostbite", "zephyrine", "dust"):
        assert word.encode() not in raw.lower()
    again = loads(raw)
    assert again.bots == counter.catalogue().bots and again.key == KEY
    assert again.digest and again.digest == loads(raw).digest  # one file, one version


def test_counter_thresholds_are_checked() -> None:
    with pytest.raises(DetectorError, match="min_conversations"):
        Counter(KEY, min_conversations=1)
    with pytest.raises(DetectorError, match="min_share"):
        Counter(KEY, min_share=1.5)


_GOOD = {"format": "chatmon-pii-catalogue", "format_version": 1, "key": KEY.hex(),
         "min_conversations": 5, "min_share": 0.01,
         "bots": [{"tenant": "", "bot": "coffee", "conversations": 10,
                   "entries": {"0" * 32: 7}}]}


@pytest.mark.parametrize(("change", "why"), [
    ({"format": "something"}, "format"),
    ({"format_version": 2}, "format_version 2"),
    ({"key": "zz"}, "malformed"),
    ({"key": "00"}, "shorter than 16 bytes"),
    ({"bots": [{"tenant": "", "bot": "coffee", "conversations": 1, "entries": {"frostbite": 3}}]},
     "hex digest"),
    ({"bots": [_GOOD["bots"][0], _GOOD["bots"][0]]}, "listed twice"),
    ({"bots": [{"bot": "coffee"}]}, "missing or malformed"),
])
def test_a_bad_file_is_refused_with_its_reason(change: dict, why: str) -> None:
    assert loads(json.dumps(_GOOD).encode()).bots[("", "coffee")] == {"0" * 32: 7}
    with pytest.raises(DetectorError, match=why):
        loads(json.dumps({**_GOOD, **change}).encode())
    with pytest.raises(DetectorError, match="not JSON"):
        loads(b"\xff\xfe")
