"""Engines and schema upgrades. Alembic is the only thing that changes the schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, inspect

from pipeline.errors import ConfigError, MissingExtraError, StoreUnavailable

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def make_engine(url: str, **kwargs: Any) -> Engine:
    if url.startswith("postgresql"):
        try:
            import psycopg  # noqa: F401
        except ImportError as exc:
            raise MissingExtraError("psycopg", "postgres") from exc
    # hide_parameters: SQLAlchemy's exception text otherwise carries the bound values (turn
    # text, ids) into tracebacks and logs.
    kwargs.setdefault("hide_parameters", True)
    engine = create_engine(url, pool_pre_ping=True, **kwargs)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def dialect_insert(dialect: str) -> Any:
    """The ``insert`` construct with ``on_conflict_do_*`` of the store's dialect."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert


def open_store(url: str) -> Engine:
    """An engine on an existing, migrated store, for the commands that only read it
    (``findings``, ``report``, ``validate --store``): a clear error instead of a SQL traceback
    when there is nothing there yet, and no empty SQLite file left behind."""
    engine = make_engine(url)
    if engine.dialect.name == "sqlite":
        path = engine.url.database
        if path and path != ":memory:" and not Path(path).exists():
            engine.dispose()
            raise ConfigError(f"no database at {path}: `chatmon run` creates and fills it "
                              "(or create an empty one with `chatmon db upgrade`)")
    if not is_current(engine):
        engine.dispose()
        raise ConfigError("the store is not at the newest schema: run `chatmon db upgrade`")
    return engine


def _sqlite_pragmas(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
    cur = dbapi_conn.cursor()
    # WAL lets `chatmon findings` read while a run writes; foreign keys are off by default.
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.close()


def alembic_config(url: str):  # type: ignore[no-untyped-def]
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def wait_for(url: str, timeout_s: float, every_s: float = 1.0) -> float:
    """Return once the database accepts a connection (seconds waited); ``StoreUnavailable``
    after ``timeout_s``. For a container started beside its database (the compose stack's
    migration job), whose server may still be initialising."""
    import time

    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    engine = make_engine(url)
    t0 = time.monotonic()
    try:
        while True:
            try:
                with engine.connect() as conn:
                    conn.execute(text("select 1"))
                return time.monotonic() - t0
            except OperationalError as exc:
                if time.monotonic() - t0 + every_s > timeout_s:
                    # The exception's class only: its text can carry the host and user.
                    raise StoreUnavailable(f"the database did not accept a connection within "
                                           f"{timeout_s:g} s ({type(exc.orig).__name__})") from None
                time.sleep(every_s)
    finally:
        engine.dispose()


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate to ``revision``; on a day-partitioned PostgreSQL store, also make the partitions
    of yesterday, today and the days ahead (``pipeline/store/partitions.py``)."""
    from alembic import command

    command.upgrade(alembic_config(url), revision)
    if url.startswith("postgresql"):
        from pipeline.store import partitions

        engine = make_engine(url)
        try:
            partitions.ensure_ahead(engine)
        finally:
            engine.dispose()


def downgrade(url: str, revision: str) -> None:
    from alembic import command

    command.downgrade(alembic_config(url), revision)


def is_current(engine: Engine) -> bool:
    """True when the database is at the migrations' head."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config(str(engine.url)))
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return False
        return set(MigrationContext.configure(conn).get_current_heads()) == set(script.get_heads())
