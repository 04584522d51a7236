"""The embedded runner end to end on SQLite: dead letters with reasons and positions, good
events around bad ones stored, idempotent reruns, dead-letter files next to the input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError
from sqlalchemy import create_engine, text

from pipeline.embedded import runner
from pipeline.settings import Settings
from tests.conftest import EXAMPLES, count_rows

_EXPECTED_FILE = EXAMPLES / "bad_events.expected.json"
EXPECTED = {int(k): v for k, v in json.loads(_EXPECTED_FILE.read_text()).items()}


@pytest.fixture
def bad_file(tmp_path: Path) -> Path:
    target = tmp_path / "bad_events.jsonl"
    shutil.copy(EXAMPLES / "bad_events.jsonl", target)
    return target


def run_file(path: Path, url: str, make_processor, **settings) -> runner.RunSummary:  # type: ignore[no-untyped-def]
    proc = make_processor(url, **settings)
    return runner.run([str(path)], proc.settings, progress=False, processor=proc)


def test_every_bad_event_is_dead_lettered_with_its_reason(bad_file, sqlite_url, make_processor):
    summary = run_file(bad_file, sqlite_url, make_processor).as_dict()
    engine = create_engine(sqlite_url)
    with engine.connect() as conn:
        rows = conn.execute(text("select position, reason, source from dead_letters")).all()
    got = {int(pos.split()[1]): reason for pos, reason, _ in rows}
    assert got == EXPECTED
    assert all(src == str(bad_file) for *_, src in rows)
    assert summary["dead_lettered"] == len(EXPECTED)
    for reason in set(EXPECTED.values()):
        assert summary["dead_letter_reasons"][reason] == list(EXPECTED.values()).count(reason)
    assert summary["duplicates_skipped"] == 1  # the exact duplicate is skipped, not dead-lettered


def test_good_events_around_bad_ones_are_stored(bad_file, sqlite_url, make_processor):
    run_file(bad_file, sqlite_url, make_processor)
    lines = bad_file.read_bytes().split(b"\n")
    good_keys = set()
    for n, line in enumerate(lines, start=1):
        if n in EXPECTED or not line.strip():
            continue
        event = json.loads(line)
        good_keys.add((event["conversation_id"], event["turn"]))
    engine = create_engine(sqlite_url)
    with engine.connect() as conn:
        stored = set(conn.execute(text("select conversation_id, turn from turns")).all())
    assert stored == good_keys
    # each bad line has a good neighbour on both sides, and both neighbours were stored
    for n in EXPECTED:
        for neighbour in (n - 1, n + 1):
            if neighbour not in EXPECTED and lines[neighbour - 1].strip():
                ev = json.loads(lines[neighbour - 1])
                assert (ev["conversation_id"], ev["turn"]) in stored


def test_running_the_same_file_twice_adds_no_rows(bad_file, sqlite_url, make_processor):
    lines = (EXAMPLES / "transcripts.jsonl").read_text().splitlines()[:60]
    bad_file.write_text("\n".join(lines) + "\n" + bad_file.read_text(errors="surrogateescape"),
                        errors="surrogateescape")
    run_file(bad_file, sqlite_url, make_processor)
    first = count_rows(sqlite_url)
    assert first["turns"] > 0 and first["findings"] > 0 and first["dead_letters"] > 0
    second = run_file(bad_file, sqlite_url, make_processor).as_dict()
    assert count_rows(sqlite_url) == first
    assert second["turns_stored"] == 0
    assert second["duplicates_skipped"] == first["turns"] + 1


def test_dead_letter_file_is_written_next_to_the_input_and_redacted(bad_file, sqlite_url,
                                                                      make_processor):
    summary = run_file(bad_file, sqlite_url, make_processor)
    dlq = Path(f"{bad_file}.dlq.jsonl")
    assert summary.dead_letter_files == [str(dlq)]
    rows = [json.loads(line) for line in dlq.read_text().splitlines()]
    assert {int(r["position"].split()[1]): r["reason"] for r in rows} == EXPECTED
    assert all(len(r["raw_excerpt"]) <= 300 for r in rows)
    invalid_json = next(r for r in rows if r["reason"] == "invalid_json")
    assert "@" not in invalid_json["raw_excerpt"]  # the e-mail in that line was redacted


def test_detector_failure_is_isolated_and_dead_lettered(sqlite_url, make_processor, pii_suite,
                                                        tmp_path):
    from detectors.base import Finding
    from pipeline.scoring.suite import DetectorSuite

    class Exploding:
        """A test double detector that raises: it exercises the pipeline's isolation."""

        name, version, roles = "exploding", "0", frozenset({"assistant"})

        def load(self) -> None: ...

        def score(self, batch):  # type: ignore[no-untyped-def]
            raise RuntimeError(f"boom on {batch[0].turn.text!r}")  # a message quoting the text

    class Counting:
        name, version, roles = "counting", "0", frozenset({"assistant"})

        def load(self) -> None: ...

        def score(self, batch):  # type: ignore[no-untyped-def]
            return [[Finding("counting", "0", "counting.chars", min(1.0, len(i.turn.text) / 1000))]
                    for i in batch]

    suite = DetectorSuite([*pii_suite.detectors, Exploding(), Counting()])
    suite.load()
    src = tmp_path / "t.jsonl"
    src.write_text("\n".join(json.dumps(e) for e in [
        {"conversation_id": "x", "turn": 0, "role": "user", "text": "Hi",
         "ts": "2026-11-20T10:00:00Z"},
        {"conversation_id": "x", "turn": 1, "role": "assistant", "text": "Hello, how can I help?",
         "ts": "2026-11-20T10:00:01Z"},
    ]))
    summary = run_file(src, sqlite_url, lambda url, **kw: make_processor(url, suite=suite))
    d = summary.as_dict()
    assert d["turns_stored"] == 2
    assert d["findings"].get("counting") == 1
    assert d["dead_letter_reasons"] == {"detector_error": 1}
    engine = create_engine(sqlite_url)
    with engine.connect() as conn:
        row = conn.execute(text("select detector, detail, turn from dead_letters")).one()
    assert row.detector == "exploding" and row.turn == 1
    assert "RuntimeError" in row.detail and "boom" not in row.detail and "help" not in row.detail


