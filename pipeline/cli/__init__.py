"""``chatmon``: the one entry point. Settings are built here, never at import.

Each command lives in the module named after it (``pipeline/cli/run.py`` holds ``chatmon run``);
this module builds the group and adds them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from detectors.base import DetectorError
from pipeline import __version__
from pipeline.cli import (
    bench,
    compare,
    dashboards,
    db,
    eval,
    findings,
    judge,
    models,
    pii,
    policy,
    probe,
    produce,
    purge,
    report,
    review,
    run,
    serve,
    topics,
    train,
    validate,
    worker,
)
from pipeline.cli.context import Ctx
from pipeline.errors import ChatmonError
from pipeline.logs import configure_logging


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
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no weight-loading bars in logs
    ctx.obj = Ctx(config)
    configure_logging(ctx.obj.settings().log_level)


for command in (
    run.run_cmd,
    serve.serve_cmd,
    db.db_group,
    findings.findings_cmd,
    eval.eval_cmd,
    worker.worker_cmd,
    produce.produce_cmd,
    topics.topics_group,
    report.report_cmd,
    dashboards.dashboards_group,
    validate.validate_cmd,
    bench.bench_cmd,
    models.models_group,
    train.train_group,
    review.review_group,
    policy.policy_group,
    pii.pii_group,
    probe.probe_cmd,
    compare.compare_cmd,
    judge.judge_group,
    purge.purge_cmd,
):
    cli.add_command(command)


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

