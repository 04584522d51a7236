"""``chatmon policy check FILE``: validate a policy file (docs/review.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from pipeline.cli.context import Ctx, pass_ctx


@click.group("policy")
def policy_group() -> None:
    """Per-tenant and per-bot thresholds and allow-list entries (a TOML policy file)."""


@policy_group.command("check")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--strict", is_flag=True, help="Exit non-zero on warnings too.")
@pass_ctx
def policy_check(obj: Ctx, file: Path, strict: bool) -> None:
    """Validate a policy FILE: print each error (naming the key and the rule) and exit 1, or
    print its version and any warnings (unknown labels, expired allow-list entries)."""
    from pipeline.policy.check import check_file
    from pipeline.policy.file import PolicyFileError

    try:
        result = check_file(file, obj.settings().thresholds)
    except PolicyFileError as exc:
        click.echo(f"{file}: {len(exc.problems)} error(s)", err=True)
        for problem in exc.problems:
            click.echo(f"  error: {problem}", err=True)
        sys.exit(1)
    click.echo(result.summary())
    for warning in result.warnings:
        click.echo(f"  warning: {warning}", err=True)
    if strict and result.warnings:
        sys.exit(1)
