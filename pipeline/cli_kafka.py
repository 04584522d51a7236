"""Kafka commands: ``chatmon worker``, ``chatmon produce``, ``chatmon topics create``."""

from __future__ import annotations

import json
import sys

import click

from pipeline.cli import Ctx, cli, pass_ctx


def _topic_options(fn):  # type: ignore[no-untyped-def]
    fn = click.option("--dlq-topic", default=None,
                      help="Dead-letter topic (default turns.dlq).")(fn)
    fn = click.option("--phrases-topic", default=None,
                      help="Stage-2 topic keyed by bot (default phrases).")(fn)
    fn = click.option("--turns-topic", default=None, help="Input topic (default turns).")(fn)
    fn = click.option("--partitions", type=int, default=None,
                      help="Partitions per topic (default 8).")(fn)
    return fn


@cli.command("worker")
@_topic_options
@click.option("--group", default=None, help="Consumer group and faust app id (default chatmon).")
@click.option("--batch-size", type=int, default=None, help="Events per batch (stream.take).")
@click.option("--within", type=float, default=None, help="Max seconds to fill a batch.")
@click.option("--web-port", type=int, default=None, help="Health/stats port (default 6066).")
@click.option("--web-host", default="0.0.0.0", show_default=True)
@click.option("--database-url", default=None, help="Overrides CHATMON_DATABASE_URL.")
@click.option("--no-migrate", is_flag=True, help="Do not apply migrations at start.")
@pass_ctx
def worker_cmd(obj: Ctx, turns_topic: str | None, phrases_topic: str | None,
               dlq_topic: str | None, partitions: int | None, group: str | None,
               batch_size: int | None, within: float | None, web_port: int | None,
               web_host: str, database_url: str | None, no_migrate: bool) -> None:
    """Run a faust worker: consume the turns topic (CHATMON_KAFKA_BOOTSTRAP), score, store.

    Start several (with different --web-port on one host) in one --group to share partitions.
    GET /health, /ready on the web port report lag, batch latency and throughput.
    """
    import faust

    from pipeline.kafka.app import WorkerOptions, build_processors, make_app
    from pipeline.kafka.lag import WorkerStats

    settings = obj.settings(database_url=database_url, batch_size=batch_size)
    opts = WorkerOptions.from_settings(
        settings, turns_topic=turns_topic, phrases_topic=phrases_topic, dlq_topic=dlq_topic,
        partitions=partitions, group=group, within_s=within, web_port=web_port,
        web_host=web_host)
    procs = build_processors(settings, migrate=not no_migrate)
    stats = WorkerStats()
    app = make_app(opts, procs, stats)
    worker = faust.Worker(app, loglevel=settings.log_level, quiet=True)
    worker.execute_from_commandline()


@cli.command("produce")
@click.argument("files", nargs=-1, required=True)
@click.option("--topic", default=None, help="Target topic (default: CHATMON_KAFKA_TURNS_TOPIC).")
@click.option("--rate", type=float, default=None, help="Turns per second (default: unlimited).")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@pass_ctx
def produce_cmd(obj: Ctx, files: tuple[str, ...], topic: str | None, rate: float | None,
                no_progress: bool, as_json: bool) -> None:
    """Replay JSON Lines FILES (or - for stdin) into the turns topic, keyed by conversation,
    acks=all. Invalid lines are reported (reason, line) on stderr and not sent."""
    from pipeline.kafka.producer import produce

    settings = obj.settings()

    def invalid(source: str, position: str, reason: str) -> None:
        click.echo(f"invalid: {source} {position}: {reason}", err=True)

    summary = produce(files, settings.kafka_bootstrap, topic or settings.kafka_turns_topic,
                      rate=rate, max_text_chars=settings.max_text_chars,
                      progress=not no_progress and sys.stderr.isatty(), on_invalid=invalid)
    if as_json:
        click.echo(json.dumps(summary.as_dict()))
    else:
        click.echo(f"sent {summary.sent} turns, {len(summary.invalid)} invalid lines not sent, "
                   f"{summary.failed} failed, in {summary.seconds:.1f}s")
    if summary.failed:
        sys.exit(1)


@cli.group("topics")
def topics_group() -> None:
    """Kafka topics of the worker."""


@topics_group.command("create")
@_topic_options
@click.option("--replication", type=int, default=1, show_default=True)
@pass_ctx
def topics_create(obj: Ctx, turns_topic: str | None, phrases_topic: str | None,
                  dlq_topic: str | None, partitions: int | None, replication: int) -> None:
    """Create the turns, phrases and dead-letter topics (existing ones are left as they are)."""
    from pipeline.kafka.admin import create_topics

    s = obj.settings()
    names = [turns_topic or s.kafka_turns_topic, phrases_topic or s.kafka_phrases_topic,
             dlq_topic or s.kafka_dlq_topic]
    result = create_topics(s.kafka_bootstrap, names, partitions or s.kafka_partitions, replication)
    for name, state in result.items():
        click.echo(f"{name}: {state}")
