"""Migrations in the style of pytest-alembic: one head, up and down, models match migrations."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect

from pipeline.store import db
from pipeline.store.models import Base
from pipeline.store.partitions import PG_DIFFERENCES, include_name

TABLES = {"turns", "findings", "dead_letters", "runs", "deletions", "purges", "rollups",
          "phrase_rollups", "conversation_rollups", "group_rollups"}


def test_single_head() -> None:
    script = ScriptDirectory.from_config(db.alembic_config("sqlite://"))
    assert len(script.get_heads()) == 1


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_upgrade_downgrade_and_models_match(backend: str, sqlite_url: str, request) -> None:  # type: ignore[no-untyped-def]
    url = sqlite_url if backend == "sqlite" else request.getfixturevalue("postgres_server_url")
    db.upgrade(url)
    engine = create_engine(url)
    assert set(inspect(engine).get_table_names()) >= TABLES
    assert db.is_current(db.make_engine(url))
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={
            "compare_type": True, "include_name": include_name}), Base.metadata)
    if backend == "postgres":  # day-partitioned turns and findings (migration 0009)
        assert {(d[0], d[1].name) for d in diff} == PG_DIFFERENCES, diff
        diff = []
    assert diff == [], diff
    db.downgrade(url, "base")
    assert not TABLES & set(inspect(engine).get_table_names())
    db.upgrade(url)
    assert set(inspect(engine).get_table_names()) >= TABLES
    engine.dispose()


def test_every_revision_steps_down_and_up(sqlite_url: str) -> None:
    script = ScriptDirectory.from_config(db.alembic_config(sqlite_url))
    revisions = [r.revision for r in script.walk_revisions("base", "heads")][::-1]
    db.upgrade(sqlite_url)
    for rev in reversed(revisions):
        db.downgrade(sqlite_url, f"{rev}-1" if rev != revisions[0] else "base")
    for rev in revisions:
        db.upgrade(sqlite_url, rev)
    assert db.is_current(db.make_engine(sqlite_url))


def test_wait_for_returns_once_the_database_answers_and_gives_up_with_a_clear_error(
        sqlite_url: str) -> None:
    """`chatmon db upgrade --wait`: a reachable store returns at once; an unreachable one
    (a closed loopback port) raises StoreUnavailable after the timeout, without the URL."""
    import socket

    from pipeline.errors import StoreUnavailable

    assert db.wait_for(sqlite_url, 5) < 1.0
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    url = f"postgresql+psycopg://chatmon:s3cret@127.0.0.1:{port}/chatmon"
    with pytest.raises(StoreUnavailable, match="within 1.5 s") as err:
        db.wait_for(url, 1.5, every_s=0.5)
    assert "s3cret" not in str(err.value) and str(port) not in str(err.value)
