"""What every ``chatmon`` command shares: the settings context, and small option parsers."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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


def client_options(key_env: str) -> list[Any]:
    """The HTTP client's options that ``chatmon probe`` and ``chatmon judge`` share: the key's
    variable and header, the timeout, retries and backoff (``pipeline/probe/client.py``)."""
    return [
        click.option("--api-key-env", default=key_env, show_default=True,
                     help="Environment variable holding the API key (never logged or stored)."),
        click.option("--auth-header", default="Authorization", show_default=True,
                     help="Header for the key: 'Bearer KEY' in Authorization, the bare key in "
                     "any other (e.g. x-api-key)."),
        click.option("--timeout", type=click.FloatRange(0.1), default=60.0, show_default=True,
                     help="Seconds to wait for one answer."),
        click.option("--retries", type=click.IntRange(0, 20), default=3, show_default=True,
                     help="Retries per request on 429, 5xx, timeouts and connection errors."),
        click.option("--backoff", type=click.FloatRange(0.0), default=1.0, show_default=True,
                     help="First retry wait in seconds; doubles per retry (Retry-After wins)."),
    ]


def topic_options(fn):  # type: ignore[no-untyped-def]
    fn = click.option("--dlq-topic", default=None,
                      help="Dead-letter topic (default turns.dlq).")(fn)
    fn = click.option("--phrases-topic", default=None,
                      help="Stage-2 topic keyed by bot (default phrases).")(fn)
    fn = click.option("--turns-topic", default=None, help="Input topic (default turns).")(fn)
    fn = click.option("--partitions", type=int, default=None,
                      help="Partitions per topic (default 8).")(fn)
    return fn
