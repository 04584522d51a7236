"""Conversation context: the bounded history of each conversation, kept in process by the
embedded runner and in a faust Table by workers (both through ``ContextStore``).

A history is a function of the turns seen, not of the order or the number of times they
arrived: turns are kept by turn index (a replayed or redelivered turn replaces itself), sorted
by index, the last ``max_turns`` indexes. ``Processor.process`` gives a turn the stored turns
with a lower index. So at-least-once redelivery after a SIGKILL, a retried batch or a rebalance
gives a worker the history the embedded runner has."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Any, Protocol, TypeVar

from detectors.base import Turn

T = TypeVar("T")


class ContextStore(Protocol):
    def history(self, conversation_id: str) -> tuple[Turn, ...]: ...

    def append(self, turn: Turn) -> None: ...


class MemoryContextStore:
    """Last ``max_turns`` turns of the ``max_conversations`` most recently active conversations."""

    def __init__(self, max_turns: int = 20, max_conversations: int = 50_000) -> None:
        self.max_turns = max_turns
        self.max_conversations = max_conversations
        self._data: OrderedDict[str, tuple[Turn, ...]] = OrderedDict()

    def history(self, conversation_id: str) -> tuple[Turn, ...]:
        return tuple(self._data.get(conversation_id, ()))

    def append(self, turn: Turn) -> None:
        turns = self._data.get(turn.conversation_id)
        if turns is None:
            turns = self._data[turn.conversation_id] = ()
            if len(self._data) > self.max_conversations:
                self._data.popitem(last=False)
        else:
            self._data.move_to_end(turn.conversation_id)
        self._data[turn.conversation_id] = upsert(turns, turn, self.max_turns,
                                                  key=lambda t: t.turn)

    def drop(self, gone: Callable[[str, Turn], bool]) -> int:
        """Remove the conversations for which ``gone(id, latest turn)`` holds (deletion,
        retention: pipeline/lifecycle/state.py); returns how many."""
        ids = [cid for cid, turns in self._data.items() if turns and gone(cid, turns[-1])]
        for cid in ids:
            del self._data[cid]
        return len(ids)


def upsert(rows: Sequence[T], row: T, max_rows: int, key: Callable[[T], int]) -> tuple[T, ...]:
    """``rows`` (sorted by turn index) with ``row`` in its place: replacing the row of the same
    index, so a replayed turn is there once; the last ``max_rows`` indexes are kept."""
    index = key(row)
    kept = [r for r in rows if key(r) != index]
    kept.append(row)
    kept.sort(key=key)
    return tuple(kept[-max_rows:])


def turn_to_dict(turn: Turn) -> dict[str, Any]:
    """A JSON-serialisable form of a turn (for faust Tables and topics)."""
    return {
        "conversation_id": turn.conversation_id,
        "turn": turn.turn,
        "role": turn.role,
        "text": turn.text,
        "ts": turn.ts.isoformat(),
        "bot_id": turn.bot_id,
        "model": turn.model,
        "tenant": turn.tenant,
        "lang": turn.lang,
        "metadata": dict(turn.metadata),
    }


def turn_from_dict(data: dict[str, Any]) -> Turn:
    return Turn(
        conversation_id=data["conversation_id"],
        turn=data["turn"],
        role=data["role"],
        text=data["text"],
        ts=datetime.fromisoformat(data["ts"]),
        bot_id=data.get("bot_id"),
        model=data.get("model"),
        tenant=data.get("tenant"),
        lang=data.get("lang"),
        metadata=MappingProxyType(dict(data.get("metadata") or {})),
    )
