"""Hypothesis strategies for the fuzz suite: turn events as a producer means them, hostile field
values, serialisations (escaped, unescaped, invalid UTF-8) and byte mutations of the result.

Every generated input may carry one of ``PLANTED``: values that redaction must always remove
(the safety net masks e-mail addresses and runs of 7+ digits, whatever the PII model finds), so
the suite can assert that none of them reaches any output. Names are left out on purpose: a name
the PII model misses in free text is a recall question, measured by ``chatmon eval``, not a
hostile-input one. A conversation_id may be any printable id without spaces or "@" (ticket
numbers are digits), so the compact card number is never planted there.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

PLANTED = ("eve.baxter@example.com", "4111 1111 1111 1111", "4111111111111111",
           "+44 20 7946 0321", "ops-team@example.org")

WORDS = st.sampled_from(["hello", "sorry", "refund", "order", "I", "understand", "call", "me",
                         "at", "card", "thanks", "é", "日本", "\t", "\n", "[", "{", "\\", '"'])
PLANTED_ST = st.sampled_from(PLANTED)


@st.composite
def texts(draw: st.DrawFn) -> str:
    words = draw(st.lists(WORDS | PLANTED_ST, min_size=1, max_size=12))
    return " ".join(words)


LABELS = st.sampled_from(["helpdesk-a", "billing-bot", "support-llm-2026-11",
                          "claude-3-opus-20240229", "acme", "eu:helpdesk_2"])
LANGS = st.sampled_from(["en", "es-MX", "pt_BR", "", "de"])
TIMESTAMPS = st.sampled_from(["2026-11-20T10:00:00Z", "2026-11-20T10:00:00.123+05:30",
                              "0001-01-01T00:00:00-05:00", "9999-12-31T23:59:59Z"])


def nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"k": value}
    return value


# Values a hostile or broken producer puts in any field.
HOSTILE = st.one_of(
    st.sampled_from([
        "bad \ud800 here", "\udfff", "nul \x00 byte", "", "   ", None, True, 1.5, -1, 0,
        2**31 - 1, 2**31, 2**63 - 1, 2**63, 10**30, [], {}, "user", "assistant", "system",
        "x" * 201, "y" * 17, "z" * 17_000, nested(19), nested(25), nested(600),
        "Jonathan Whitfield 742 Evergreen Terrace",
    ]),
    PLANTED_ST,
    st.text(max_size=30),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
)
FIELDS = ("conversation_id", "turn", "role", "text", "ts", "bot_id", "model", "tenant", "lang",
          "metadata")


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    """A valid event, then (often) some fields replaced by hostile values, dropped, or added."""
    out: dict[str, Any] = {
        "conversation_id": draw(st.sampled_from(["c1", "c2", "c3"])),
        "turn": draw(st.integers(0, 4) | st.sampled_from([2**31 - 1])),
        "role": draw(st.sampled_from(["user", "assistant"])),
        "text": draw(texts()),
        "ts": draw(TIMESTAMPS),
    }
    for name, values in (("bot_id", LABELS), ("model", LABELS), ("tenant", LABELS),
                         ("lang", LANGS)):
        if draw(st.booleans()):
            out[name] = draw(values)
    if draw(st.booleans()):
        out["metadata"] = draw(st.dictionaries(st.text(max_size=8) | PLANTED_ST,
                                               texts() | st.integers(), max_size=3))
    for _ in range(draw(st.integers(0, 2))):
        field = draw(st.sampled_from(FIELDS + ("extra_field",)))
        if draw(st.integers(0, 4)) == 0:
            out.pop(field, None)
        elif field == "conversation_id":  # digits are a valid id (a ticket number)
            out[field] = draw(HOSTILE.filter(lambda v: v != "4111111111111111"))
        else:
            out[field] = draw(HOSTILE)
    return out


@st.composite
def serialised(draw: st.DrawFn, event: Any) -> bytes:
    """One line: JSON escaped or not, @ escaped or not; lone surrogates unescaped become
    invalid UTF-8 bytes (what a broken encoder writes)."""
    text = json.dumps(event, ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):
        text = text.replace("@", "\\u0040")
    return text.encode("utf-8", "surrogatepass")


@st.composite
def mutated(draw: st.DrawFn, line: bytes) -> bytes:
    """``line`` after 0-3 byte mutations (never a newline: one line stays one line)."""
    data = bytearray(line)
    for _ in range(draw(st.integers(0, 3))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        kind = draw(st.sampled_from(["flip", "delete", "insert", "truncate"]))
        if kind == "flip":
            data[at] = draw(st.integers(0, 255).filter(lambda b: b != 0x0A))
        elif kind == "delete":
            del data[at:at + draw(st.integers(1, 8))]
        elif kind == "insert":
            junk = draw(st.sampled_from([b"\x00", b"\xff", b"\xed\xa0\x80", b"[", b"\\", b'"',
                                         b"\\u0000", b"\\ud800", b"{", b"\r"]))
            data[at:at] = junk
        else:
            del data[at:]
    return bytes(data)


@st.composite
def lines(draw: st.DrawFn, max_size: int = 12) -> list[bytes]:
    """A file's lines: events serialised and (sometimes) mutated, with exact duplicates."""
    out: list[bytes] = []
    for _ in range(draw(st.integers(1, max_size))):
        if out and draw(st.integers(0, 6)) == 0:
            out.append(draw(st.sampled_from(out)))  # an exact duplicate of an earlier line
            continue
        line = draw(serialised(draw(events())))
        out.append(draw(mutated(line)) if draw(st.booleans()) else line)
    return out


def records_in(data: bytes) -> int:
    """Non-blank lines, counted as ``pipeline.ingest.readers`` counts them."""
    return sum(1 for line in data.split(b"\n") if line.rstrip(b"\r\n").strip())


def fuzzed_file(sources: list[bytes], n_lines: int, seed: int) -> bytes:
    """``n_lines`` lines of the ``sources`` files, each with 0-3 byte mutations drawn from a
    seeded generator: the same bytes on every run, like the 3,000-line file of issue 21."""
    import random

    rng = random.Random(seed)
    pool = [line for src in sources for line in src.split(b"\n") if line.strip()]
    junk = [b"\x00", b"\xff", b"\xed\xa0\x80", b"[" * 50, b"\\", b'"', b"\\u0000", b"\\ud800"]
    out = []
    for _ in range(n_lines):
        data = bytearray(rng.choice(pool))
        for _ in range(rng.randint(0, 3)):
            if not data:
                break
            at = rng.randrange(len(data))
            kind = rng.randrange(4)
            if kind == 0:
                data[at] = rng.choice([b for b in range(256) if b != 0x0A])
            elif kind == 1:
                del data[at:at + rng.randint(1, 8)]
            elif kind == 2:
                data[at:at] = rng.choice(junk)
            else:
                del data[at:]
        out.append(bytes(data))
    return b"\n".join(out) + b"\n"
