"""Write ``bad_events.jsonl`` (bytes, including one invalid UTF-8 line) and its expected reasons.

Every bad line sits between two good ones, so a test can check that the events after a bad line
are still stored. Several bad lines carry a fictional PII value so tests can check that the
dead-letter copy is redacted. Besides the bad lines the file has two blank lines (ignored) and one
exact duplicate of an earlier good line (skipped silently, never dead-lettered); neither appears in
``bad_events.expected.json``, which maps 1-based line numbers to reason codes.
Run ``python examples/make_bad_events.py`` after editing; a test re-renders and compares.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
TEXT_LIMIT = 20_000

GOOD_TEXTS = [
    "Hi, my order hasn't arrived yet.",
    "Sorry about the wait. It's out for delivery today and should reach you before 6pm.",
    "Great, thanks. Can I also change the delivery note?",
    "Yes, I've added 'leave with the concierge' to the order.",
    "I'd like a copy of my last invoice.",
    "I've emailed it to the address on your account just now.",
    "Got it, thank you.",
    "You're welcome, anything else I can help with?",
    "How do I change my password?",
    "Use 'Forgot password' on the sign-in page and follow the link we email you.",
    "Done, that worked.",
    "Great, you're all set.",
    "Can I pause my subscription for a month?",
    "Yes, I've paused it until 20 December; nothing will be charged in that time.",
    "Thanks a lot.",
    "Happy to help.",
    "Is the winter sale still on?",
    "It runs until 5 January, and it applies to everything in the outlet section.",
    "Thanks, I'll have a look.",
    "Enjoy the sale, and let me know if you need a size checked.",
    "Will do, bye.",
]


def event(
    cid: str, turn: object, role: object, text: object, ts: object = None
) -> dict[str, object]:
    """An event dict in the data model; ``ts`` defaults to a valid stamp derived from the turn."""
    minute = turn if isinstance(turn, int) and 0 <= turn < 60 else 0
    stamp = ts if ts is not None else f"2026-11-19T10:{minute:02d}:00Z"
    return {"conversation_id": cid, "turn": turn, "role": role, "text": text, "ts": stamp,
            "bot_id": "helpdesk-a", "model": "support-llm-2026-11", "tenant": "acme", "lang": "en"}


def dumps(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def good_lines() -> list[bytes]:
    """Valid events: three short conversations, turns contiguous and alternating."""
    out = []
    for i, text in enumerate(GOOD_TEXTS):
        cid, turn = f"bad-demo-{i // 6 + 1:02d}", i % 6
        out.append(dumps(event(cid, turn, "user" if turn % 2 == 0 else "assistant", text)))
    return out


def bad_lines(first_good: bytes) -> list[tuple[bytes, str | None]]:
    """(line, reason); reason None marks lines that are not dead-lettered (exact duplicate)."""
    long_text = "Please call me back at eve.baxter@example.com. " + "x" * TEXT_LIMIT
    bad_utf8 = dumps(event("bad-x-13", 0, "user", "caf@ card 4111 1111 1111 1111"))
    return [
        (b'{"conversation_id": "bad-x-01", "turn": 0, "role": "user", '
         b'"text": "write to eve.baxter@example.com", "ts": "2026-11-19T10:00:00Z"',
         "invalid_json"),
        (dumps([event("bad-x-02", 0, "user", "an array, not an object")]), "not_an_object"),
        (dumps("call me on (212) 555-0147"), "not_an_object"),
        (dumps({k: v for k, v in event("bad-x-04", 0, "user", "card 4111 1111 1111 1111").items()
                if k != "role"}), "missing_field"),
        (dumps({k: v for k, v in event("bad-x-05", 0, "user", "hello").items() if k != "ts"}),
         "missing_field"),
        (dumps(event("bad-x-06", "three", "user", "my SSN is 923-12-4567")), "wrong_type"),
        (dumps(event("bad-x-07", 0, "user", 42)), "wrong_type"),
        (dumps(event("bad-x-08", 0, "user", None)), "empty_text"),
        (dumps(event("bad-x-09", 0, "user", "")), "empty_text"),
        (dumps(event("bad-x-10", 0, "user", long_text)), "text_too_long"),
        (dumps(event("bad-x-11", 0, "system", "IBAN GB82 WEST 1234 5698 7654 32")), "unknown_role"),
        (dumps(event("bad-x-12", -1, "user", "negative turn")), "invalid_turn_index"),
        (dumps(event("bad-x-14", 1.5, "assistant", "fractional turn")), "invalid_turn_index"),
        (dumps(event("bad-x-15", 0, "user", "login from 203.0.113.9", ts="yesterday at noon")),
         "invalid_timestamp"),
        (dumps(event("bad-x-16", 0, "user", "hi", ts="2026-13-45T25:00:00Z")), "invalid_timestamp"),
        (bad_utf8.replace(b"caf@", b"caf\xe9 \xff\xfe"), "invalid_utf8"),
        (dumps(event("bad-demo-01", 1, "assistant", "A different reply, call (212) 555-0199.")),
         "conflicting_duplicate"),
        (first_good, None),
    ]


def build() -> tuple[bytes, dict[str, str]]:
    """The file's bytes and the expected reason per 1-based line number."""
    goods = good_lines()
    rest = iter(goods[1:])
    lines: list[bytes] = [goods[0]]
    expected: dict[str, str] = {}
    for k, (line, reason) in enumerate(bad_lines(goods[0])):
        lines.append(line)
        if reason is not None:
            expected[str(len(lines))] = reason
        lines.append(next(rest))
        if k in (3, 11):  # a blank and a whitespace-only line between two good ones: ignored
            lines += [b"" if k == 3 else b"   ", next(rest)]
    return b"\n".join(lines) + b"\n", expected


def main() -> None:
    data, expected = build()
    (HERE / "bad_events.jsonl").write_bytes(data)
    (HERE / "bad_events.expected.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main()
