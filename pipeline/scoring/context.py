"""Conversation context: the bounded history of each conversation, kept in process by the
embedded runner and in a faust Table by workers (both through ``ContextStore``)."""

from __future__ import annotations

from collections import OrderedDict, deque
from datetime import datetime
from types import MappingProxyType
from typing import Any, Protocol

from detectors.base import Turn


class ContextStore(Protocol):
    def history(self, conversation_id: str) -> tuple[Turn, ...]: ...

    def append(self, turn: Turn) -> None: ...


class MemoryContextStore:
    """Last ``max_turns`` turns of the ``max_conversations`` most recently active conversations."""

    def __init__(self, max_turns: int = 20, max_conversations: int = 50_000) -> None:
        self.max_turns = max_turns
        self.max_conversations = max_conversations
        self._data: OrderedDict[str, deque[Turn]] = OrderedDict()

    def history(self, conversation_id: str) -> tuple[Turn, ...]:
        return tuple(self._data.get(conversation_id, ()))

    def append(self, turn: Turn) -> None:
        turns = self._data.get(turn.conversation_id)
        if turns is None:
            turns = self._data[turn.conversation_id] = deque(maxlen=self.max_turns)
            if len(self._data) > self.max_conversations:
                self._data.popitem(last=False)
        else:
            self._data.move_to_end(turn.conversation_id)
            if any(t.turn == turn.turn for t in turns):
                return  # a replayed or retried turn is in the history once
        turns.append(turn)


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
