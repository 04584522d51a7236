"""The turns ``chatmon bench`` measures on.

Default: the support-transcript replay sample (``../shared/evaldata/cs-transcripts/
replay_turns.jsonl``: 436 conversations, about 7,900 user and assistant turns from SGD, ABCD and
Taskmaster) when it sits beside the repository: real support phrasing with the repetition real
traffic has. Otherwise the bundled example transcripts, repeated under fresh conversation ids.
A ``--file`` may hold chatmon events (JSON Lines) or conversations in the replay format (one
object per line with a ``turns`` list of ``{role, text}``); system actions are skipped.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "transcripts.jsonl"
REPLAY = ROOT.parent / "shared" / "evaldata" / "cs-transcripts" / "replay_turns.jsonl"
_EPOCH = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)  # replayed turns get fixed, increasing times


def default_source() -> Path:
    return REPLAY if REPLAY.is_file() else EXAMPLES


def _replayed(conv: dict[str, Any], index: int, seen: set[str]) -> list[dict[str, Any]]:
    """One replay-format conversation as chatmon events (user and assistant turns only).
    A conversation whose id an earlier one of the source already has (SGD reuses ids across
    its splits: 118 of the replay sample's 436) gets its line number appended, so its turns are
    not dead-lettered as conflicting duplicates of the first one."""
    cid = f"{conv.get('source', 'replay')}-{conv.get('conversation_id', index)}"
    if cid in seen:
        cid = f"{cid}~{index}"
    seen.add(cid)
    start = _EPOCH + timedelta(minutes=index)
    out: list[dict[str, Any]] = []
    for t in conv["turns"]:
        if t.get("role") not in ("user", "assistant") or not str(t.get("text", "")).strip():
            continue
        out.append({"conversation_id": cid, "turn": len(out), "role": t["role"],
                    "text": t["text"], "ts": (start + timedelta(seconds=5 * len(out)))
                    .isoformat().replace("+00:00", "Z"),
                    "bot_id": f"replay-{conv.get('source', 'bot')}"})
    return out


def read_source(path: Path) -> list[dict[str, Any]]:
    """Every event of ``path``, in file order (events, or replay-format conversations)."""
    events: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        if not line.strip():
            continue
        row = json.loads(line)
        events += _replayed(row, i, seen) if isinstance(row.get("turns"), list) else [row]
    if not events:
        raise ValueError(f"{path} holds no turns")
    return events


def corpus_lines(n_turns: int, prefix: str, source: Path | None = None,
                 from_end: bool = False) -> list[str]:
    """``n_turns`` JSON lines of whole conversations of ``source``, under ids prefixed with
    ``prefix`` (and a copy number once the source runs out, so nothing is a duplicate).
    ``from_end`` takes conversations from the end of the source: a warm-up that shares no text
    with a measured corpus taken from the start, when the source is large enough."""
    base = read_source(source or default_source())
    if from_end:
        order: dict[str, list[dict[str, Any]]] = {}
        for row in base:
            order.setdefault(str(row.get("conversation_id", "")), []).append(row)
        base = [row for conv in reversed(list(order.values())) for row in conv]
    out: list[str] = []
    copy = 0
    while len(out) < n_turns:
        for row in base:
            cid = f"{prefix}{copy}-{row.get('conversation_id', '')}"
            out.append(json.dumps({**row, "conversation_id": cid}, ensure_ascii=False))
        copy += 1
    return out[:n_turns]
