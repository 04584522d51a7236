"""Adapters between the processing function's stores and faust Tables.

``Processor.process`` runs in a worker thread (inference off the event loop), but faust Tables
may only be modified on the loop, inside stream iteration. So the adapters read through to the
Table and *buffer* writes; the agent applies them on the loop with ``flush()`` after the batch
was stored, or drops them with ``discard()`` when the batch is retried (sink outage), so a
retried batch never appends a turn to a conversation's context twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any

from detectors.base import Turn
from pipeline.scoring.context import turn_from_dict, turn_to_dict, upsert
from pipeline.store.sink import Sink


class TableContextStore:
    """``ContextStore`` over a Table: conversation_id -> turn dicts sorted by turn index (the
    last ``max_turns`` indexes), the same history ``MemoryContextStore`` keeps.

    Keys are the UTF-8 bytes of the conversation id, serialised raw, so the changelog partition
    the producer's partitioner picks (``use_partitioner``) is the partition of the turns topic
    the conversation lives in (same key bytes, same hash, same partition count)."""

    def __init__(self, table: MutableMapping[bytes, Any], max_turns: int) -> None:
        self.table = table
        self.max_turns = max_turns
        self._pending: dict[str, list[dict[str, Any]]] = {}
        # Whether a key's partition is this worker's (set by the app; see OwnedKeys).
        self.owns: Callable[[bytes], bool] = lambda _key: True

    def history(self, conversation_id: str) -> tuple[Turn, ...]:
        rows = self._pending.get(conversation_id)
        if rows is None:
            rows = self.table.get(conversation_id.encode()) or []
        return tuple(turn_from_dict(r) for r in rows)

    def append(self, turn: Turn) -> None:
        """Upsert by turn index (``context.upsert``): a turn redelivered after a restart, or
        replayed, is in the history once, in its place."""
        cid = turn.conversation_id
        rows = self._pending.get(cid)
        if rows is None:
            rows = list(self.table.get(cid.encode()) or [])
        self._pending[cid] = list(upsert(rows, turn_to_dict(turn), self.max_turns,
                                         key=lambda r: int(r["turn"])))

    def flush(self) -> int:
        """Write the buffered histories to the Table (call on the event loop)."""
        n = len(self._pending)
        for cid, rows in self._pending.items():
            self.table[cid.encode()] = rows
        self._pending.clear()
        return n

    def discard(self) -> None:
        self._pending.clear()

    def drop(self, gone: Callable[[str, Turn], bool]) -> int:
        """Delete (a changelog tombstone) the conversations of this worker's partitions for
        which ``gone(id, latest turn)`` holds; call on the event loop between batches."""
        n = 0
        for key in [k for k in list(self.table.keys()) if self.owns(k)]:
            rows = self.table.get(key)
            cid = key.decode()
            if rows and gone(cid, turn_from_dict(rows[-1])):
                del self.table[key]
                self._pending.pop(cid, None)
                n += 1
        return n


class TableStateStore:
    """``StateStore`` over a plain Table whose values are the detector's bounded JSON state.

    A plain Table rather than a faust windowed Table: the repetition detector already keeps its
    own time window (``window_days``) and a bounded reply count inside the value, and needs the
    whole window at once (phrase counts, near-duplicate sketches); a windowed Table would split
    that into per-window values and duplicate the bounding the detector does itself.
    """

    def __init__(self, table: MutableMapping[bytes, Any]) -> None:
        self.table = table
        self._pending: dict[str, Any] = {}
        self.owns: Callable[[bytes], bool] = lambda _key: True

    def get(self, key: str) -> Any | None:
        if key in self._pending:
            return self._pending[key]
        return self.table.get(key.encode())

    def set(self, key: str, value: Any) -> None:
        self._pending[key] = value

    def flush(self) -> int:
        n = len(self._pending)
        for key, value in self._pending.items():
            self.table[key.encode()] = value
        self._pending.clear()
        return n

    def discard(self) -> None:
        self._pending.clear()

    def keys(self) -> list[str]:
        """The keys of this worker's partitions (the local store may still hold others')."""
        return [k.decode() for k in list(self.table.keys()) if self.owns(k)]

    def delete(self, key: str) -> None:
        """Delete a key: a tombstone on the changelog."""
        self._pending.pop(key, None)
        if key.encode() in self.table:
            del self.table[key.encode()]


class FindingsSink:
    """Stage 2's sink: the turns were stored by stage 1, so it writes only findings and dead
    letters, and treats every turn as new (the repetition detector skips replies already in its
    window, and finding ids are deterministic, so a redelivered turn adds nothing). The sink
    adds the new findings' rollups, counting a turn in a label's 'turns' rows only if stage 1
    stored no finding of that label for it (``pipeline/store/rollups.py``)."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.engine = sink.engine
        self.dialect = sink.dialect

    def existing_hashes(self, ids: Sequence[str]) -> dict[str, str]:
        return {}

    def write(self, turns: Sequence[Mapping[str, Any]] = (),
              findings: Sequence[Mapping[str, Any]] = (),
              dead_letters: Sequence[Mapping[str, Any]] = ()) -> None:
        self.sink.write((), findings, dead_letters)