def test_wrong_result_length_is_a_typed_error(pii_suite):
    from pipeline.scoring.suite import DetectorSuite, simple_input

    class Short:
        name, version, roles = "short", "0", frozenset({"assistant"})

        def load(self) -> None: ...

        def score(self, batch):  # type: ignore[no-untyped-def]
            return []

    result = DetectorSuite([Short()]).score([simple_input("one"), simple_input("two")])
    assert result.failures and "DetectorShapeError" in result.failures[0].error
    assert result.findings == [[], []]


def test_settings_from_environment(monkeypatch):
    monkeypatch.setenv("CHATMON_DATABASE_URL", "sqlite:///x.db")
    monkeypatch.setenv("CHATMON_MAX_TEXT_CHARS", "99")
    s = Settings()
    assert s.database_url == "sqlite:///x.db" and s.max_text_chars == 99
    with pytest.raises(ValidationError, match="frozen"):
        s.max_text_chars = 5


def test_raw_text_is_opt_in_and_expires(sqlite_url, make_processor, tmp_path):  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime, timedelta

    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps({"conversation_id": "r", "turn": 0, "role": "user",
                               "text": "call me at 212-555-0188", "ts": "2026-11-20T10:00:00Z"}))
    run_file(src, sqlite_url, make_processor)
    engine = create_engine(sqlite_url)
    with engine.connect() as conn:
        assert conn.execute(text("select text_raw from turns")).scalar_one() is None
    url2 = sqlite_url.replace("chatmon.db", "raw.db")
    proc = make_processor(url2, keep_raw_text=True, raw_retention_days=1)
    runner.run([str(src)], proc.settings, progress=False, processor=proc)
    engine2 = create_engine(url2)
    with engine2.begin() as conn:
        assert "212-555-0188" in conn.execute(text("select text_raw from turns")).scalar_one()
        past = datetime.now(UTC) - timedelta(days=2)
        conn.execute(text("update turns set raw_expires_at = :p"), {"p": past})
    assert proc.sink.purge_expired_raw() == 1
    with engine2.connect() as conn:
        assert conn.execute(text("select text_raw from turns")).scalar_one() is None


