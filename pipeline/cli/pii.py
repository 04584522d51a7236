"""``chatmon pii catalogue learn|show``: a bot's recurring names, as keyed digests
(docs/models/pii.md, "A bot's catalogue")."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli.context import Ctx, pass_ctx


@click.group("pii")
def pii_group() -> None:
    """The PII detector's learned inputs."""


@pii_group.group("catalogue")
def catalogue_group() -> None:
    """A bot's catalogue: names that recur across its conversations (menu items, titles,
    venues) are not people. Learned from a file of traffic; only keyed digests are kept."""


@catalogue_group.command("learn")
@click.argument("files", nargs=-1, required=True)
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The catalogue file to write (JSON; name it in "
              "CHATMON_DETECTOR_OPTIONS='{\"pii\": {\"catalogue\": \"FILE\"}}').")
@click.option("--bot", "bots", multiple=True, metavar="BOT",
              help="Learn only this bot's turns (repeatable); default: every bot in FILES, "
              "each apart.")
@click.option("--min-conversations", type=click.IntRange(2), default=5, show_default=True,
              help="A name is a catalogue entry when seen in at least this many distinct "
              "conversations of its bot ...")
@click.option("--min-share", type=click.FloatRange(0.0, 1.0), default=0.01, show_default=True,
              help="... and in at least this share of the bot's conversations.")
@pass_ctx
def learn_cmd(obj: Ctx, files: tuple[str, ...], out: Path, bots: tuple[str, ...],
              min_conversations: int, min_share: float) -> None:
    """Count, per bot, the distinct conversations each PERSON or LOCATION span of FILES (chatmon
    events, JSON Lines, gzipped or not, '-' for stdin; or replay conversations) was seen in, and
    write the keyed digests of those over both thresholds to --out. Spans with a given name, a
    person cue before them ("the order is for", "my name is", "ask for") or that are a listed
    place are never counted. The file holds no span text: HMAC-SHA256 digests under a random
    key of its own, and counts."""
    from pipeline.pii_catalogue.learn import learn_files, summary

    settings = obj.settings()
    learned = learn_files(files, out, settings.detector_options.get("pii", {}),
                          min_conversations, min_share, bots, settings.max_text_chars)
    click.echo(f"{out}: {learned.turns} turns read ({learned.rejected} rejected), digest "
               f"{_digest(out)}")
    for line in summary(learned.catalogue):
        click.echo(f"  {line}")


@catalogue_group.command("show")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def show_cmd(file: Path) -> None:
    """Check a catalogue FILE and print its digest (in the PII detector's version) and, per
    bot, its conversations and number of entries."""
    from detectors.pii.recurrence import loads
    from pipeline.pii_catalogue.learn import summary

    catalogue = loads(file.read_bytes(), str(file))
    click.echo(f"{file}: digest {catalogue.digest}, min_conversations "
               f"{catalogue.min_conversations}, min_share {catalogue.min_share}")
    for line in summary(catalogue):
        click.echo(f"  {line}")


def _digest(path: Path) -> str:
    from detectors.pii.recurrence import loads

    return loads(path.read_bytes(), str(path)).digest
