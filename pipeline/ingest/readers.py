"""Reading JSON Lines from files (optionally gzipped) and stdin, as raw bytes per line."""

from __future__ import annotations

import gzip
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from pipeline.ingest.events import RawRecord
from pipeline.ingest.limits import MAX_EVENT_BYTES


def open_source(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    p = Path(path)
    with p.open("rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(p, "rb")  # type: ignore[return-value]
    return p.open("rb")


def read_records(path: str) -> Iterator[RawRecord]:
    """One record per non-blank line; the position is the 1-based line number. A line over
    ``MAX_EVENT_BYTES`` is not held in memory: its first bytes stand for it (validation
    dead-letters it as ``event_too_large``) and the rest is skipped."""
    source = "stdin" if path == "-" else str(path)
    fh = open_source(path)
    try:
        for n, line in enumerate(_lines(fh), start=1):
            line = line.rstrip(b"\r\n")
            if not line.strip():
                continue
            yield RawRecord(source, f"line {n}", line)
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()


def _lines(fh: BinaryIO, limit: int = MAX_EVENT_BYTES) -> Iterator[bytes]:
    while line := fh.readline(limit + 1):
        if len(line) > limit and not line.endswith(b"\n"):
            while (rest := fh.readline(1 << 16)) and not rest.endswith(b"\n"):
                pass  # skip the rest of an oversized line
        yield line


def count_lines(path: str) -> int | None:
    """Line count for the progress bar (None for stdin)."""
    if path == "-":
        return None
    n, last = 0, b"\n"
    with open_source(path) as fh:  # in blocks: a line may be far longer than memory allows
        for block in iter(lambda: fh.read(1 << 20), b""):
            n += block.count(b"\n")
            last = block[-1:]
    return n + (last != b"\n")
