"""``chatmon compare``: models side by side, per signal, with confidence intervals."""

from __future__ import annotations

import json

import click

from pipeline.cli.context import Ctx, parse_when, pass_ctx


@click.command("compare")
@click.option("--model", "models", multiple=True, required=True,
              help="A model as stored (repeat: two or more; the first is the reference).")
@click.option("--bot", help="Only this bot_id.")
@click.option("--tenant", help="Only this tenant.")
@click.option("--since", help="Turn time from (ISO 8601).")
@click.option("--until", help="Turn time before (ISO 8601).")
@click.option("--probe", "probe_only", is_flag=True, help="Only turns stored by chatmon probe.")
@click.option("--label", help="Only probe turns of this run label (implies --probe).")
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95,
              show_default=True, help="Level of the intervals.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--database-url", default=None, help="Overrides CHATMON_DATABASE_URL.")
@pass_ctx
def compare_cmd(obj: Ctx, models: tuple[str, ...], bot: str | None, tenant: str | None,
                since: str | None, until: str | None, probe_only: bool, label: str | None,
                confidence: float, as_json: bool, database_url: str | None) -> None:
    """Compare models side by side: mean empathy, the rate of replies flagged for repetition,
    manipulation, toxicity, bias, PII and empathy failures, and the style measures (words,
    emojis, exclamation marks, questions, pronouns, hedges), each with a confidence interval
    (Wilson for rates, a fixed-seed bootstrap for means) and whether each model's difference to
    the first is larger than chance; then the empathy gap per user group from the paired probe
    scenarios."""
    from pipeline.compare.data import Selection
    from pipeline.compare.view import build, render
    from pipeline.store.db import open_store

    engine = open_store(obj.settings(database_url=database_url).database_url)
    sel = Selection(bot, tenant, parse_when(since), parse_when(until), probe_only, label)
    result = build(engine, list(models), sel, confidence)
    engine.dispose()
    click.echo(json.dumps(result, indent=2) if as_json else render(result))
