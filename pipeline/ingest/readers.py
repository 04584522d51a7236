"""Reading JSON Lines from files (optionally gzipped) and stdin, as raw bytes per line."""

from __future__ import annotations

import gzip
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from pipeline.ingest.events import RawRecord


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
    """One record per non-blank line; the position is the 1-based line number."""
    source = "stdin" if path == "-" else str(path)
    fh = open_source(path)
    try:
        for n, line in enumerate(fh, start=1):
            line = line.rstrip(b"\r\n")
            if not line.strip():
                continue
            yield RawRecord(source, f"line {n}", line)
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()


def count_lines(path: str) -> int | None:
    """Line count for the progress bar (None for stdin)."""
    if path == "-":
        return None
    with open_source(path) as fh:
        return sum(1 for _ in fh)
