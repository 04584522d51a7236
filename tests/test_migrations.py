"""Migrations in the style of pytest-alembic: one head, up and down, models match migrations."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect

from pipeline.store import db
from pipeline.store.models import Base

TABLES = {"turns", "findings", "dead_letters", "runs", "deletions", "purges", "weekly_counts"}


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
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}),
                                Base.metadata)
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
