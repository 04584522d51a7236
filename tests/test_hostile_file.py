"""Issue 21's "done when": ``examples/hostile_events.jsonl`` (every hostile case of the issue
beside valid events and near misses) is read to the end by the real CLI on SQLite and on
PostgreSQL: exit 0, no traceback, every valid event stored, every bad one dead-lettered with its
specific reason, the same counts on both stores, and no planted value in the database, the
dead-letter file, stdout or the DEBUG log."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from tests.conftest import EXAMPLES

EXPECTED = json.loads((EXAMPLES / "hostile_events.expected.json").read_text("utf-8"))
SAME_ACROSS_STORES = ("turns_read", "turns_stored", "duplicates_skipped",
                      "assistant_turns_scored", "dead_lettered", "dead_letter_reasons",
                      "findings_by_label", "detector_errors")


def run_cli(src: Path, url: str, cwd: Path) -> tuple[subprocess.CompletedProcess[bytes],
                                                     dict[str, Any]]:
    env = {**os.environ, "CHATMON_DATABASE_URL": url, "CHATMON_LOG_LEVEL": "DEBUG",
           "CHATMON_DETECTORS": '["pii", "repetition"]', "CHATMON_KEEP_RAW_TEXT": "false"}
    proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "run", str(src), "--json"],
                          env=env, capture_output=True, cwd=cwd, timeout=900)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    return proc, json.loads(proc.stdout)


def store_dump(url: str) -> tuple[str, dict[int, tuple[str, Any]], set[tuple[str, int]]]:
    """Every row of every table as text; dead letters by line; stored turn keys."""
    engine = create_engine(url)
    with engine.connect() as conn:
        blob = "\n".join(str(tuple(row)) for table in ("turns", "findings", "dead_letters")
                         for row in conn.execute(text(f"select * from {table}")))
        dead = {int(pos.split()[1]): (reason, cid) for pos, reason, cid in conn.execute(
            text("select position, reason, conversation_id from dead_letters"))}
        turns = set(conn.execute(text("select conversation_id, turn from turns")).all())
    engine.dispose()
    return blob, dead, turns


def test_the_hostile_file_is_read_to_the_end_on_both_stores(
        tmp_path: Path, postgres_url: str) -> None:
    reasons = {int(k): v for k, v in EXPECTED["reasons"].items()}
    lines = (EXAMPLES / "hostile_events.jsonl").read_bytes().split(b"\n")[:-1]
    summaries = {}
    for store, url in (("sqlite", f"sqlite:///{tmp_path / 'chatmon.db'}"),
                       ("postgres", postgres_url)):
        work = tmp_path / store
        work.mkdir()
        src = work / "hostile_events.jsonl"
        shutil.copy(EXAMPLES / "hostile_events.jsonl", src)
        proc, summary = run_cli(src, url, work)
        summaries[store] = summary
        assert b"Traceback" not in proc.stderr
        assert summary["turns_read"] == len(lines)
        assert summary["turns_stored"] == EXPECTED["stored"]
        assert summary["dead_lettered"] == len(reasons)
        blob, dead, turns = store_dump(url)
        assert {n: reason for n, (reason, _) in dead.items()} == reasons, store
        # a dead letter keeps no conversation_id the column cannot hold
        assert all(cid is None or len(cid) <= 200 for _, cid in dead.values())
        good = [json.loads(lines[n - 1]) for n in range(1, len(lines) + 1) if n not in reasons]
        assert turns == {(e["conversation_id"], e["turn"]) for e in good}
        assert ("hx-11", 2**31 - 1) in turns  # the near misses at each limit are stored
        dlq = Path(f"{src}.dlq.jsonl").read_text("utf-8")
        outputs = {"store": blob, "dead-letter file": dlq, "stdout": proc.stdout.decode(),
                   "stderr": proc.stderr.decode()}
        for name, output in outputs.items():
            for value in EXPECTED["planted"]:
                assert value not in output, f"{value!r} in the {name} ({store})"
    sqlite, postgres = summaries["sqlite"], summaries["postgres"]
    assert {k: sqlite[k] for k in SAME_ACROSS_STORES} == {k: postgres[k] for k in
                                                           SAME_ACROSS_STORES}


def test_every_new_reason_is_in_the_hostile_file() -> None:
    from pipeline.ingest import events

    new = set(events.REASONS) - {
        "invalid_utf8", "not_an_object", "missing_field", "wrong_type", "empty_text",
        "text_too_long", "conflicting_duplicate", "detector_error", "processing_error",
        "event_too_large", "invalid_turn_index",
        "redaction_failed"}  # no input causes it: tests/test_redaction_stage.py
    assert new <= set(EXPECTED["reasons"].values())
