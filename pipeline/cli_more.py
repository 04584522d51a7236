"""More ``chatmon`` commands: findings, serve."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import click

from pipeline.cli import Ctx, cli, pass_ctx


def _when(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise click.BadParameter(f"not an ISO 8601 date or time: {value!r}") from exc
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


@cli.command("findings")
@click.option("--detector", help="Only this detector (e.g. pii).")
@click.option("--label", help="Only this label (e.g. pii.leak).")
@click.option("--bot", help="Only this bot_id.")
@click.option("--conversation", help="Only this conversation_id.")
@click.option("--since", help="Turn time from (ISO 8601, e.g. 2026-11-01).")
@click.option("--until", help="Turn time before (ISO 8601).")
@click.option("--flagged", is_flag=True, help="Only findings flagged by policy thresholds.")
@click.option("--limit", type=click.IntRange(1, 100_000), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="A JSON array of objects.")
@pass_ctx
def findings_cmd(obj: Ctx, detector: str | None, label: str | None, bot: str | None,
                 conversation: str | None, since: str | None, until: str | None,
                 flagged: bool, limit: int, as_json: bool) -> None:
    """Recent stored findings, newest first. Excerpts are redacted; raw PII is never stored."""
    from pipeline.store.db import open_store
    from pipeline.store.queries import recent_findings

    engine = open_store(obj.settings().database_url)
    rows = recent_findings(engine, detector=detector, label=label, bot=bot,
                           conversation=conversation, since=_when(since), until=_when(until),
                           flagged_only=flagged, limit=limit)
    if as_json:
        click.echo(json.dumps(rows, indent=2, default=str))
        return
    if not rows:
        click.echo("no findings")
        return
    header = (f"{'time':<20} {'conversation':<14} {'turn':>4} {'label':<32} {'score':>5} "
              f"{'flag':<4} excerpt")
    click.echo(header)
    for r in rows:
        click.echo(
            f"{r['ts'][:19]:<20} {r['conversation_id'][:14]:<14} {r['turn']:>4} "
            f"{r['label'][:32]:<32} {r['score']:>5.2f} {'yes' if r['flagged'] else '':<4} "
            f"{(r['excerpt'] or '')[:70]}"
        )


@cli.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8080, show_default=True)
@click.option("--database-url", default=None, help="Overrides CHATMON_DATABASE_URL.")
@pass_ctx
def serve_cmd(obj: Ctx, host: str, port: int, database_url: str | None) -> None:
    """The embedded pipeline behind HTTP: POST /v1/turns (one event or a JSON array; bearer
    token from CHATMON_SERVE_TOKEN), GET /health."""
    from pipeline.serve import serve

    serve(obj.settings(database_url=database_url), host, port)


@cli.group("models")
def models_group() -> None:
    """Production model weights in the local model directory (CHATMON_MODEL_DIR)."""


@models_group.command("fetch")
@click.argument("names", nargs=-1)
@click.option("--timeout", type=float, default=60.0, show_default=True)
@pass_ctx
def models_fetch(obj: Ctx, names: tuple[str, ...], timeout: float) -> None:
    """Download and verify the pinned production weights NAMES (default: all) into the model
    directory. Run it where the internet exists (e.g. an image build); detectors only read it."""
    from pipeline.models_fetch import MODELS, fetch

    model_dir = obj.settings().model_dir
    for manifest in fetch(list(names) or list(MODELS), model_dir, timeout):
        click.echo(f"fetched {manifest.get('name', '?')} into {model_dir}")


@models_group.command("list")
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
def models_list(obj: Ctx, as_json: bool) -> None:
    """Known production models and whether they are present in the model directory."""
    from pipeline.models_fetch import list_models

    rows = list_models(obj.settings().model_dir)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        click.echo(f"{r['name']:<24} {'present' if r['present'] else 'missing':<8} {r['dir']}")


@cli.group("train")
def train_group() -> None:
    """Opt-in models fitted on data you are entitled to use (never shipped by default)."""


@train_group.command("empathy")
@click.option("--data", "data_dir", required=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Folder with EPITOME-format CSVs.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path))
def train_empathy_cmd(data_dir: Path, out_dir: Path) -> None:
    """Fit empathy level heads on EPITOME-format data (non-commercial licence: the weights
    inherit it). Use them with detector option weights=OUT/model.npz."""
    from pipeline.train import train_empathy

    path = train_empathy(data_dir, out_dir)
    click.echo(f"wrote {path} (read {out_dir / 'LICENSE-NOTE.txt'} before using it)")
