"""``chatmon pii catalogue learn``: a bot's catalogue names, learned from a file of its traffic.

Reads chatmon events (JSON Lines, gzipped or not, as ``chatmon run`` reads them; or replay-format
conversations), analyses every turn with the PII detector as configured (``CHATMON_DETECTOR_
OPTIONS["pii"]``, less any catalogue), and counts per (tenant, bot) the distinct conversations
each normalised PERSON or LOCATION span was seen in, by its keyed digest
(``detectors/pii/recurrence.py``). Spans that may be a person (a given name, a person cue, a
place) are not counted. The counts live in memory; the file written holds the digests of the
names over the thresholds, their counts and the key, never a span's text.

Why a file and not live state: the store keeps redacted text only, so the names cannot be
counted from it; and counts that grew with the stream would make a turn's findings depend on
what came before it in the stream (its batch, a restart, the worker). A learned file is an
explicit input: its digest is in the detector version of every finding, and a replay with the
same file gives the same findings in ``run``, ``serve`` and the Kafka worker.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from detectors.base import Turn
from detectors.pii.recurrence import Catalogue, Counter, bot_key, dumps
from pipeline.errors import ChatmonError

BATCH = 128


class CatalogueError(ChatmonError):
    """A learn run that cannot write a useful catalogue (no turns, a bad input line)."""


@dataclass(frozen=True)
class Learned:
    catalogue: Catalogue
    turns: int
    rejected: int


def read_turns(paths: Sequence[str], max_text_chars: int) -> tuple[list[Turn], int]:
    """The valid turns of ``paths`` (events or replay conversations) and how many were not."""
    from pipeline.bench.corpus import read_source
    from pipeline.ingest.events import Accepted, RawRecord, validate
    from pipeline.ingest.readers import read_records

    turns: list[Turn] = []
    rejected = 0
    for path in paths:
        if path != "-" and _replay_format(Path(path)):
            records: Iterable[RawRecord] = (
                RawRecord(path, str(i), json.dumps(e)) for i, e in
                enumerate(read_source(Path(path))))
        else:
            records = read_records(path)
        for record in records:
            res = validate(record, max_text_chars)
            if isinstance(res, Accepted):
                turns.append(res.turn)
            else:
                rejected += 1
    return turns, rejected


def _replay_format(path: Path) -> bool:
    if path.suffix == ".gz" or not path.is_file():
        return False
    with path.open(encoding="utf-8", errors="replace") as fh:
        first = next((line for line in fh if line.strip()), "")
    try:
        row = json.loads(first)
    except ValueError:
        return False
    return isinstance(row, dict) and isinstance(row.get("turns"), list)


def learn(turns: Sequence[Turn], detector: Any, min_conversations: int, min_share: float,
          bots: Sequence[str] = (), key: bytes | None = None) -> Catalogue:
    """The catalogue of ``turns`` (of the bots named in ``bots``, all when empty), analysed by
    ``detector`` (a loaded ``PiiDetector`` without a catalogue) in batches."""
    counter = Counter(key or os.urandom(32), min_conversations, min_share)
    wanted = set(bots)
    chosen = [t for t in turns if not wanted or (t.bot_id or "") in wanted]
    by_conv: dict[str, list[Turn]] = defaultdict(list)
    for t in chosen:
        by_conv[t.conversation_id].append(t)
    ordered: list[tuple[Turn, tuple[Turn, ...]]] = []
    for conv in by_conv.values():
        conv.sort(key=lambda t: t.turn)
        ordered += [(t, tuple(conv[:i])) for i, t in enumerate(conv)]
    for start in range(0, len(ordered), BATCH):
        part = ordered[start:start + BATCH]
        found = detector.analyze([t.text for t, _ in part], detector.min_score)
        for (turn, history), results in zip(part, found, strict=True):
            counter.add(turn, results, history)
    return counter.catalogue()


def learn_files(paths: Sequence[str], out: Path, pii_options: dict[str, Any],
                min_conversations: int, min_share: float, bots: Sequence[str],
                max_text_chars: int) -> Learned:
    """Learn from ``paths`` and write the catalogue file ``out`` (replaced atomically)."""
    from detectors import registry

    turns, rejected = read_turns(paths, max_text_chars)
    if bots and not any((t.bot_id or "") in bots for t in turns):
        raise CatalogueError(f"no turns of bot(s) {', '.join(bots)} in the input")
    if not turns:
        raise CatalogueError(f"no valid turns in {', '.join(paths)} ({rejected} rejected)")
    options = {k: v for k, v in pii_options.items() if k not in ("catalogue", "process")}
    detector = registry.create("pii", options)
    detector.load()
    try:
        catalogue = learn(turns, detector, min_conversations, min_share, bots)
    finally:
        close = getattr(detector, "close", None)
        if close is not None:
            close()
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(dumps(catalogue))
    tmp.replace(out)
    return Learned(catalogue, len(turns), rejected)


def summary(catalogue: Catalogue) -> list[str]:
    """One line per bot: its conversations and entries (digests only, no text to show)."""
    return [f"{tenant or '-'}/{bot or '-'}: {catalogue.conversations.get((tenant, bot), 0)} "
            f"conversations, {len(entries)} recurring names"
            for (tenant, bot), entries in sorted(catalogue.bots.items())]


__all__ = ["CatalogueError", "Learned", "bot_key", "learn", "learn_files", "read_turns",
           "summary"]