def test_a_kafka_worker_purges_expired_raw_text_when_it_starts(sqlite_url, make_processor,  # type: ignore[no-untyped-def]
                                                               tmp_path):
    from datetime import UTC, datetime, timedelta

    from pipeline.kafka.app import build_processors

    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps({"conversation_id": "r", "turn": 0, "role": "user",
                               "text": "call me at 212-555-0188", "ts": "2026-11-20T10:00:00Z"}))
    proc = make_processor(sqlite_url, keep_raw_text=True, raw_retention_days=1)
    runner.run([str(src)], proc.settings, progress=False, processor=proc)
    engine = create_engine(sqlite_url)
    with engine.begin() as conn:
        conn.execute(text("update turns set raw_expires_at = :p"),
                     {"p": datetime.now(UTC) - timedelta(days=2)})
    build_processors(proc.settings.model_copy(update={"detectors": ("repetition",)}),
                     migrate=False)
    with engine.connect() as conn:
        assert conn.execute(text("select text_raw from turns")).scalar_one() is None


def test_sigterm_flushes_pending_turns_while_stdin_stays_open(tmp_path):  # type: ignore[no-untyped-def]
    """`chatmon run -` with an idle, open stdin: SIGTERM stores what was read, then exits."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from sqlalchemy.exc import OperationalError

    db_file = tmp_path / "chatmon.db"
    env = {**os.environ, "CHATMON_DATABASE_URL": f"sqlite:///{db_file}",
           "CHATMON_DETECTORS": '["pii"]'}
    proc = subprocess.Popen([sys.executable, "-m", "pipeline.cli", "run", "-", "--json"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, cwd=tmp_path)
    assert proc.stdin is not None
    for i in range(3):
        proc.stdin.write((json.dumps({"conversation_id": "sig", "turn": i, "role": "user",
                                      "text": f"message {i}", "ts": "2026-11-20T10:00:00Z"})
                          + "\n").encode())
    proc.stdin.flush()  # stdin stays open: fewer lines than a batch, no end of input
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # wait until the run has started (models loaded)
        if db_file.exists():
            engine = create_engine(f"sqlite:///{db_file}")
            try:
                with engine.connect() as conn:
                    started = conn.execute(text("select count(*) from runs")).scalar_one()
            except OperationalError:  # the file exists, the migrations are still running
                started = 0
            engine.dispose()
            if started:
                break
        time.sleep(0.5)
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err.decode()[-2000:]
    summary = json.loads(out)
    assert summary["interrupted"] is True and summary["turns_stored"] == 3
    assert count_rows(f"sqlite:///{db_file}")["turns"] == 3


def test_a_file_is_read_one_batch_ahead_and_stdin_is_not() -> None:
    """`run` hands each batch the next one when reading ahead (a file), so the encoder can
    start on it; stdin gets none (its next batch may not have been typed yet); every batch is
    processed once, in order."""
    batches = [[f"r{i}"] for i in range(3)]
    ahead = list(runner.with_next(iter(batches), True))
    assert ahead == [(["r0"], ["r1"]), (["r1"], ["r2"]), (["r2"], None)]
    plain = list(runner.with_next(iter(batches), False))
    assert plain == [(b, None) for b in batches]
    assert list(runner.with_next(iter([]), True)) == []
