"""``chatmon eval``: a detector's quality on a public labelled set."""

from __future__ import annotations

import json
from pathlib import Path

import click

from pipeline.cli.context import Ctx, pass_ctx


@click.command("eval")
@click.argument("bench")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@pass_ctx
def eval_cmd(obj: Ctx, bench: str, path: Path, as_json: bool) -> None:
    """A detector's quality on a public labelled set: BENCH at PATH (the set's folder, e.g.
    ../shared/evaldata/presidio-synth-pii/dev). Thresholds come from shipped policy;
    presidio-synth also reports a cross-validation grouped by template under
    detail.grouped_cv, with thresholds re-picked on the other folds."""
    from pipeline.eval import BENCHES, run_benchmark

    if bench not in BENCHES:
        raise click.BadParameter(f"unknown benchmark {bench!r}; known: {', '.join(BENCHES)}",
                                 param_hint="BENCH")
    from pipeline.scoring.suite import set_default_encoder_backend

    set_default_encoder_backend(obj.settings().encoder_backend)
    result = run_benchmark(bench, path, obj.settings()).as_dict()
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    click.echo(f"{result['benchmark']} ({result['detector']}, n={result['n']})")
    for k, v in result["metrics"].items():
        click.echo(f"  {k:<28} {v}")
