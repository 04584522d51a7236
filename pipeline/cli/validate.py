"""``chatmon validate``: great-expectations suites on a file or on the store."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli.context import Ctx, pass_ctx


@click.command("validate")
@click.argument("file", required=False, type=click.Path(exists=True, dir_okay=False,
                                                        path_type=Path))
@click.option("--store", "store", is_flag=True, help="Validate the stored tables instead.")
@click.option("--no-record", is_flag=True, help="Do not write results to validation_results.")
@click.option("--database-url", default=None, help="Overrides CHATMON_DATABASE_URL.")
@pass_ctx
def validate_cmd(obj: Ctx, file: Path | None, store: bool, no_record: bool,
                 database_url: str | None) -> None:
    """Data-quality checks (great-expectations): a transcript export FILE before ingestion, or
    the store with --store. Prints a table; exits 1 when an expectation fails. Results are
    recorded in the store's validation_results table (dashboard panel, report, alerts)."""
    from pipeline.errors import ConfigError
    from pipeline.report import quality
    from pipeline.store import db

    if (file is None) == (not store):
        raise click.UsageError("give a FILE or --store (not both)")
    settings = obj.settings(database_url=database_url)
    engine = db.open_store(settings.database_url) if store else None
    outcome = (quality.validate_store(engine, settings.max_text_chars) if engine is not None
               else quality.validate_file(file, settings.max_text_chars))  # type: ignore[arg-type]
    click.echo(quality.format_table(outcome))
    if not no_record:
        try:
            engine = engine or db.open_store(settings.database_url)
        except ConfigError as exc:
            click.echo(f"not recorded: {exc}", err=True)
        else:
            quality.record(engine, outcome)
    if engine is not None:
        engine.dispose()
    if not outcome.success:
        raise SystemExit(1)
