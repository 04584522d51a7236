"""Property-based fuzzing of the ingest paths (hypothesis): generated events, hostile field
values and byte mutations, through ``chatmon run`` on SQLite and PostgreSQL and through
``chatmon serve``. For every generated input: no exception or traceback, every record stored,
skipped as an exact duplicate or dead-lettered with a known reason (and nothing else), and no
planted value in any output (rows, dead-letter files, logs, stdout/stderr, HTTP answers).

CI runs the ``ci`` profile (a modest number of examples, about a minute in all); releases run
``pytest tests/test_fuzz_input.py --hypothesis-profile=release`` (see docs/hostile_input.md).
The detector suite is PII only: redaction is what the planted values test, scoring is not.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, text
from starlette.testclient import TestClient

from pipeline.embedded import runner
from pipeline.embedded.serve import create_app, split_body
from pipeline.ingest.events import DETECTOR_ERROR, REASONS
from pipeline.logs import TEXT_LOGGING_LIBRARIES
from pipeline.scoring.process import BatchReport
from tests.conftest import EXAMPLES
from tests.fuzz_events import (
    PLANTED,
    events,
    fuzzed_file,
    lines,
    mutated,
    records_in,
    serialised,
)

FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                      HealthCheck.too_slow,
                                                      HealthCheck.data_too_large])
_example = itertools.count()


@pytest.fixture
def logs(caplog):  # type: ignore[no-untyped-def]
    """Everything chatmon logs at DEBUG, with the text-logging libraries held at WARNING as
    ``pipeline.logs.configure_logging`` holds them."""
    caplog.set_level(logging.DEBUG)
    for name in TEXT_LOGGING_LIBRARIES:
        caplog.set_level(logging.WARNING, logger=name)
    return caplog


def dump(url: str) -> tuple[dict[str, int], set[str], list[tuple[str, str]]]:
    """Row counts, every row as text, and (reason, detail) of every dead letter."""
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = {t: [str(tuple(r)) for r in conn.execute(text(f"select * from {t}"))]
                for t in ("turns", "findings", "dead_letters")}
        dead = [tuple(r) for r in conn.execute(text("select reason, detail from dead_letters"))]
    engine.dispose()
    return {t: len(v) for t, v in rows.items()}, set(sum(rows.values(), [])), dead


def assert_no_planted(**outputs: str) -> None:
    for name, output in outputs.items():
        for value in PLANTED:
            assert value not in output, f"planted {value!r} in {name}: {output[-3000:]}"


def check_run(url: str, proc: Any, tmp_path: Path, data: bytes, logs: Any, capsys: Any) -> None:
    """One example; the rows and log records it adds are checked on their own, so that a
    failing example shrinks to what causes it."""
    before, old_rows, _ = dump(url)
    logged = len(logs.records)
    src = tmp_path / f"fuzz-{next(_example)}.jsonl"
    src.write_bytes(data)
    summary = runner.run([str(src)], proc.settings, progress=False, processor=proc).as_dict()
    counts, rows, dead = dump(url)
    reasons = summary["dead_letter_reasons"]
    rejected = sum(n for r, n in reasons.items() if r != DETECTOR_ERROR)
    assert not summary["interrupted"]
    assert summary["turns_read"] == records_in(data)
    assert summary["turns_stored"] + summary["duplicates_skipped"] + rejected == \
        summary["turns_read"]
    assert counts["turns"] - before["turns"] == summary["turns_stored"]
    assert counts["dead_letters"] - before["dead_letters"] == summary["dead_lettered"]
    assert set(reasons) <= set(REASONS)
    assert all(reason in REASONS and detail for reason, detail in dead)
    for reason in reasons:  # what the examples reached: --hypothesis-show-statistics
        event(f"dead letter: {reason}")
    dlq = Path(f"{src}.dlq.jsonl")
    out = capsys.readouterr()
    new_logs = "\n".join(logs.handler.formatter.format(r) for r in logs.records[logged:])
    assert "Traceback" not in new_logs + out.err
    assert_no_planted(store="\n".join(rows - old_rows), logs=new_logs, stdout=out.out,
                      stderr=out.err,
                      dead_letter_file=dlq.read_text("utf-8") if dlq.exists() else "")


@pytest.fixture
def sqlite_proc(sqlite_url: str, make_processor):  # type: ignore[no-untyped-def]
    """One processor for all of a test's examples (building one runs the migrations); every
    example writes a file of its own, so its dead letters are its own."""
    return make_processor(sqlite_url, batch_size=8)


@pytest.fixture
def postgres_proc(postgres_url: str, make_processor):  # type: ignore[no-untyped-def]
    return make_processor(postgres_url, batch_size=8)


@FUZZ
@given(file_lines=lines())
def test_run_on_sqlite_reads_every_line_and_leaks_nothing(
        file_lines: list[bytes], sqlite_proc, tmp_path: Path, logs, capsys) -> None:  # type: ignore[no-untyped-def]
    data = b"\n".join(file_lines) + b"\n"
    check_run(sqlite_proc.settings.database_url, sqlite_proc, tmp_path, data, logs, capsys)


@FUZZ
@given(file_lines=lines())
def test_run_on_postgres_reads_every_line_and_leaks_nothing(
        file_lines: list[bytes], postgres_proc, tmp_path: Path, logs, capsys) -> None:  # type: ignore[no-untyped-def]
    data = b"\n".join(file_lines) + b"\n"
    check_run(postgres_proc.settings.database_url, postgres_proc, tmp_path, data, logs, capsys)


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    """One request body: one event, an array of events, or a mutated body."""
    items = draw(st.lists(events(), min_size=1, max_size=6))
    body = draw(serialised(items if draw(st.booleans()) else items[0]))
    return draw(mutated(body)) if draw(st.booleans()) else body


@FUZZ
@given(requests=st.lists(bodies(), min_size=1, max_size=4))
def test_serve_answers_every_request_and_leaks_nothing(
        requests: list[bytes], sqlite_proc, logs) -> None:  # type: ignore[no-untyped-def]
    proc, sqlite_url = sqlite_proc, sqlite_proc.settings.database_url
    reports: list[BatchReport] = []
    proc.on_batch = reports.append
    before, old_rows, _ = dump(sqlite_url)
    logged = len(logs.records)
    answers = []
    with TestClient(create_app(proc.settings, proc)) as client:
        for body in requests:
            r = client.post("/v1/turns", content=body)
            answers.append(r.text)
            n_items = len(split_body(body))
            if n_items == 0:
                assert r.status_code == 400  # an empty array
                continue
            assert r.status_code in (200, 422), r.text
            answer = r.json()
            assert answer["received"] == n_items
            assert all(x["reason"] in REASONS for x in answer["rejected"])
            assert (r.status_code == 422) == bool(answer["rejected"])
    counts, rows, _ = dump(sqlite_url)
    total = BatchReport()
    for report in reports:
        total.merge(report)
    rejected = sum(n for r, n in total.dead_letters.items() if r != DETECTOR_ERROR)
    assert total.turns_stored + total.duplicates_skipped + rejected == total.records
    assert total.records == sum(len(split_body(b)) for b in requests)
    assert counts["turns"] - before["turns"] == total.turns_stored
    new_logs = "\n".join(logs.handler.formatter.format(r) for r in logs.records[logged:])
    assert "Traceback" not in new_logs
    assert_no_planted(store="\n".join(rows - old_rows), logs=new_logs,
                      answers="\n".join(answers))


def cli_lines() -> int:
    """Lines in the CLI's fuzzed file: 200 under the ci profile (the CLI's start-up is most of
    its time), issue 21's 3,000 at release."""
    return 3000 if settings.default.max_examples >= 500 else 200


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_the_cli_reads_a_fuzzed_file_to_the_end_and_exits_0(
        store: str, request, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url = (f"sqlite:///{tmp_path / 'chatmon.db'}" if store == "sqlite"
           else request.getfixturevalue("postgres_url"))
    sources = [(EXAMPLES / f).read_bytes() for f in
               ("hostile_events.jsonl", "bad_events.jsonl", "transcripts.jsonl")]
    data = fuzzed_file(sources, cli_lines(), seed=21)
    src = tmp_path / "fuzzed.jsonl"
    src.write_bytes(data)
    env = {**os.environ, "CHATMON_DATABASE_URL": url, "CHATMON_LOG_LEVEL": "DEBUG",
           "CHATMON_DETECTORS": '["pii"]'}
    proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "run", str(src), "--json"],
                          env=env, capture_output=True, cwd=tmp_path, timeout=1800)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    assert b"Traceback" not in proc.stderr
    summary = json.loads(proc.stdout)
    rejected = sum(n for r, n in summary["dead_letter_reasons"].items() if r != DETECTOR_ERROR)
    assert summary["turns_read"] == records_in(data)
    assert summary["turns_stored"] + summary["duplicates_skipped"] + rejected == \
        summary["turns_read"]
    counts, rows, _ = dump(url)
    blob = "\n".join(rows)
    assert counts["turns"] == summary["turns_stored"]
    assert counts["dead_letters"] == summary["dead_lettered"]
    hostile_planted = json.loads((EXAMPLES / "hostile_events.expected.json").read_text())
    for value in (*PLANTED, *hostile_planted["planted"]):
        for name, output in (("store", blob), ("stdout", proc.stdout.decode()),
                             ("stderr", proc.stderr.decode(errors="replace")),
                             ("dead letters", Path(f"{src}.dlq.jsonl").read_text("utf-8"))):
            assert value not in output, f"planted {value!r} in the {name}"
