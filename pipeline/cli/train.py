"""``chatmon train``: opt-in models fitted on data the user is entitled to use."""

from __future__ import annotations

from pathlib import Path

import click


@click.group("train")
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
    from pipeline.training.empathy import train_empathy

    path = train_empathy(data_dir, out_dir)
    click.echo(f"wrote {path} (read {out_dir / 'LICENSE-NOTE.txt'} before using it)")
