"""``chatmon eval``: a detector's quality on a public labelled set."""

from __future__ import annotations

import json
from pathlib import Path

import click

from pipeline.cli.context import Ctx, pass_ctx


@click.command("eval")
@click.argument("bench")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--judge", "judge_url", metavar="URL", help="kumar only: also run the shipped "
              "EPITOME rubrics through this OpenAI-compatible judge endpoint and print its "
              "kappa per dimension beside the published figures and the classifier's.")
@click.option("--model", help="--judge: the judge model.")
@click.option("--api-key-env", default="CHATMON_JUDGE_API_KEY", show_default=True,
              help="--judge: environment variable holding the API key.")
@click.option("--concurrency", type=click.IntRange(1, 64), default=4, show_default=True,
              help="--judge: requests in flight at once.")
@pass_ctx
def eval_cmd(obj: Ctx, bench: str, path: Path, as_json: bool, judge_url: str | None,
             model: str | None, api_key_env: str, concurrency: int) -> None:
    """A detector's quality on a public labelled set: BENCH at PATH (the set's folder, e.g.
    ../shared/evaldata/presidio-synth-pii/dev). Thresholds come from shipped policy;
    presidio-synth also reports a cross-validation grouped by template under
    detail.grouped_cv, with thresholds re-picked on the other folds. kumar --judge URL
    --model NAME measures an LLM judge (docs/judge.md). benign PATH (a folder or a file of
    benign traffic: chatmon events with an optional terms.json, replay conversations, or the
    Welivita-Pu ratings file) reports flagged replies per 1,000, the pages and tickets the alert
    rules would raise, catalogue terms redacted and missed empathy on closings
    (docs/quality.md)."""
    from pipeline.eval import BENCHES, run_benchmark

    if bench not in BENCHES:
        raise click.BadParameter(f"unknown benchmark {bench!r}; known: {', '.join(BENCHES)}",
                                 param_hint="BENCH")
    from pipeline.scoring.suite import set_default_encoder_backend

    set_default_encoder_backend(obj.settings().encoder_backend)
    if judge_url is not None:
        _judge_kumar(obj, bench, path, as_json, judge_url, model, api_key_env, concurrency)
        return
    result = run_benchmark(bench, path, obj.settings()).as_dict()
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    click.echo(f"{result['benchmark']} ({result['detector']}, n={result['n']})")
    for k, v in result["metrics"].items():
        click.echo(f"  {k:<28} {v}")


def _judge_kumar(obj: Ctx, bench: str, path: Path, as_json: bool, url: str, model: str | None,
                 key_env: str, concurrency: int) -> None:
    from pipeline.eval.judge_kumar import evaluate_kumar_judge, render_table
    from pipeline.judge.runner import JudgeOptions
    from pipeline.probe.client import Endpoint
    from pipeline.settings import secret_from_env

    if bench != "kumar":
        raise click.BadParameter("--judge works with the kumar benchmark only",
                                 param_hint="--judge")
    if not model:
        raise click.UsageError("--judge needs --model (the judge model)")
    endpoint = Endpoint(url, model, temperature=0.0, max_tokens=400, extra=(("seed", 0),))
    settings = obj.settings()
    key = settings.judge_api_key if key_env == "CHATMON_JUDGE_API_KEY" \
        else secret_from_env(key_env)
    options = JudgeOptions(sample_rate=1.0, concurrency=concurrency)
    result = evaluate_kumar_judge(path, settings, endpoint, key, options).as_dict()
    click.echo(json.dumps(result, indent=2) if as_json else render_table(result))
