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
