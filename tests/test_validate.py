"""chatmon validate: great-expectations suites on a transcript export (before ingestion) and on
the store; a readable table, exit 1 on failure, results in validation_results (which the weekly
dashboard's data-quality panels read)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, func, insert, select

from dashboards import queries, sqlrun
from pipeline.cli import cli
from pipeline.report import quality
from pipeline.store import db
from pipeline.store.models import FindingRow, TurnRow, ValidationResultRow
from tests.dashboards.seed import END, START, _turn, seed_store

SECRET = "my card is 4111 1111 1111 1111 and I am furious"


def _line(conv: str = "c1", turn: int = 0, **over: Any) -> dict[str, Any]:
    base = {"conversation_id": conv, "turn": turn, "role": "user" if turn % 2 == 0 else
            "assistant", "text": f"{SECRET} ({turn})", "bot_id": "b", "model": "m",
            "ts": f"2026-11-07T10:{turn:02d}:00Z"}
    return {**base, **over}


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


GOOD = [_line("c1", 0), _line("c1", 1), _line("c2", 0), _line("c2", 1)]

# name -> (lines, the (expectation, column) pairs that must fail, and nothing else)
CASES: dict[str, tuple[list[Any], set[tuple[str, str]]]] = {
    "missing text": ([*GOOD, {k: v for k, v in _line("c3").items() if k != "text"}],
                     {("expect_column_values_to_not_be_null", "text")}),
    "unknown role": ([*GOOD, _line("c3", role="system")],
                     {("expect_column_values_to_be_in_set", "role")}),
    "blank text": ([*GOOD, _line("c3", text="   ")],
                   {("expect_column_values_to_not_match_regex", "text")}),
    "empty text": ([*GOOD, _line("c3", text="")],
                   {("expect_column_value_lengths_to_be_between", "text"),
                    ("expect_column_values_to_not_match_regex", "text")}),
    "too long": ([*GOOD, _line("c3", text="x" * 300)],
                 {("expect_column_value_lengths_to_be_between", "text")}),
    "negative turn": ([*GOOD, _line("c3", -1, ts="2026-11-07T10:00:00Z")],
                      {("expect_column_values_to_be_between", "turn")}),
    "duplicate turn": ([*GOOD, _line("c1", 1)],
                       {("expect_compound_columns_to_be_unique", "conversation_id,turn")}),
    "time goes backwards": ([*GOOD, _line("c1", 2, ts="2026-11-07T09:00:00Z")],
                            {("expect_column_values_to_be_in_set", "ts_in_turn_order")}),
    "not a timestamp": ([*GOOD, _line("c3", ts="yesterday")],
                        {("expect_column_values_to_not_be_null", "ts_epoch_s")}),
    "far future and past": ([*GOOD, _line("c3", 0, ts="2199-01-01T00:00:00Z"),
                             _line("c4", 0, ts="1970-01-02T00:00:00Z")],
                            {("expect_column_values_to_be_between", "ts_epoch_s")}),
    "broken json": ([*GOOD, '{"conversation_id": "c3", "turn": 0,'],
                    {("expect_column_values_to_be_in_set", "parse_ok"),
                     *{("expect_column_values_to_not_be_null", c)
                       for c in ("conversation_id", "turn", "role", "text", "ts", "ts_epoch_s")}}),
    "several at once": ([*GOOD, _line("c3", role="bot", text=" "), _line("c2", 1)],
                        {("expect_column_values_to_be_in_set", "role"),
                         ("expect_column_values_to_not_match_regex", "text"),
                         ("expect_compound_columns_to_be_unique", "conversation_id,turn")}),
}


def _failed(outcome: quality.Outcome) -> set[tuple[str, str]]:
    return {(c.expectation, c.column) for c in outcome.failed}


def test_a_clean_export_passes(tmp_path: Path) -> None:
    outcome = quality.validate_file(_write(tmp_path / "t.jsonl", GOOD), max_chars=200)
    assert outcome.success, quality.format_table(outcome)
    assert len(outcome.checks) >= 15


@pytest.mark.parametrize("name", list(CASES))
def test_each_defect_fails_its_expectation(name: str, tmp_path: Path) -> None:
    lines, expected = CASES[name]
    outcome = quality.validate_file(_write(tmp_path / "t.jsonl", lines), max_chars=200,
                                    now=datetime(2026, 11, 21, tzinfo=UTC))
    assert _failed(outcome) == expected, quality.format_table(outcome)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[str, Engine]]:
    url = f"sqlite:///{tmp_path / 'chatmon.db'}"
    db.upgrade(url)
    engine = db.make_engine(url)
    seed_store(engine)
    yield url, engine
    engine.dispose()


def test_cli_file_prints_a_table_exits_1_and_records(store: tuple[str, Engine],
                                                     tmp_path: Path) -> None:
    url, engine = store
    bad = _write(tmp_path / "bad.jsonl", CASES["unknown role"][0])
    result = CliRunner().invoke(cli, ["validate", str(bad), "--database-url", url])
    assert result.exit_code == 1, result.output
    assert "FAIL" in result.output and "role" in result.output
    assert "passed, 1 failed" in result.output and SECRET not in result.output
    good = _write(tmp_path / "good.jsonl", GOOD)
    assert CliRunner().invoke(cli, ["validate", str(good), "--database-url", url]).exit_code == 0
    with engine.connect() as conn:
        rows = conn.execute(select(ValidationResultRow)
                            .where(ValidationResultRow.suite == "transcripts")).all()
    assert len({r.validation_id for r in rows}) == 2
    assert sum(not r.success for r in rows) == 1
    assert all(SECRET[:20] not in json.dumps(r.observed) for r in rows)


def test_store_suites_pass_on_a_healthy_store(store: tuple[str, Engine]) -> None:
    _, engine = store
    outcome = quality.validate_store(engine, max_chars=20_000)
    assert outcome.success, quality.format_table(outcome)
    assert {c.suite for c in outcome.checks} == {"store.findings", "store.turns",
                                                 "store.volume", "store.integrity"}


def _corrupt(url: str, engine: Engine) -> None:
    """A score out of range, a finding whose turn is gone, and a 10x spike on the last day."""
    with engine.begin() as conn:
        first = conn.execute(select(FindingRow).limit(1)).mappings().one()
        conn.execute(insert(FindingRow), [{**first, "id": "bad-score", "score": 1.5,
                                           "ts": END - timedelta(hours=6)}])
        spike = END - timedelta(hours=3)
        conn.execute(insert(TurnRow), [_turn(f"spike-{i}", 0, "user", spike, "care-c", "g")
                                       for i in range(250)])
    raw = sqlite3.connect(url.removeprefix("sqlite:///"))  # foreign keys off: an orphan
    raw.execute("UPDATE findings SET turn_id = 'gone' WHERE id = 'bad-score'")
    raw.commit()
    raw.close()


def test_cli_store_catches_corruption_and_the_dashboard_panel_shows_it(
        store: tuple[str, Engine]) -> None:
    url, engine = store
    _corrupt(url, engine)
    started = datetime.now(UTC) - timedelta(seconds=1)
    result = CliRunner().invoke(cli, ["validate", "--store", "--database-url", url])
    assert result.exit_code == 1, result.output
    outcome_lines = [ln for ln in result.output.splitlines() if "FAIL" in ln]
    failed = {(ln.split()[0], ln.split()[1]) for ln in outcome_lines}
    assert failed == {("store.findings", "column_values_to_be_between"),
                      ("store.volume", "column_values_to_be_between"),
                      ("store.integrity", "table_row_count_to_equal")}, result.output
    with engine.connect() as conn:
        n_failed = conn.execute(select(func.count()).where(
            ValidationResultRow.checked_at >= started, ~ValidationResultRow.success)).scalar()
    assert n_failed == 3
    panel = sqlrun.run(engine, queries.VALIDATION_FAILURES.sql, START,
                       datetime.now(UTC) + timedelta(days=1)).records()
    assert {r["metric"] for r in panel if r["failed"]} >= {"store.findings", "store.volume",
                                                             "store.integrity"}


def test_validate_needs_exactly_one_target(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["validate"])
    assert result.exit_code == 2 and "FILE or --store" in result.output


def test_store_suites_on_postgresql(postgres_url: str) -> None:
    engine = db.make_engine(postgres_url)
    try:
        seed_store(engine)
        outcome = quality.validate_store(engine, max_chars=20_000)
        assert outcome.success, quality.format_table(outcome)
        quality.record(engine, outcome)
        rows = sqlrun.run(engine, queries.VALIDATION_LATEST.sql, START,
                          datetime.now(UTC) + timedelta(days=1)).records()
        assert {r["suite"] for r in rows} >= {"store.findings", "store.volume"}
    finally:
        engine.dispose()
