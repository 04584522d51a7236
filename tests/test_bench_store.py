"""``chatmon bench --store``: a small run on the local PostgreSQL (not timed: the keys, the fill,
the purge of the oldest week, the database dropped afterwards), and the failure paths."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime

import pytest
from sqlalchemy import create_engine, text

from pipeline.bench.store import dashboard_queries
from pipeline.bench.store_data import (
    MENTION_SHARE,
    Profile,
    conversation,
    make_plan,
    weeks_ending,
)
from tests.conftest import DEFAULT_PG, ROOT

SERVER = os.environ.get("CHATMON_TEST_POSTGRES_URL", DEFAULT_PG)
KEYS = {"turns", "findings", "queries", "report_s", "report_rss_mb", "purge_expired_s",
        "machine"}


def _chatmon(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)


def _bench_databases() -> set[str]:
    engine = create_engine(SERVER)
    try:
        with engine.connect() as conn:
            return {r[0] for r in conn.execute(text(
                "SELECT datname FROM pg_database WHERE datname LIKE 'chatmon_bench_%'"))}
    except Exception as exc:  # no server on this machine
        pytest.skip(f"no PostgreSQL reachable: {type(exc).__name__}")
    finally:
        engine.dispose()


def test_small_run_reports_every_figure_and_drops_its_database() -> None:
    before = _bench_databases()
    out = _chatmon("bench", "--store", "--turns", "2000", "--json", "--postgres-url", SERVER)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout)
    assert result.keys() >= KEYS
    assert result["turns"] == 2000 == result["fill"]["turns"]
    assert result["findings"] >= 5 * result["turns"]
    names = [name for name, _ in dashboard_queries()]
    assert set(result["queries"]) == set(names)
    assert "WORST_CONVERSATIONS" in names and "CONVERSATION" in names
    assert all(s >= 0 for s in result["queries"].values())
    assert result["report_s"] > 0 and result["report_rss_mb"] > 50  # a Python process
    # 21 days' retention at the end of four weeks: the oldest week's turns, about a quarter.
    purged = result["purge_rows"].get("turns", 0)
    assert 0.15 * 2000 < purged < 0.35 * 2000, result["purge_rows"]
    assert result["purge_rows"].get("findings", 0) > 0
    # The four weeks' day partitions of both tables, made before the fill (the days around
    # today, which `db upgrade` makes, may overlap the data's last days).
    assert result["partitions"]["made"] >= 2 * 26, result["partitions"]
    fill = result["fill"]
    assert fill["per_process"][0]["sink_turns_per_s"] >= fill["per_process"][0]["turns_per_s"]
    assert result["machine"]["cpu_model"]
    assert result["disk"]["finding_row_bytes"] > 0
    assert result["user_group_replies"] > 0  # the empathy gap's rollup is written and read
    assert result["jit"] in {"on", "off"}  # reported beside the times the setting ran at
    assert _bench_databases() == before  # dropped: nothing new left on the server


def test_unreachable_server_is_a_clear_error() -> None:
    out = _chatmon("bench", "--store", "--turns", "10",
                   "--postgres-url", "postgresql+psycopg://postgres@127.0.0.1:1/postgres")
    assert out.returncode != 0
    assert "cannot create a database on postgresql+psycopg://postgres@127.0.0.1:1" in out.stderr
    assert "Traceback" not in out.stderr


def test_sqlite_url_is_refused() -> None:
    out = _chatmon("bench", "--store", "--turns", "10", "--postgres-url", "sqlite:///x.db")
    assert out.returncode != 0 and "needs PostgreSQL" in out.stderr


def test_generated_rows_copy_the_profile_under_new_ids_and_times() -> None:
    profile = Profile.load()
    assert profile.findings_per_turn() >= 5
    now = datetime(2026, 11, 29, 3, 0, tzinfo=UTC)
    start, end = weeks_ending(now)
    assert (start.isoformat(), end.isoformat()) == ("2026-10-26T00:00:00+00:00",
                                                    "2026-11-23T00:00:00+00:00")
    plan = make_plan(500, profile, now)
    assert sum(plan.lengths) == 500
    rows = [r for i in range(plan.conversations) for r in conversation(plan, profile, i, "r", now)]
    assert len(rows) == 500
    assert len({t["id"] for t, _ in rows}) == 500
    assert all(start <= t["ts"] < end for t, _ in rows)
    stamps = [rows_of[0]["ts"] for i in range(plan.conversations)
              for rows_of in [[t for t, _ in conversation(plan, profile, i, "r", now)]]]
    assert stamps == sorted(stamps)  # conversations start in index order: written in time order
    assert len({t["bot_id"] for t, _ in rows}) >= 4 and len({t["tenant"] for t, _ in rows}) == 3
    findings = [f for _, fs in rows for f in fs]
    assert len({f["id"] for f in findings}) == len(findings)
    assert {f["label"] for f in findings} >= {"empathy.score", "bias.user_group"}
    users = sum(t["role"] == "user" for t, _ in rows)
    mentions = sum(f["label"] == "bias.user_group" for f in findings)
    assert 0.3 * MENTION_SHARE * users <= mentions <= 3 * MENTION_SHARE * users, (mentions, users)
    # the same index gives the same rows (any process can make any conversation)
    again = conversation(plan, profile, 3, "r", now)
    assert [t["id"] for t, _ in again] == [t["id"] for t, _ in
                                           conversation(plan, profile, 3, "r", now)]
