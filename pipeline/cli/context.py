"""What every ``chatmon`` command shares: the settings context, and small option parsers."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click

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


def parse_when(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise click.BadParameter(f"not an ISO 8601 date or time: {value!r}") from exc
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def safe_url(url: str) -> str:
    """An endpoint's URL without credentials or query string, for the runs table."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def topic_options(fn):  # type: ignore[no-untyped-def]
    fn = click.option("--dlq-topic", default=None,
                      help="Dead-letter topic (default turns.dlq).")(fn)
    fn = click.option("--phrases-topic", default=None,
                      help="Stage-2 topic keyed by bot (default phrases).")(fn)
    fn = click.option("--turns-topic", default=None, help="Input topic (default turns).")(fn)
    fn = click.option("--partitions", type=int, default=None,
                      help="Partitions per topic (default 8).")(fn)
    return fn
