"""``chatmon db upgrade|downgrade``: the store's schema (Alembic migrations)."""

from __future__ import annotations

import click

from pipeline.cli.context import Ctx, pass_ctx


@click.group("db")
def db_group() -> None:
    """Database schema (Alembic migrations)."""


@db_group.command("upgrade")
@click.option("--revision", default="head", show_default=True)
@click.option("--wait", "wait_s", type=float, default=0.0, show_default=True,
              help="Seconds to wait for the database to accept connections first (a container "
                   "started beside its database server).")
@pass_ctx
def db_upgrade(obj: Ctx, revision: str, wait_s: float) -> None:
    """Apply Alembic migrations to the configured database."""
    from pipeline.embedded.runner import _safe_url
    from pipeline.store import db

    url = obj.settings().database_url
    if wait_s > 0:
        db.wait_for(url, wait_s)
    db.upgrade(url, revision)
    click.echo(f"database {_safe_url(url)} is at {revision}")


@db_group.command("downgrade")
@click.argument("revision")
@pass_ctx
def db_downgrade(obj: Ctx, revision: str) -> None:
    """Revert migrations down to REVISION (e.g. base)."""
    from pipeline.store import db

    db.downgrade(obj.settings().database_url, revision)
    click.echo(f"downgraded to {revision}")
