"""``chatmon worker``: a faust worker consuming the Kafka turns topic."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli.context import Ctx, pass_ctx, topic_options


@click.command("worker")
@topic_options
@click.option("--group", default=None, help="Consumer group and faust app id (default chatmon).")
@click.option("--batch-size", type=int, default=None, help="Events per batch (stream.take).")
@click.option("--within", type=float, default=None, help="Max seconds to fill a batch.")
@click.option("--web-port", type=int, default=None, help="Health/stats port (default 6066).")
@click.option("--web-host", default="0.0.0.0", show_default=True)
@click.option("--database-url", default=None, help="Overrides CHATMON_DATABASE_URL.")
@click.option("--no-migrate", is_flag=True, help="Do not apply migrations at start.")
@click.option("--policy", "policy_file", type=click.Path(exists=True, dir_okay=False,
              path_type=Path), default=None,
              help="Policy file: per-tenant/bot thresholds, allow-list (CHATMON_POLICY_FILE).")
@pass_ctx
def worker_cmd(obj: Ctx, turns_topic: str | None, phrases_topic: str | None,
               dlq_topic: str | None, partitions: int | None, group: str | None,
               batch_size: int | None, within: float | None, web_port: int | None,
               web_host: str, database_url: str | None, no_migrate: bool,
               policy_file: Path | None) -> None:
    """Run a faust worker: consume the turns topic (CHATMON_KAFKA_BOOTSTRAP), score, store.

    Start several (with different --web-port on one host) in one --group to share partitions.
    GET /health, /ready on the web port report lag, batch latency and throughput.
    """
    import faust

    from pipeline.kafka.app import WorkerOptions, build_processors, make_app
    from pipeline.kafka.lag import WorkerStats

    settings = obj.settings(database_url=database_url, batch_size=batch_size,
                            policy_file=policy_file)
    opts = WorkerOptions.from_settings(
        settings, turns_topic=turns_topic, phrases_topic=phrases_topic, dlq_topic=dlq_topic,
        partitions=partitions, group=group, within_s=within, web_port=web_port,
        web_host=web_host)
    procs = build_processors(settings, migrate=not no_migrate)
    stats = WorkerStats()
    app = make_app(opts, procs, stats)
    worker = faust.Worker(app, loglevel=settings.log_level, quiet=True)
    worker.execute_from_commandline()
