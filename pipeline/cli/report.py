"""``chatmon report``: the weekly quality report as one HTML file."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli.context import Ctx, parse_when, pass_ctx


@click.command("report")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("reports/weekly.html"), show_default=True)
@click.option("--until", default=None,
              help="End of the window (ISO 8601), rounded up to the day (UTC midnight: "
                   "the report counts whole days). Default: the end of the newest stored "
                   "turn's day, else of today.")
@click.option("--days", type=click.IntRange(1, 366), default=7, show_default=True)
@click.option("--min-replies", type=click.IntRange(1), default=None,
              help="Groups (bots, models, user groups) with fewer replies are listed as too "
                   "few instead of drawn. Default: CHATMON_REPORT_MIN_REPLIES (20).")
@click.option("--database-url", default=None, help="Overrides CHATMON_DATABASE_URL.")
@pass_ctx
def report_cmd(obj: Ctx, out: Path, until: str | None, days: int, min_replies: int | None,
               database_url: str | None) -> None:
    """Write the weekly quality report: one self-contained HTML file (works offline). Every
    comparison is drawn with its 95% interval (as `chatmon compare`), and a change or gap is
    marked only when its interval excludes 0."""
    from pipeline.report.comparisons import Settings
    from pipeline.report.weekly import default_window, write_report
    from pipeline.store import db

    settings = obj.settings(database_url=database_url, report_min_replies=min_replies)
    engine = db.open_store(settings.database_url)
    window = default_window(engine, parse_when(until), days)
    path = write_report(engine, out, window, Settings(settings.report_min_replies))
    engine.dispose()
    click.echo(f"report for {window.start:%Y-%m-%d %H:%M} .. {window.end:%Y-%m-%d %H:%M} UTC: "
               f"{path}")
