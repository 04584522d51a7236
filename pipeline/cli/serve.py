"""``chatmon serve``: the embedded pipeline behind HTTP."""

from __future__ import annotations

import click

from pipeline.cli.context import Ctx, pass_ctx


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8080, show_default=True)
@click.option("--database-url", default=None, help="Overrides CHATMON_DATABASE_URL.")
@pass_ctx
def serve_cmd(obj: Ctx, host: str, port: int, database_url: str | None) -> None:
    """The embedded pipeline behind HTTP: POST /v1/turns (one event or a JSON array; bearer
    token from CHATMON_SERVE_TOKEN) answers 200, 422 naming each refused event's reason (the
    others are stored), or 503 with Retry-After while the store is unavailable; GET /health."""
    from pipeline.embedded.serve import serve

    serve(obj.settings(database_url=database_url), host, port)
