"""``chatmon serve``: the embedded pipeline behind HTTP."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli.context import Ctx, pass_ctx


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8080, show_default=True)
@click.option("--database-url", default=None, help="Overrides CHATMON_DATABASE_URL.")
@click.option("--policy", "policy_file", type=click.Path(exists=True, dir_okay=False,
              path_type=Path), default=None,
              help="Policy file: per-tenant/bot thresholds, allow-list (CHATMON_POLICY_FILE).")
@pass_ctx
def serve_cmd(obj: Ctx, host: str, port: int, database_url: str | None,
              policy_file: Path | None) -> None:
    """The embedded pipeline behind HTTP: POST /v1/turns (one event or a JSON array; bearer
    token from CHATMON_SERVE_TOKEN) answers 200, 422 naming each refused event's reason (the
    others are stored), or 503 with Retry-After while the store is unavailable; POST /v1/reviews
    (reviewers' judgments, same token); DELETE /v1/conversations/ID (deletion on request, same
    token; `chatmon purge --log` lists it); GET /health."""
    from pipeline.embedded.serve import serve

    serve(obj.settings(database_url=database_url, policy_file=policy_file), host, port)
