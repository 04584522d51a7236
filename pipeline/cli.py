"""``chatmon``: the one entry point. Settings are built here, never at import."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import click

from detectors.base import DetectorError
from pipeline import __version__
from pipeline.errors import ChatmonError
from pipeline.logs import configure_logging
from pipeline.settings import Settings, load_settings


class Ctx:
    def __init__(self, config: Path | None) -> None:
        self.config = config
        self._settings: Settings | None = None

    def settings(self, **overrides: object) -> Settings:
        if overrides:
            return load_settings(self.config, **overrides)
        if self._settings is None:
            self._settings = load_settings(self.config)
        return self._settings


pass_ctx = click.make_pass_decorator(Ctx)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="chatmon")
@click.option("--config", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              envvar="CHATMON_CONFIG", help="TOML or JSON config file (env vars override it).")
@click.pass_context
def cli(ctx: click.Context, config: Path | None) -> None:
    """chatmon: score every chatbot reply for empathy, repetition, bias, toxicity, manipulation
    and PII, and store the results.

    Configuration comes from CHATMON_* environment variables (e.g. CHATMON_DATABASE_URL,
    default sqlite:///chatmon.db) or a config file; see the README.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach a model hub at run time
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    ctx.obj = Ctx(config)
    configure_logging(ctx.obj.settings().log_level)


@cli.command("run")
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
@pass_ctx
def run_cmd(obj: Ctx, files: tuple[str, ...], as_json: bool, database_url: str | None,
            batch_size: int | None, no_progress: bool, no_migrate: bool,
            metrics_port: int | None, linger: float) -> None:
    """Run the embedded pipeline on JSON Lines FILES (optionally gzipped), or - for stdin.

    Bad events go to the dead_letters table and to FILE.dlq.jsonl next to each input, with a
    machine-readable reason; the run goes on. Running the same input twice adds no rows.
    """
    from pipeline import runner
    from pipeline.summary import render_summary

    settings = obj.settings(database_url=database_url, batch_size=batch_size,
                            metrics_port=metrics_port)
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


@cli.group("db")
def db_group() -> None:
    """Database schema (Alembic migrations)."""


@db_group.command("upgrade")
@click.option("--revision", default="head", show_default=True)
@pass_ctx
def db_upgrade(obj: Ctx, revision: str) -> None:
    """Apply Alembic migrations to the configured database."""
    from pipeline.runner import _safe_url
    from pipeline.store import db

    url = obj.settings().database_url
    db.upgrade(url, revision)
    click.echo(f"database {_safe_url(url)} is at {revision}")


@db_group.command("downgrade")
@click.argument("revision")
@pass_ctx
def db_downgrade(obj: Ctx, revision: str) -> None:
    """Revert migrations down to REVISION (e.g. base)."""
    from pipeline.store import db

    db.downgrade(obj.settings().database_url, revision)
    click.echo(f"downgraded to {revision}")


@cli.command("eval")
@click.argument("bench")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@pass_ctx
def eval_cmd(obj: Ctx, bench: str, path: Path, as_json: bool) -> None:
    """A detector's quality on a public labelled set: BENCH at PATH (the set's folder, e.g.
    ../shared/evaldata/presidio-synth-pii/dev). Thresholds come from shipped policy."""
    from pipeline.eval import BENCHES, run_benchmark

    if bench not in BENCHES:
        raise click.BadParameter(f"unknown benchmark {bench!r}; known: {', '.join(BENCHES)}",
                                 param_hint="BENCH")
    from pipeline.scoring import set_default_encoder_backend

    set_default_encoder_backend(obj.settings().encoder_backend)
    result = run_benchmark(bench, path, obj.settings()).as_dict()
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    click.echo(f"{result['benchmark']} ({result['detector']}, n={result['n']})")
    for k, v in result["metrics"].items():
        click.echo(f"  {k:<28} {v}")


def main() -> None:
    from sqlalchemy.exc import OperationalError

    try:
        cli(standalone_mode=True)
    except (ChatmonError, DetectorError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except OperationalError as exc:  # the store cannot be reached: the driver's reason, no URL
        reason = " ".join(str(exc.orig or exc).split())
        click.echo(f"error: cannot use the database (CHATMON_DATABASE_URL): {reason}", err=True)
        sys.exit(2)


# Commands defined in other modules register themselves on `cli` when imported; import them
# here (at the bottom, after `cli` exists) so that every importer of `cli` sees all commands.
from pipeline import cli_bench, cli_kafka, cli_more, cli_quality  # noqa: E402,F401

if __name__ == "__main__":
    main()
