"""``chatmon dashboards render|push``: Grafana dashboards as code."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli.context import Ctx, pass_ctx


@click.group("dashboards")
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
