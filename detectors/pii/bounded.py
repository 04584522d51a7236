"""A spaCy tokenizer whose cost stays linear in the text's length.

spaCy strips prefixes and suffixes off a whitespace-free run one at a time, searching the rest
of the run again after each: quadratic on a run of punctuation or emoji (5,000 "!" cost 2.5 s,
an ordinary 5,000-character text 0.07 s). ``BoundedTokenizer`` hands spaCy a copy of the text in
which every whitespace-free run longer than ``MAX_RUN`` characters has a space at every
``MAX_RUN``-th character; the copy has the same length, so every offset spaCy returns (entity
spans, token offsets) is an offset into the original text. Text with no such run, which is all
ordinary text, is passed through unchanged. Only the NLP artefacts see the copy: Presidio's
pattern recognizers read the original text.
"""

from __future__ import annotations

import re
from typing import Any

# Characters. Words, e-mail addresses and most URLs are shorter; a longer URL or token is cut
# for spaCy's NER only (the pattern recognizers, which find e-mail addresses, URLs, phone and
# card numbers, read it whole).
MAX_RUN = 100
_LONG_RUN = re.compile(rf"(?<!\S)\S{{{MAX_RUN + 1},}}")  # from a run's start only


def break_long_runs(text: str, max_run: int = MAX_RUN) -> str:
    """``text`` with a space at every ``max_run``-th character of each whitespace-free run
    longer than ``max_run`` (same length, same offsets)."""
    if len(text) <= max_run or not _LONG_RUN.search(text):
        return text

    def cut(m: re.Match[str]) -> str:
        run = m.group()
        return " ".join(run[i + (i > 0): i + max_run] for i in range(0, len(run), max_run))

    return _LONG_RUN.sub(cut, text)


class BoundedTokenizer:
    """Wraps a spaCy tokenizer: ``tokenizer(text)`` tokenizes ``break_long_runs(text)``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __call__(self, text: str) -> Any:
        return self.inner(break_long_runs(text))

    def __getattr__(self, name: str) -> Any:  # rules, vocab, to_disk...: the inner tokenizer's
        return getattr(self.inner, name)
