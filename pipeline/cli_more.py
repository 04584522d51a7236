"""More ``chatmon`` commands: findings, serve."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import click

from pipeline.cli import Ctx, cli, pass_ctx


def _when(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise click.BadParameter(f"not an ISO 8601 date or time: {value!r}") from exc
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


@cli.command("findings")
@click.option("--detector", help="Only this detector (e.g. pii).")
@click.option("--label", help="Only this label (e.g. pii.leak).")
@click.option("--bot", help="Only this bot_id.")
@click.option("--conversation", help="Only this conversation_id.")
@click.option("--since", help="Turn time from (ISO 8601, e.g. 2026-11-01).")
@click.option("--until", help="Turn time before (ISO 8601).")
@click.option("--flagged", is_flag=True, help="Only findings flagged by policy thresholds.")
@click.option("--limit", type=click.IntRange(1, 100_000), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="A JSON array of objects.")
@pass_ctx
def findings_cmd(obj: Ctx, detector: str | None, label: str | None, bot: str | None,
                 conversation: str | None, since: str | None, until: str | None,
                 flagged: bool, limit: int, as_json: bool) -> None:
    """Recent stored findings, newest first. Excerpts are redacted; raw PII is never stored."""
    from pipeline.store.db import make_engine
    from pipeline.store.queries import recent_findings

    engine = make_engine(obj.settings().database_url)
    rows = recent_findings(engine, detector=detector, label=label, bot=bot,
                           conversation=conversation, since=_when(since), until=_when(until),
                           flagged_only=flagged, limit=limit)
    if as_json:
        click.echo(json.dumps(rows, indent=2, default=str))
        return
    if not rows:
        click.echo("no findings")
        return
    header = f"{'time':<20} {'conversation':<14} {'turn':>4} {'label':<32} {'score':>5} {'flag':<4} excerpt"
    click.echo(header)
    for r in rows:
        click.echo(
            f"{r['ts'][:19]:<20} {r['conversation_id'][:14]:<14} {r['turn']:>4} "
            f"{r['label'][:32]:<32} {r['score']:>5.2f} {'yes' if r['flagged'] else '':<4} "
            f"{(r['excerpt'] or '')[:70]}"
        )


@cli.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8080, show_default=True)
@click.option("--database-url", default=None, help="Overrides CHATMON_DATABASE_URL.")
@pass_ctx
def serve_cmd(obj: Ctx, host: str, port: int, database_url: str | None) -> None:
    """The embedded pipeline behind HTTP: POST /v1/turns (one event or a JSON array; bearer
    token from CHATMON_SERVE_TOKEN), GET /health."""
    from pipeline.serve import serve

    serve(obj.settings(database_url=database_url), host, port)
