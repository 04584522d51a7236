"""``chatmon bench --hostile``: what a hostile text costs next to an ordinary one of its length.

A text within the input limits is cheap or expensive for the detectors by its shape, not only by
its length: a pattern that backtracks can turn one 5,000-character token into seconds of CPU.
This module writes such shapes (``HOSTILE``) and an ordinary support-chat text of any length
(``ordinary``), and times them through the full pipeline (every enabled detector, redaction,
the store), caches of seen text off, in this process. ``tests/test_hostile_cost.py`` uses the
same texts with a wide margin; docs/hostile_input.md has the measured numbers.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any


def _fill(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


# Shapes that made a pattern, Presidio or spaCy super-linear, and their neighbours.
HOSTILE: dict[str, Callable[[int], str]] = {
    "one_token": lambda n: "x" * n,
    "one_capitalised_token": lambda n: "X" + "x" * (n - 1),
    "upper_token": lambda n: "X" * n,
    "digits": lambda n: "7" * n,
    "digit_groups": lambda n: _fill("12 ", n),
    "digit_hyphens": lambda n: _fill("1-", n),
    "hyphens": lambda n: "-" * n,
    "word_hyphens": lambda n: _fill("so-", n),
    "capitalised_hyphens": lambda n: _fill("So-", n),
    "capitalised_dots": lambda n: _fill("A.", n),
    "dots": lambda n: "." * n,
    "letter_dots_at": lambda n: _fill("a.", n - 1) + "@",
    "mr_mr": lambda n: _fill("Mr. ", n),
    "capitalised_words": lambda n: _fill("Main ", n),
    "number_words": lambda n: _fill("12 Main ", n),
    "commas": lambda n: _fill(", ", n),
    "exclamations": lambda n: "!" * n,
    "newlines": lambda n: _fill("A\n", n),
    "spaces": lambda n: "a" + " " * (n - 2) + "a",
    "combining": lambda n: "a" + "\u0301" * (n - 1),
    "emoji": lambda n: "\U0001f600" * n,
    "cjk": lambda n: "\u6f22" * n,
    "url_path": lambda n: "http://a.com/" + _fill("a/", n - 13),
    "at_signs": lambda n: _fill("a@", n),
    "apostrophes": lambda n: _fill("a'", n),
}

_ORDINARY = (
    "Thanks for reaching out about your order. I'm sorry the parcel arrived late and the box was "
    "damaged. I checked the tracking history and it shows the courier held it at the depot for "
    "two days because of the storm. I can send a replacement today at no cost, or refund the "
    "full amount to your card within five working days. Which would you prefer? If anything "
    "inside is broken, please keep it until the replacement arrives; you don't need to send it "
    "back. I understand how frustrating it is to wait for something you needed this week, and I "
    "want to make this right. Is there anything else I can help you with while I have your "
    "account open? You can also change the delivery address in your profile under settings. "
)


def ordinary(n: int) -> str:
    """An ordinary support reply of exactly ``n`` characters (whole words, prose repeated)."""
    text = _fill(_ORDINARY, n)
    return text[: text.rfind(" ", 0, n - 1) + 1].ljust(n, ".") if n > 20 else text


def unique_text(make: Callable[[int], str], chars: int, i: int) -> str:
    """``make(chars)`` with a letter of its own in the middle (a CJK character, so a long token
    stays one token) and its last 5 characters a number of its own (" 0007"): each ``i`` a text
    and tokens of its own, so no cache of seen text (spaCy caches tokens) hides a cost."""
    tag = f" {i:04d}"
    body = make(chars - len(tag))
    mid = len(body) // 2
    return body[:mid] + chr(0x4E00 + i % 20_000) + body[mid + 1:] + tag


def _record(kind: str, i: int, role: str, text: str) -> Any:
    from pipeline.ingest.events import RawRecord

    event = {"conversation_id": f"cost-{kind}-{role}-{i}-{uuid.uuid4().hex[:8]}", "turn": 0,
             "role": role, "text": text, "ts": "2026-11-23T18:00:00+00:00", "lang": "en"}
    return RawRecord("hostile", f"{kind} {i}", json.dumps(event).encode())


def measure(kinds: list[str], chars: int, turns: int, roles: tuple[str, ...],
            detectors: tuple[str, ...] = (), base: Any = None) -> dict[str, Any]:
    """CPU seconds for ``turns`` turns of each kind (and of ordinary text) of ``chars``
    characters, one batch per kind and role, through the full pipeline in this process, on a
    temporary SQLite store (``base``: the Settings to start from)."""
    from pipeline.embedded.runner import build_processor
    from pipeline.settings import Settings

    with tempfile.TemporaryDirectory(prefix="chatmon-hostile-") as tmp:
        opts: dict[str, Any] = {"database_url": f"sqlite:///{tmp}/hostile.db"}
        if detectors:
            opts["detectors"] = detectors
        settings = (base or Settings()).model_copy(update=opts)
        proc = build_processor(settings, str(uuid.uuid4()), "bench", "hostile")
        for part in (proc.suite.features.encoder, *proc.suite.detectors):
            if part is not None and hasattr(part, "configure_cache"):
                part.configure_cache(0)
        proc.process([_record("warmup", i, r, unique_text(ordinary, chars, 90 + i))
                      for i in range(2) for r in roles])
        rows: dict[str, Any] = {}
        for kind in ["ordinary", *kinds]:
            make = ordinary if kind == "ordinary" else HOSTILE[kind]
            for role in roles:
                # Each turn its own text (a last word of its own): spaCy caches the tokens it
                # has seen, so 20 copies of one text would cost about one.
                recs = [_record(kind, i, role, unique_text(make, chars, i)) for i in range(turns)]
                t0, w0 = time.process_time(), time.perf_counter()
                report = proc.process(recs)
                cpu, wall = time.process_time() - t0, time.perf_counter() - w0
                rows[f"{kind}/{role}"] = {
                    "cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
                    "stored": report.turns_stored, "dead_letters": dict(report.dead_letters),
                    "detector_s": {k: round(v, 3) for k, v in
                                   sorted(report.detector_seconds.items())},
                }
    for key, row in rows.items():
        base = rows[f"ordinary/{key.split('/')[1]}"]["cpu_s"]
        row["ratio"] = round(row["cpu_s"] / base, 2) if base > 0 else None
    worst = max((k for k in rows if not k.startswith("ordinary/")),
                key=lambda k: rows[k]["ratio"] or 0, default=None)
    return {"chars": chars, "turns": turns, "detectors": list(settings.enabled_detectors()),
            "worst": worst, "worst_ratio": rows[worst]["ratio"] if worst else None,
            "median_ratio": statistics.median(
                r["ratio"] for k, r in rows.items() if not k.startswith("ordinary/")),
            "kinds": rows}


def markdown(result: dict[str, Any]) -> str:
    lines = [f"{result['turns']} turns of {result['chars']:,} characters per row, full pipeline "
             f"({', '.join(result['detectors'])}), CPU seconds", "",
             "| text / role | CPU s | x ordinary | slowest detector |", "|---|---|---|---|"]
    for key, row in result["kinds"].items():
        slow = max(row["detector_s"].items(), key=lambda kv: kv[1], default=("-", 0))
        lines.append(f"| {key} | {row['cpu_s']:.2f} | {row['ratio']} | {slow[0]} {slow[1]:.2f} |")
    return "\n".join(lines)
