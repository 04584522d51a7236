"""``chatmon models fetch|list``: production model weights in the local model directory."""

from __future__ import annotations

import json

import click

from pipeline.cli.context import Ctx, pass_ctx


@click.group("models")
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


@models_group.command("warm")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@pass_ctx
def models_warm(obj: Ctx, as_json: bool) -> None:
    """Load every enabled detector as run, serve and worker do, and score each one's examples
    once: the int8 ONNX exports are written to the export cache now, not on the first turn.
    Image builds run it (deploy/Dockerfile); the cache is ~/.cache/chatmon/onnx (HOME moves
    it)."""
    from pipeline.scoring.warm import warm

    out = warm(obj.settings())
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    click.echo(f"warmed {len(out['detectors'])} detectors on {out['examples_scored']} examples "
               f"in {out['seconds']} s")
    for name, version in out["detectors"].items():
        click.echo(f"  {name:<14} {version}")
    click.echo(f"ONNX exports in {out['onnx_cache_dir']}:")
    for f in out["onnx_cache_files"]:
        click.echo(f"  {f}")
