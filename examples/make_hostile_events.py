"""Write ``hostile_events.jsonl`` and ``hostile_events.expected.json``: input an attacker or a
broken producer sends (issue 21), mixed with valid events.

Every hostile line sits between two good ones. Besides the dead-lettered lines, the file holds
"near misses": valid events right at a limit (turn 2^31-1, a 200-character bot_id, a 16-character
lang, a date-stamped model name), which must be stored. Several hostile lines carry one of the
fictional values in ``PLANTED`` (see README.md: all made up) where no copy may keep it: in a role,
a bot_id, a tenant, a model, or JSON-escaped in a line that is not JSON. The expected file maps
1-based line numbers to reason codes, counts the events to store, and lists the planted values.
Run ``python examples/make_hostile_events.py`` after editing; a test re-renders and compares.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

PLANTED = ["Jonathan Whitfield", "742 Evergreen Terrace", "eve.baxter@example.com",
           "4111 1111 1111 1111", "4111111111111111", "(212) 555-0147", "2125550147"]

GOOD_TEXTS = [
    "Hello, I was charged twice for one order.",
    "I'm sorry about that. I can see both charges; I've refunded the second one.",
    "How long until the money is back?",
    "Usually three to five working days, depending on your bank.",
    "OK, thanks for sorting it.",
    "You're welcome. Anything else today?",
    "My parcel shows delivered but it isn't here.",
    "That's worrying, let me check the courier's photo and location for you.",
    "Thanks, I'll wait.",
    "The photo shows a blue door; is that yours? If not, I'll open a claim.",
    "No, my door is green.",
    "Then I've opened a claim and a replacement ships tomorrow.",
    "Can I change the size of an order I placed an hour ago?",
    "Yes, it hasn't shipped yet. Which size would you like instead?",
    "A medium, please.",
    "Done: the order is now for a medium, same price.",
    "Perfect, thank you.",
    "Glad I could help, have a good evening.",
    "Is there a student discount?",
    "There is: 10% with a verified student account, on everything except gift cards.",
    "How do I verify?",
    "Under Account, choose Student and follow the steps; it takes a few minutes.",
    "Got it.",
    "Let me know if the verification gets stuck.",
    "Do you deliver on Sundays?",
    "In most cities, yes; at checkout you'll see whether Sunday is offered for your address.",
    "Great, I'll check.",
    "Happy shopping, and feel free to come back with any question.",
    "Why was my account locked?",
    "After five wrong passwords we lock it for 30 minutes to keep it safe.",
    "I see, I'll wait then.",
    "Thanks for your patience; you can also reset the password right away.",
    "Can I return an opened item?",
    "Yes, within 30 days, as long as it is complete and undamaged.",
    "Thanks for explaining.",
    "My pleasure, goodbye.",
]


def event(cid: str, turn: object, role: object = "user", text: object = "a hostile line",
          **fields: object) -> dict[str, object]:
    minute = turn if isinstance(turn, int) and 0 <= turn < 60 else 0
    out: dict[str, object] = {"conversation_id": cid, "turn": turn, "role": role, "text": text,
                              "ts": f"2026-11-21T09:{minute:02d}:00Z", "bot_id": "helpdesk-a",
                              "model": "support-llm-2026-11", "tenant": "acme", "lang": "en"}
    out.update(fields)
    return out


def dumps(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def good_lines() -> list[bytes]:
    out = []
    for i, text in enumerate(GOOD_TEXTS):
        cid, turn = f"hostile-demo-{i // 6 + 1:02d}", i % 6
        out.append(dumps(event(cid, turn, "user" if turn % 2 == 0 else "assistant", text)))
    return out


def nested(levels: int) -> dict[str, object]:
    value: dict[str, object] = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"k": value}
    return value


def hostile_lines() -> list[tuple[bytes, str | None]]:
    """(line, reason); reason None marks a near miss that must be stored."""
    name, address, email, card, phone = PLANTED[0], PLANTED[1], PLANTED[2], PLANTED[3], PLANTED[5]
    escaped_email = email.replace("@", "\\u0040").encode()
    return [
        # One lone surrogate / NUL in the text (ensure_ascii: JSON escapes, as producers send).
        (json.dumps(event("hx-01", 0, text="bad \ud800 here")).encode(), "lone_surrogate"),
        (json.dumps(event("hx-02", 0, text="bad \x00 here")).encode(), "nul_character"),
        (json.dumps(event("hx-03", 0, metadata={"k\udfff": 1})).encode(), "lone_surrogate"),
        (json.dumps(event("hx-04", 0, bot_id="bot\x00")).encode(), "nul_character"),
        # Nesting: a body of 10,000 nested arrays; metadata 600 levels deep; 21 levels.
        (b"[" * 10_000 + b"]" * 10_000, "nesting_too_deep"),
        (dumps(event("hx-05", 0, metadata=nested(600))), "nesting_too_deep"),
        (dumps(event("hx-06", 0, metadata=nested(20))), "nesting_too_deep"),
        (dumps(event("hx-07", 0, metadata=nested(19))), None),  # 20 levels with the event
        # Integer ranges: the store's Integer is 32-bit on PostgreSQL.
        (dumps(event("hx-08", 2**63)), "turn_out_of_range"),
        (dumps(event("hx-09", 2**63 - 1, "assistant")), "turn_out_of_range"),
        (dumps(event("hx-10", 2**31)), "turn_out_of_range"),
        (dumps(event("hx-11", 2**31 - 1)), None),
        (dumps(event("hx-12", 0, metadata={"big": 10**30, "huge": 1e400})).replace(
            b"Infinity", b"1e400"), "invalid_json"),
        # String lengths equal to the columns, for every field.
        (dumps(event("hx-13", 0, bot_id="b" * 201)), "field_too_long"),
        (dumps(event("hx-14", 0, model="m" * 201)), "field_too_long"),
        (dumps(event("hx-15", 0, tenant="t" * 201)), "field_too_long"),
        (dumps(event("hx-16", 0, lang="en-" + "a" * 14)), "field_too_long"),
        (dumps(event("c" * 201, 0)), "field_too_long"),
        (dumps(event("d" * 201, 0, role="system")), "unknown_role"),  # dead-lettered, long id
        (dumps(event("hx-17", 0, bot_id="b" * 200, lang="en-US-x-private1")), None),
        (dumps(event("hx-18", 1, "assistant", "Here you go.", model="claude-3-opus-20240229")),
         None),
        (dumps(event("hx-19", 0, metadata={"notes": "n" * 17_000})), "metadata_too_large"),
        # Values in fields that end up in details, labels and excerpts.
        (dumps(event("hx-20", 0, role=f"{name} {address}")), "unknown_role"),
        (dumps(event("hx-21", 0, bot_id=name)), "invalid_label"),
        (dumps(event("hx-22", 0, tenant=email)), "invalid_label"),
        (dumps(event("hx-23", 0, model=f"card-{card.replace(' ', '')}")), "invalid_label"),
        (dumps(event("hx-24", 0, lang=f"call {phone}")), "field_too_long"),
        (dumps(event("hx-25", 0, lang="en US")), "invalid_lang"),
        (dumps(event(email, 0)), "invalid_conversation_id"),
        (dumps(event(f"{name} chat", 0, role="system")), "unknown_role"),  # no id kept
        (b'{"conversation_id": "hx-26", "turn": 0, "role": "user", "text": "write to '
         + escaped_email + b'", "ts": ', "invalid_json"),
        (dumps(event("hx-27", 0, ts="0001-01-01T00:00:00+05:00")), "invalid_timestamp"),
    ]


def build() -> tuple[bytes, dict[str, object]]:
    goods = iter(good_lines())
    lines: list[bytes] = [next(goods)]
    reasons: dict[str, str] = {}
    for line, reason in hostile_lines():
        lines.append(line)
        if reason is not None:
            reasons[str(len(lines))] = reason
        lines.append(next(goods))
    stored = len(lines) - len(reasons)
    expected = {"reasons": reasons, "stored": stored, "planted": PLANTED}
    return b"\n".join(lines) + b"\n", expected


def main() -> None:
    data, expected = build()
    (HERE / "hostile_events.jsonl").write_bytes(data)
    (HERE / "hostile_events.expected.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main()
