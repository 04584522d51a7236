"""Render the hand-written example conversations into JSON Lines and the planted-case manifests.

The source is ``conversations.txt`` (written by the chatmon authors). Format, one conversation per
block::

    ## <bot> <tenant> <model>        bot: a | b | bill; model: 09 | 11
    U: what the user says
    A: what the assistant says
    ! <label> | <note>               a planted case on the turn just above
    ~ <label> | <note>               a near miss: this turn must NOT get <label>

Conversation ids follow file order (``conv-0001`` ...). Timestamps are deterministic: each
conversation starts at an evenly spaced point of the 14 days ending 2026-11-20 plus a hashed
offset, and turns follow 15-240 seconds apart. Run ``python examples/build_transcripts.py`` after
editing the source; a test re-renders and compares.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "conversations.txt"
BOTS = {"a": "helpdesk-a", "b": "helpdesk-b", "bill": "billing-bot"}
MODELS = {"09": "support-llm-2026-09", "11": "support-llm-2026-11"}
START = datetime(2026, 11, 7, tzinfo=UTC)
SPAN = timedelta(days=14)
ROLES = {"U": "user", "A": "assistant"}


@dataclass
class Conversation:
    bot_id: str
    tenant: str
    model: str
    turns: list[tuple[str, str]] = field(default_factory=list)
    planted: list[tuple[int, str, str]] = field(default_factory=list)
    near_misses: list[tuple[int, str, str]] = field(default_factory=list)


def _note(line: str) -> tuple[str, str]:
    label, _, note = line[2:].partition("|")
    return label.strip(), note.strip()


def _header(line: str) -> Conversation:
    bot, tenant, model = line[3:].split()
    return Conversation(BOTS[bot], tenant, MODELS[model])


def parse(text: str) -> list[Conversation]:
    """Parse the source format into conversations; raises ValueError on a malformed line."""
    convs: list[Conversation] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if not line or line.startswith("#!"):
            continue
        if line.startswith("## "):
            convs.append(_header(line))
        elif line[:3] in ("U: ", "A: "):
            convs[-1].turns.append((ROLES[line[0]], line[3:].strip()))
        elif line[:2] in ("! ", "~ "):
            entry = (len(convs[-1].turns) - 1, *_note(line))
            (convs[-1].planted if line[0] == "!" else convs[-1].near_misses).append(entry)
        else:
            raise ValueError(f"{SOURCE.name}:{lineno}: cannot parse {line[:40]!r}")
    return convs


def _jitter(key: str, low: int, high: int) -> int:
    digest = hashlib.sha256(key.encode()).digest()
    return low + int.from_bytes(digest[:4], "big") % (high - low + 1)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def events(convs: list[Conversation]) -> list[dict[str, object]]:
    """One event per turn, in conversation order."""
    out: list[dict[str, object]] = []
    step = SPAN / len(convs)
    for i, conv in enumerate(convs):
        cid = f"conv-{i + 1:04d}"
        moment = START + step * i + timedelta(seconds=_jitter(cid, 0, 7200))
        for t, (role, text) in enumerate(conv.turns):
            moment += timedelta(seconds=_jitter(f"{cid}/{t}", 15, 240))
            out.append({"conversation_id": cid, "turn": t, "role": role, "text": text,
                        "ts": _stamp(moment), "bot_id": conv.bot_id, "model": conv.model,
                        "tenant": conv.tenant, "lang": "en"})
    return out


def manifest(convs: list[Conversation], near: bool) -> list[dict[str, object]]:
    """Planted cases (or near misses) as manifest rows."""
    rows: list[dict[str, object]] = []
    for i, conv in enumerate(convs):
        for turn, label, note in conv.near_misses if near else conv.planted:
            key = "not_label" if near else "expect_label"
            rows.append({"conversation_id": f"conv-{i + 1:04d}", "turn": turn,
                         "signal": label.split(".")[0], key: label, "note": note})
    return rows


def render() -> dict[str, str]:
    """File name -> content of every generated file."""
    convs = parse(SOURCE.read_text(encoding="utf-8"))
    lines = [json.dumps(e, ensure_ascii=False) for e in events(convs)]
    return {
        "transcripts.jsonl": "\n".join(lines) + "\n",
        "planted.json": json.dumps(manifest(convs, near=False), indent=1) + "\n",
        "near_misses.json": json.dumps(manifest(convs, near=True), indent=1) + "\n",
    }


def main() -> None:
    for name, content in render().items():
        (HERE / name).write_text(content, encoding="utf-8")


if __name__ == "__main__":
    main()
