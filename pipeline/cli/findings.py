"""``chatmon findings``: query stored findings."""

from __future__ import annotations

import json

import click

from pipeline.cli.context import Ctx, parse_when, pass_ctx


@click.command("findings")
@click.option("--detector", help="Only this detector (e.g. pii).")
@click.option("--label", help="Only this label (e.g. pii.leak).")
@click.option("--bot", help="Only this bot_id.")
@click.option("--model", help="Only this model (as stored with the turns).")
@click.option("--conversation", help="Only this conversation_id.")
@click.option("--since", help="Turn time from (ISO 8601, e.g. 2026-11-01).")
@click.option("--until", help="Turn time before (ISO 8601).")
@click.option("--flagged", is_flag=True, help="Only findings flagged by policy thresholds.")
@click.option("--limit", type=click.IntRange(1, 100_000), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="A JSON array of objects.")
@pass_ctx
def findings_cmd(obj: Ctx, detector: str | None, label: str | None, bot: str | None,
                 model: str | None, conversation: str | None, since: str | None, until: str | None,
                 flagged: bool, limit: int, as_json: bool) -> None:
    """Recent stored findings, newest first. Excerpts are redacted; raw PII is never stored."""
    from pipeline.store.db import open_store
    from pipeline.store.queries import recent_findings

    engine = open_store(obj.settings().database_url)
    rows = recent_findings(engine, detector=detector, label=label, bot=bot, model=model,
                           conversation=conversation, since=parse_when(since),
                           until=parse_when(until),
                           flagged_only=flagged, limit=limit)
    if as_json:
        click.echo(json.dumps(rows, indent=2, default=str))
        return
    if not rows:
        click.echo("no findings")
        return
    header = (f"{'time':<20} {'conversation':<14} {'turn':>4} {'label':<32} {'score':>5} "
              f"{'flag':<4} excerpt")
    click.echo(header)
    for r in rows:
        click.echo(
            f"{r['ts'][:19]:<20} {r['conversation_id'][:14]:<14} {r['turn']:>4} "
            f"{r['label'][:32]:<32} {r['score']:>5.2f} {'yes' if r['flagged'] else '':<4} "
            f"{(r['excerpt'] or '')[:70]}"
        )
