"""Shared fixtures: databases (SQLite per test, one fresh PostgreSQL database per session),
a loaded PII suite (presidio + spaCy load once per session), and processor factories."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# The fuzz suite's budget (tests/test_fuzz_input.py): "ci" unless a profile is named, about a
# minute in all; releases run `pytest tests/test_fuzz_input.py --hypothesis-profile=release`.
settings.register_profile("ci", max_examples=25, print_blob=True)
settings.register_profile("release", max_examples=500, print_blob=True)


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("hypothesis_profile", default=None):
        settings.load_profile("ci")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
DEFAULT_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'chatmon.db'}"


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest) -> str:
    """A store's URL on each backend in turn: a SQLite file, or the session PostgreSQL database
    emptied (``postgres_url``)."""
    return str(request.getfixturevalue("sqlite_url" if request.param == "sqlite"
                                       else "postgres_url"))


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    """A fresh PostgreSQL database for this test session, dropped at the end."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin_url = os.environ.get("CHATMON_TEST_POSTGRES_URL", DEFAULT_PG)
    try:
        admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text("select 1"))
    except Exception as exc:  # no server on this machine: skip, saying why
        pytest.skip(f"no PostgreSQL reachable at {make_url(admin_url).render_as_string()}: "
                    f"{type(exc).__name__}")
    name = f"chatmon_test_{uuid.uuid4().hex[:10]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    yield url
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture
def postgres_url(postgres_server_url: str) -> Iterator[str]:
    """The session database, migrated, with every table emptied before and after each test."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    from pipeline.store import db
    from pipeline.store.models import Base

    db.upgrade(postgres_server_url)
    truncate = text(f"TRUNCATE {', '.join(Base.metadata.tables)} CASCADE")

    def empty() -> None:
        # A fresh connection each time: some tests terminate every backend on purpose.
        engine = create_engine(postgres_server_url, poolclass=NullPool)
        with engine.begin() as conn:
            conn.execute(truncate)
        engine.dispose()

    empty()
    yield postgres_server_url
    empty()


@pytest.fixture(scope="session")
def pii_suite():  # type: ignore[no-untyped-def]
    from pipeline.scoring.suite import DetectorSuite

    suite = DetectorSuite.from_names(["pii"])
    suite.load()
    return suite


@pytest.fixture
def make_processor(pii_suite) -> Callable[..., object]:  # type: ignore[no-untyped-def]
    """Build a Processor on a migrated database with the session's loaded PII suite."""
    from pipeline.scoring.process import Processor
    from pipeline.settings import Settings
    from pipeline.store import db
    from pipeline.store.sink import Sink

    def build(url: str, suite=None, **settings):  # type: ignore[no-untyped-def]
        db.upgrade(url)
        s = Settings(database_url=url, **settings)
        sink = Sink(db.make_engine(url))
        run_id = str(uuid.uuid4())
        s_suite = suite or pii_suite
        sink.start_run(run_id, "run", "test", s_suite.versions, "test")
        return Processor(s, s_suite, sink, run_id=run_id)

    return build


def count_rows(url: str) -> dict[str, int]:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.connect() as conn:
        out = {t: conn.execute(text(f"select count(*) from {t}")).scalar_one()
               for t in ("turns", "findings", "dead_letters")}
    engine.dispose()
    return out
