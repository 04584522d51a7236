"""``chatmon produce``: replay JSON Lines into the Kafka turns topic."""

from __future__ import annotations

import json
import sys

import click

from pipeline.cli.context import Ctx, pass_ctx


@click.command("produce")
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
