"""Every SQL panel of the weekly dashboard, executed against a seeded PostgreSQL store and a
seeded SQLite store: each must return rows of the shape its panel expects (column names and
kinds), and a few values are checked against the seed computed in Python."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from datetime import date, datetime
from typing import Any

import pytest
from sqlalchemy import Engine, text

from dashboards import queries, sqlrun, weekly
from dashboards.builder import SqlQuery, sql_queries
from pipeline.store import db
from tests.dashboards.seed import END, START, rows, seed_store

BY_SQL = {q.sql.strip(): q for q in vars(queries).values() if isinstance(q, SqlQuery)}
PANELS = sql_queries(weekly.build())


@pytest.fixture(scope="module")
def sqlite_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    url = f"sqlite:///{tmp_path_factory.mktemp('store') / 'chatmon.db'}"
    db.upgrade(url)
    engine = db.make_engine(url)
    seed_store(engine)
    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def postgres_engine(postgres_server_url: str) -> Iterator[Engine]:
    db.upgrade(postgres_server_url)
    engine = db.make_engine(postgres_server_url)
    with engine.begin() as conn:
        conn.execute(text("TRUNCATE reviews, findings, turns, dead_letters, runs, "
                          "validation_results"))
    seed_store(engine)
    yield engine
    with engine.begin() as conn:
        conn.execute(text("TRUNCATE reviews, findings, turns, validation_results"))
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def engine(request: pytest.FixtureRequest) -> Engine:
    return request.getfixturevalue(f"{request.param}_engine")


def _is_kind(value: Any, kind: str) -> bool:
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool) or (
            type(value).__name__ == "Decimal")
    if kind == "string":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool) or value in (0, 1)
    if isinstance(value, datetime | date):
        return True
    return isinstance(value, str) and bool(datetime.fromisoformat(value))


def _run(engine: Engine, query: SqlQuery) -> sqlrun.Result:
    """The query over the whole days the seed spans (the phrase and user-group panels count
    whole days)."""
    return sqlrun.run(engine, query.sql, START.replace(hour=0), END, conversation="conv-0004")


def test_every_sql_panel_is_a_known_query() -> None:
    assert len(PANELS) >= 12
    for title, sql in PANELS:
        assert sql in BY_SQL, title


@pytest.mark.parametrize("title,sql", PANELS, ids=[t for t, _ in PANELS])
def test_panel_query_returns_the_expected_shape(engine: Engine, title: str, sql: str) -> None:
    query = BY_SQL[sql]
    result = _run(engine, query)
    assert result.columns == [name for name, _ in query.columns], title
    assert result.rows, f"{title}: no rows on {engine.dialect.name}"
    for i, (name, kind) in enumerate(query.columns):
        values = [r[i] for r in result.rows]
        assert any(v is not None for v in values), (title, name)
        bad = [v for v in values if v is not None and not _is_kind(v, kind)]
        assert not bad, (title, name, kind, bad[:3])


def test_time_filter_excludes_rows_outside_the_range(engine: Engine) -> None:
    later = sqlrun.run(engine, queries.MECHANISMS.sql, END, END.replace(year=2027))
    assert later.rows == []


def test_near_duplicate_share_matches_the_seed(engine: Engine) -> None:
    turns, findings = rows()
    replies: dict[str, int] = defaultdict(int)
    dupes: dict[str, int] = defaultdict(int)
    for t in turns:
        replies[t["bot_id"]] += t["role"] == "assistant"
    for f in findings:
        dupes[f["bot_id"]] += f["label"] == "repetition.near_duplicate" and f["flagged"]
    got = {r["bot"]: r for r in _run(engine, queries.NEAR_DUPLICATES).records()}
    for bot, n in replies.items():
        assert got[bot]["replies"] == n
        assert float(got[bot]["near_duplicate_share"]) == pytest.approx(dupes[bot] / n)


def test_week_over_week_is_the_difference_of_the_last_two_weeks(engine: Engine) -> None:
    weekly_means: dict[str, list[float]] = defaultdict(list)
    for r in _run(engine, queries.EMPATHY_WEEKLY).records():
        weekly_means[r["metric"].split(" / ")[0]].append(float(r["empathy"]))
    wow = _run(engine, queries.WEEK_OVER_WEEK).records()
    assert {r["bot"] for r in wow} == {"helpdesk-a", "helpdesk-b", "care-c"}
    for r in wow:
        assert str(r["time"])[:10] == "2026-11-16"
        if r["bot"] != "helpdesk-a":  # helpdesk-a changes model mid-series: two series
            means = weekly_means[r["bot"]]
            assert float(r["empathy_change"]) == pytest.approx(means[-1] - means[-2])


def test_empathy_gap_is_against_the_bots_other_replies(engine: Engine) -> None:
    turns, findings = rows()
    empathy = {(f["conversation_id"], f["turn"]): (f["bot_id"], f["score"]) for f in findings
               if f["label"] == "empathy.score" and START <= f["ts"] < END}
    mentions = {(f["conversation_id"], f["turn"] + 1): (f["evidence"]["category"],
                                                         f["evidence"]["group"])
                for f in findings if f["label"] == "bias.user_group"}
    gaps = _run(engine, queries.EMPATHY_GAP).records()
    assert len(gaps) >= 6
    for r in gaps:
        key = (r["category"], r["user_group"])
        bots = [(mentions.get(at) == key, s) for at, (bot, s) in empathy.items()
                if bot == r["bot"]]
        group = [s for inside, s in bots if inside]
        rest = [s for inside, s in bots if not inside]
        assert r["replies"] == len(group)
        assert float(r["gap"]) == pytest.approx(sum(group) / len(group) - sum(rest) / len(rest))
