"""``chatmon purge``: retention and deletion on request, and the audit log of both."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from pipeline.cli.context import Ctx, pass_ctx


@click.command("purge")
@click.option("--expired", is_flag=True,
              help="Delete rows past their tenant's retention (the policy file's retention_days); "
                   "on PostgreSQL whole days past every tenant's cut are dropped as partitions.")
@click.option("--conversation", "conversations", multiple=True, metavar="ID",
              help="Delete everything about this conversation (repeat for more).")
@click.option("--conversations-from", "from_file", type=click.File("r"), default=None,
              help="Conversation ids to delete, one a line ('-' for stdin).")
@click.option("--tenant", default=None, help="Delete everything about this tenant.")
@click.option("--bot", default=None, help="Delete everything about this bot_id.")
@click.option("--dry-run", is_flag=True, help="Print what would go; delete nothing.")
@click.option("--log", "show_log", is_flag=True,
              help="List the audit log (with --conversation: the purges that named it).")
@click.option("--limit", type=click.IntRange(1, 100_000), default=50, show_default=True,
              help="Audit log rows to list.")
@click.option("--batch-size", type=click.IntRange(1, 100_000), default=5000, show_default=True,
              help="Turns per delete transaction.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object (the log: an array).")
@click.option("--database-url", default=None, help="Overrides CHATMON_DATABASE_URL.")
@click.option("--policy", "policy_file", type=click.Path(exists=True, dir_okay=False,
              path_type=Path), default=None,
              help="Policy file with the retention (CHATMON_POLICY_FILE).")
@pass_ctx
def purge_cmd(obj: Ctx, expired: bool, conversations: tuple[str, ...], from_file: Any,
              tenant: str | None, bot: str | None, dry_run: bool, show_log: bool, limit: int,
              batch_size: int, as_json: bool, database_url: str | None,
              policy_file: Path | None) -> None:
    """Delete stored data for retention or on request, with proof.

    One of --expired, --conversation ID (repeatable, or --conversations-from FILE), --tenant T,
    --bot B. A conversation, tenant or bot goes from every table (turns, findings, reviews,
    dead letters, weekly counts) and is recorded as deleted: its events with a time at or
    before now are never stored again. Running `chatmon serve` and `chatmon worker` processes
    remove it from their in-memory state and Kafka tables within CHATMON_DELETION_POLL_S.
    Every purge writes an audit row (never an id or text: conversations by the SHA-256 of
    their id); --log lists them.
    """
    from pipeline.store.db import open_store

    ids = list(conversations) + ([line.strip() for line in from_file if line.strip()]
                                 if from_file is not None else [])
    settings = obj.settings(database_url=database_url, policy_file=policy_file)
    if show_log:
        _show_log(open_store(settings.database_url), limit, ids, as_json)
        return
    request = _request(settings, expired, ids, tenant, bot)
    from pipeline.lifecycle.purge import Purger

    command = "chatmon purge --" + ("expired" if expired else "conversation" if ids
                                    else "tenant" if tenant is not None else "bot")
    purger = Purger(open_store(settings.database_url), command, batch_size=batch_size)
    result = purger.run(request, dry_run=dry_run)
    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=2))
        return
    click.echo(_summary(result))


def _request(settings: Any, expired: bool, ids: list[str], tenant: str | None,
             bot: str | None) -> Any:
    from pipeline.lifecycle.purge import EXPIRED, Request
    from pipeline.lifecycle.retention import Retention
    from pipeline.policy.engine import Policy
    from pipeline.store.deletions import BOT, CONVERSATION, TENANT

    asked = [expired, bool(ids), tenant is not None, bot is not None]
    if sum(asked) != 1:
        raise click.UsageError("give exactly one of --expired, --conversation (or "
                               "--conversations-from), --tenant, --bot, or --log")
    if expired:
        retention = Retention.from_policy(Policy.from_settings(settings))
        if not retention.configured:
            raise click.UsageError("no retention is configured: set retention_days in the "
                                   "policy file (globally or under [tenants.NAME]) and pass "
                                   "it with --policy or CHATMON_POLICY_FILE")
        return Request(EXPIRED, retention=retention)
    for name, value in (("--tenant", tenant), ("--bot", bot)):
        if value is not None and not value.strip():
            raise click.BadParameter("an empty name matches nothing", param_hint=name)
    if ids:
        return Request(CONVERSATION, conversations=tuple(ids))
    return Request(TENANT, tenant=tenant) if tenant is not None else Request(BOT, bot=bot)


def _summary(result: Any) -> str:
    rows = result.rows
    what = ", ".join(f"{table} {n:,}" for table, n in sorted(rows.items())) or "nothing"
    if result.dry_run:
        lines = [f"dry run: would purge {what}"]
    else:
        lines = [f"purged {what}"]
        if result.purge_id:
            lines.append(f"audit log: {result.purge_id} (chatmon purge --log)")
    for tenant, cut in result.cutoffs.items():
        lines.append(f"  tenant {tenant or '(none)'}: before {cut}")
    if result.dead_letter_cutoff is not None:
        lines.append(f"  dead letters: before {result.dead_letter_cutoff}")
    if result.partitions:  # PostgreSQL: whole days dropped (docs/deploy.md)
        lines.append(f"  partitions dropped: {len(result.partitions)} "
                     f"({', '.join(sorted(result.partitions)[:4])}"
                     f"{', ...' if len(result.partitions) > 4 else ''})")
    if not result.dry_run and result.request.scope != "expired":
        lines.append("serve and worker processes drop it from their state within "
                     "CHATMON_DELETION_POLL_S")
    return "\n".join(lines)


def _show_log(engine: Any, limit: int, ids: list[str], as_json: bool) -> None:
    from pipeline.lifecycle.audit import purge_log

    if len(ids) > 1:
        raise click.UsageError("--log takes at most one --conversation")
    rows = purge_log(engine, limit, ids[0] if ids else None)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no purges")
        return
    click.echo(f"{'started (UTC)':<20} {'status':<8} {'command':<36} what -> rows")
    for r in rows:
        req = r["request"]
        what = (f"{len(req['conversations'])} conversation(s)" if "conversations" in req
                else f"tenant {req['tenant']}" if "tenant" in req and r["scope"] == "tenant"
                else f"bot {req['bot']}" if "bot" in req else "expired")
        done = ", ".join(f"{t} {n:,}" for t, n in sorted(r["rows"].items())) or "nothing"
        click.echo(f"{r['started_at'][:19]:<20} {r['status']:<8} "
                   f"{r['command'][:36]:<36} {what} -> {done}")
