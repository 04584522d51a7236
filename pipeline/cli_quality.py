"""``chatmon`` commands for quality owners: dashboards (render, push), report, validate."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli import Ctx, cli, pass_ctx


@cli.group("dashboards")
def dashboards_group() -> None:
    """Grafana dashboards as code (on-call and weekly quality)."""


@dashboards_group.command("render")
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path),
              default=Path("dashboards/generated"), show_default=True,
              help="Folder to write one JSON file per dashboard into.")
def render_cmd(out: Path) -> None:
    """Write the dashboards' JSON (deterministic: re-rendering changes nothing)."""
    from dashboards import render_all

    for path in render_all(out):
        click.echo(str(path))


@dashboards_group.command("push")
@click.option("--prometheus-url", default="http://prometheus:9090", show_default=True,
              help="Prometheus as Grafana reaches it.")
@click.option("--postgres-host", default=None,
              help="host:port of the PostgreSQL store as Grafana reaches it "
                   "(default: the host in CHATMON_DATABASE_URL).")
@click.option("--database-url", default=None, help="Overrides CHATMON_DATABASE_URL.")
@pass_ctx
def push_cmd(obj: Ctx, prometheus_url: str, postgres_host: str | None,
             database_url: str | None) -> None:
    """Create or update the chatmon folder, datasources and dashboards in Grafana
    (CHATMON_GRAFANA_URL, CHATMON_GRAFANA_TOKEN). Safe to repeat: updates by uid."""
    from grafana_client.client import GrafanaException

    from dashboards import builders
    from dashboards import push as gp
    from pipeline.errors import ChatmonError, ConfigError

    settings = obj.settings(database_url=database_url)
    if not settings.grafana_url or settings.grafana_token is None:
        raise ConfigError("set CHATMON_GRAFANA_URL and CHATMON_GRAFANA_TOKEN (a Grafana "
                          "service-account token) to push dashboards")
    sources = gp.datasource_definitions(settings.database_url, prometheus_url, postgres_host)
    if len(sources) == 1:
        click.echo("note: the store is not PostgreSQL; the weekly dashboard needs the "
                   "PostgreSQL datasource (chatmon-postgres) configured in Grafana", err=True)
    dashboards = {d["uid"]: d for d in (build() for build in builders().values())}
    api = gp.connect(settings.grafana_url, settings.grafana_token.get_secret_value())
    try:
        report = gp.push(api, dashboards, sources)
    except GrafanaException as exc:
        raise ChatmonError(f"Grafana at {gp.safe_url(settings.grafana_url)}: "
                           f"{exc.status_code} {exc.message}") from exc
    for what in report.created:
        click.echo(f"created {what}")
    for what in report.updated:
        click.echo(f"updated {what}")
    click.echo(f"pushed to {gp.safe_url(settings.grafana_url)}")


@cli.command("report")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("reports/weekly.html"), show_default=True)
@click.option("--until", default=None,
              help="End of the window (ISO 8601). Default: the newest stored turn, else now.")
@click.option("--days", type=click.IntRange(1, 366), default=7, show_default=True)
@click.option("--database-url", default=None, help="Overrides CHATMON_DATABASE_URL.")
@pass_ctx
def report_cmd(obj: Ctx, out: Path, until: str | None, days: int,
               database_url: str | None) -> None:
    """Write the weekly quality report: one self-contained HTML file (works offline)."""
    from pipeline.cli_more import _when
    from pipeline.report import default_window, write_report
    from pipeline.store import db

    engine = db.open_store(obj.settings(database_url=database_url).database_url)
    window = default_window(engine, _when(until), days)
    path = write_report(engine, out, window)
    engine.dispose()
    click.echo(f"report for {window.start:%Y-%m-%d %H:%M} .. {window.end:%Y-%m-%d %H:%M} UTC: "
               f"{path}")


@cli.command("validate")
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
    from pipeline import quality
    from pipeline.errors import ConfigError
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
