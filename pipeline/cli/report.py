"""``chatmon report``: the weekly quality report as one HTML file."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli.context import Ctx, parse_when, pass_ctx


@click.command("report")
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
    from pipeline.report.weekly import default_window, write_report
    from pipeline.store import db

    engine = db.open_store(obj.settings(database_url=database_url).database_url)
    window = default_window(engine, parse_when(until), days)
    path = write_report(engine, out, window)
    engine.dispose()
    click.echo(f"report for {window.start:%Y-%m-%d %H:%M} .. {window.end:%Y-%m-%d %H:%M} UTC: "
               f"{path}")
