"""The PII decisions that read the conversation's earlier turns (pii 1.8.1, 1.8.2): a name an
earlier turn treated as a thing, or offered from a listing the turns before asked for, stays
one here; a street address an earlier turn called a hotel or venue is no home. Built on the
sentence cues of :mod:`detectors.pii.catalogue` and the listings of
:mod:`detectors.pii.listing`; every turn is read in a bounded window, at most a few mentions of
a value per turn."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import Any

import regex as re

from detectors.pii.catalogue import (
    _MENTIONS,
    _STRONG_PERSON,
    _listed,
    address_said_venue,
    drop_spans,
    thing_evidence,
)
from detectors.pii.listing import in_listing_asked_for


def address_said_venue_earlier(value: str, earlier: Sequence[str]) -> bool:
    """Whether an earlier turn said the street address ``value`` is a venue ("45 Harbour Row
    is a nice 2 star hotel" before "They are at 45 Harbour Row")."""
    value = " ".join(value.split())
    return len(value) >= 3 and any(address_said_venue(t, m.start(), m.end())
                                   for _, t, m in _mentions(value, earlier))


def named_as_thing_earlier(value: str, entity: str, earlier: Sequence[str],
                           bot: Sequence[bool] | None = None) -> bool:
    """Whether an earlier turn of the conversation names ``value`` as a thing (pii 1.8.1): the
    same capitalised words there, with evidence of a thing about them ("I found 4 films. How
    about Marigold or Harbour Lights?" before "Marigold is perfect" or "Please confirm
    Marigold at 7 pm"). A listed place or a country is never one. ``bot``: whether each
    earlier turn is the bot's (all where None); only a bot's turn offers from a listing the
    turns before it asked for (``detectors.pii.listing``)."""
    value = " ".join(value.split())
    if len(value) < 3 or not value[:1].isupper() or (entity == "LOCATION" and _listed(value)):
        return False
    # pii 1.8.2: an option a turn offered from the listing the turns before it asked for
    # counts too
    return any(thing_evidence(t, m.start(), m.end(), entity) is not None
               or in_listing_asked_for(t, m.start(), m.end(), entity, earlier[:j],
                                       None if bot is None else bot[:j],
                                       True if bot is None else bot[j])
               for j, t, m in _mentions(value, earlier))


def drop_things_named_earlier(text: str, results: Sequence[Any], earlier: Sequence[str],
                              bot: Sequence[bool] | None = None,
                              bot_turn: bool = True) -> list[Any]:
    """``results`` without the PERSON and LOCATION spans that an earlier turn of the same
    conversation names as a thing, or (pii 1.8.2, a bot's turn: ``bot_turn``) that this turn
    offers from the listing the turns before it asked for, unless a strong person cue stands
    before the span here ("my name is ..."). ``bot``: whether each earlier turn is the
    bot's."""
    if not earlier:
        return list(results)
    known: dict[tuple[str, str], bool] = {}  # each value once per turn

    def earlier_says(r: Any, ask: Callable[[str, str], bool]) -> bool:
        key = (" ".join(text[r.start:r.end].split()), r.entity_type)
        if key not in known:
            known[key] = ask(*key)
        return known[key]

    def thing(r: Any) -> bool:
        if _STRONG_PERSON.search(text[max(0, r.start - 40):r.start]):
            return False  # "my name is ...": a person here, whatever an earlier turn said
        if in_listing_asked_for(text, r.start, r.end, r.entity_type, earlier, bot, bot_turn):
            return True  # pii 1.8.2: "Any films tonight?" then "How about Marigold?"
        return earlier_says(r, lambda value, entity: named_as_thing_earlier(value, entity,
                                                                            earlier, bot))

    return drop_spans(
        results,
        lambda r: earlier_says(r, lambda value, _: address_said_venue_earlier(value, earlier)),
        thing)


def _mentions(value: str, turns: Sequence[str]) -> Iterator[tuple[int, str, re.Match[str]]]:
    """(index, turn, match) of ``value`` as a whole word run in each of ``turns``: at most a
    few mentions a turn (a turn repeating a name a thousand times says no more than its first
    mentions, and would cost quadratic time)."""
    pattern = re.compile(rf"(?<![\p{{L}}\p{{M}}\d]){re.escape(value)}(?![\p{{L}}\p{{M}}\d])")
    for j, t in enumerate(turns):
        for m in islice(pattern.finditer(t), _MENTIONS):
            yield j, t, m
