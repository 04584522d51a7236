"""Redaction spans, the safety net and offset mapping for excerpts."""

from __future__ import annotations

import pytest

from pipeline.scoring.redaction import excerpt, redact


@pytest.mark.parametrize(
    ("text", "spans", "expected"),
    [
        ("call Bob now", [(5, 8, "PERSON")], "call <PERSON> now"),
        ("a@b.io and c@d.org", [], "<EMAIL_ADDRESS> and <EMAIL_ADDRESS>"),
        ("card 4111 1111 1111 1111 ok", [], "card <NUMBER> ok"),
        ("order 12345 is late", [], "order 12345 is late"),  # short numbers stay
        ("Ann Lee at 555-0100-22", [(0, 7, "PERSON")], "<PERSON> at <NUMBER>"),
        ("overlap", [(0, 4, "A"), (2, 7, "B")], "<A>"),
        ("my password is hunter2! ok", [], "my password is <SECRET>! ok"),
        ("the code you sent me is 482913.", [], "the code you sent me is <SECRET>."),
        ("my password is broken", [], "my password is broken"),  # a word, not a password
        ("zip code 94107", [], "zip code 94107"),  # not a secret's cue
    ],
)
def test_redact(text: str, spans: list[tuple[int, int, str]], expected: str) -> None:
    assert redact(text, spans)[0] == expected


def test_offsets_map_into_the_redacted_text() -> None:
    text = "Hi Bob Smith, your parcel to 1 Main St is late. Sorry!"
    redacted, mapper = redact(text, [(3, 12, "PERSON"), (29, 38, "STREET_ADDRESS")])
    start = text.index("Sorry")
    assert redacted[mapper(start): mapper(start) + 5] == "Sorry"
    assert mapper(5) == redacted.index("<PERSON>")  # inside a replaced span -> its start
    snippet = excerpt(redacted, mapper, (start, start + 5), width=20)
    assert "Sorry" in snippet and "Bob" not in snippet
