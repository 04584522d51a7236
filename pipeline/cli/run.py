"""``chatmon run``: the embedded pipeline on files or stdin."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from pipeline.cli.context import Ctx, pass_ctx


@click.command("run")
@click.argument("files", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.option("--database-url", default=None, help="Overrides CHATMON_DATABASE_URL.")
@click.option("--batch-size", type=int, default=None, help="Turns per detector batch.")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option("--no-migrate", is_flag=True, help="Do not apply migrations before running.")
@click.option("--metrics-port", type=int, default=None,
              help="Serve Prometheus metrics on 127.0.0.1:PORT/metrics while running "
                   "(CHATMON_METRICS_PORT; 0 picks a free port).")
@click.option("--linger", type=float, default=0.0, show_default=True,
              help="Seconds to keep the metrics endpoint up after the run (for a last scrape).")
@click.option("--policy", "policy_file", type=click.Path(exists=True, dir_okay=False,
              path_type=Path), default=None,
              help="Policy file: per-tenant/bot thresholds, allow-list (CHATMON_POLICY_FILE).")
@pass_ctx
def run_cmd(obj: Ctx, files: tuple[str, ...], as_json: bool, database_url: str | None,
            batch_size: int | None, no_progress: bool, no_migrate: bool,
            metrics_port: int | None, linger: float, policy_file: Path | None) -> None:
    """Run the embedded pipeline on JSON Lines FILES (optionally gzipped), or - for stdin.

    Bad events go to the dead_letters table and to FILE.dlq.jsonl next to each input, with a
    machine-readable reason; the run goes on. Running the same input twice adds no rows.
    """
    from pipeline.embedded import runner
    from pipeline.embedded.summary import render_summary

    settings = obj.settings(database_url=database_url, batch_size=batch_size,
                            metrics_port=metrics_port, policy_file=policy_file)
    for f in files:
        if f != "-" and not Path(f).is_file():
            raise click.BadParameter(f"no such file: {f}", param_hint="FILES")
    progress = not no_progress and not as_json and sys.stderr.isatty()
    endpoint = _metrics_endpoint(settings.metrics_port)
    summary = runner.run(files, settings, progress=progress, migrate=not no_migrate)
    out = {**summary.as_dict(), "metrics_endpoint": endpoint}
    click.echo(json.dumps(out, indent=2) if as_json else render_summary(out))
    if endpoint and linger > 0:
        time.sleep(linger)
    if summary.interrupted:
        sys.exit(130)


def _metrics_endpoint(port: int | None) -> str | None:
    """Start the metrics HTTP server; a busy port costs the endpoint, not the run."""
    if port is None:
        return None
    from pipeline.metrics import start_http_server

    try:
        return start_http_server(port)
    except OSError as exc:
        click.echo(f"warning: metrics endpoint not started on port {port}: {exc}", err=True)
        return None
