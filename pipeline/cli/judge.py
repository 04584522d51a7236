"""``chatmon judge``: a second opinion from an LLM on stored, redacted replies (docs/judge.md)."""

from __future__ import annotations

import json
import signal
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import click

from pipeline.cli.context import Ctx, client_options, parse_when, safe_url

DEFAULT_KEY_ENV = "CHATMON_JUDGE_API_KEY"


def _endpoint_options(fn):  # type: ignore[no-untyped-def]
    for opt in reversed([
        *client_options(DEFAULT_KEY_ENV),
        click.option("--rpm", type=click.FloatRange(0.0, min_open=True), default=None,
                     help="Budget: at most this many requests per minute (default: no limit)."),
        click.option("--tokens-per-day", type=click.IntRange(1), default=None,
                     help="Budget: tokens per UTC day for this judge model, kept in the store "
                     "(default: no limit)."),
        click.option("--concurrency", type=click.IntRange(1, 64), default=4, show_default=True,
                     help="Requests in flight at once."),
        click.option("--max-tokens", type=click.IntRange(16), default=400, show_default=True,
                     help="Sent as max_tokens: the longest answer asked for."),
        click.option("--seed", type=int, default=0, show_default=True,
                     help="Sent as seed (temperature is always 0)."),
        click.option("--no-seed", is_flag=True, help="Do not send a seed (for servers that "
                     "refuse the field)."),
    ]):
        fn = opt(fn)
    return fn


@click.group("judge", invoke_without_command=True)
@click.option("--endpoint", metavar="URL", help="OpenAI-compatible base URL, e.g. "
              "http://127.0.0.1:8000/v1 (vLLM, Ollama, llama.cpp, a hosted LLM).")
@click.option("--model", help="The judge model, pinned: stored with every finding.")
@click.option("--rubric", "rubrics", multiple=True, metavar="NAME|FILE",
              help="A shipped rubric (epitome_er, epitome_ip, epitome_ex, empathy, "
              "manipulation) or a TOML file; repeatable. Default: the empathy rubrics.")
@click.option("--sample-rate", type=click.FloatRange(0, 1), default=0.1, show_default=True,
              help="Share of assistant turns judged, by a hash of the turn key.")
@click.option("--always", "always", multiple=True, metavar="RULE",
              help="Always judge replies matching RULE ('LABEL flagged', 'LABEL < 0.3'); "
              "repeatable; replaces the defaults (manipulation.* flagged, empathy.score < 0.3, "
              "empathy.missed flagged).")
@click.option("--no-always", is_flag=True, help="No always-judge rules: the sample only.")
@click.option("--since", help="Only turns from this time (ISO 8601).")
@click.option("--until", help="Only turns before this time (ISO 8601).")
@click.option("--follow", is_flag=True, help="Keep running: judge turns as they are stored.")
@click.option("--kafka", is_flag=True, help="Keep running as a Kafka consumer group on the "
              "phrases topic (the stored replies the workers hand on).")
@click.option("--group", default="chatmon-judge", show_default=True,
              help="--kafka: the judge's consumer group.")
@click.option("--topic", default=None, help="--kafka: the topic (default "
              "CHATMON_KAFKA_PHRASES_TOPIC).")
@click.option("--poll", type=click.FloatRange(0.05), default=5.0, show_default=True,
              help="--follow/--kafka: seconds between looks for new turns, and the first wait "
              "after the endpoint failed (it doubles, up to 12 polls).")
@click.option("--settle", type=click.FloatRange(0), default=10.0, show_default=True,
              help="--follow: only turns stored at least this many seconds ago (a batch "
              "another process is still writing is not passed over).")
@_endpoint_options
@click.option("--metrics-port", type=int, default=None,
              help="Serve Prometheus metrics on this port while judging.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.option("--database-url", default=None, help="Overrides CHATMON_DATABASE_URL.")
@click.pass_context
def judge_group(ctx: click.Context, **o: Any) -> None:
    """Ask an LLM judge about stored, redacted replies (with the user turns they answer) and
    store its answers as judge.<criterion> findings. Runs apart from scoring: a slow or dead
    endpoint delays only the judge. Judging the same reply again (same rubric version and
    judge model) sends nothing. Exit status 1 when replies were left unjudged (endpoint
    unavailable, budget spent) or failed."""
    if ctx.invoked_subcommand is not None:
        return
    if not o["endpoint"] or not o["model"]:
        raise click.UsageError("--endpoint and --model are required (or: chatmon judge check)")
    if o["follow"] and o["kafka"]:
        raise click.UsageError("--follow and --kafka are two ways of running: pick one")
    report = _run(ctx.ensure_object(Ctx), o)
    out = report.as_dict()
    click.echo(json.dumps(out, indent=2) if o["as_json"] else _render(out))
    if report.stopped or report.failed:
        sys.exit(1)


def _judge(obj: Ctx, o: dict[str, Any]) -> Any:
    from pipeline.judge.rubric import resolve
    from pipeline.judge.runner import Judge, JudgeOptions
    from pipeline.judge.select import DEFAULT_RULES, Rule
    from pipeline.metrics import get_metrics, start_http_server
    from pipeline.policy.engine import Policy
    from pipeline.probe.client import Endpoint, RetryPolicy
    from pipeline.settings import secret_from_env
    from pipeline.store import db

    settings = obj.settings(database_url=o["database_url"])
    rubrics = resolve(list(o["rubrics"]))
    try:
        rules = tuple(Rule.parse(r) for r in ((o["always"] or DEFAULT_RULES)
                                              if not o["no_always"] else ()))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--always") from exc
    extra = (("seed", None if o["no_seed"] else o["seed"]),)
    endpoint = Endpoint(o["endpoint"], o["model"], temperature=0.0, max_tokens=o["max_tokens"],
                        auth_header=o["auth_header"], extra=extra)
    key = (settings.judge_api_key if o["api_key_env"] == DEFAULT_KEY_ENV
           else secret_from_env(o["api_key_env"]))
    options = JudgeOptions(o["sample_rate"], rules, o["rpm"], o["tokens_per_day"],
                           o["concurrency"], RetryPolicy(o["retries"], o["backoff"],
                                                         timeout_s=o["timeout"]))
    db.upgrade(settings.database_url)
    engine = db.make_engine(settings.database_url)
    if o["metrics_port"]:
        start_http_server(o["metrics_port"])
    run_id = str(uuid.uuid4())
    return settings, Judge(engine, endpoint, rubrics, options, Policy.from_settings(settings),
                           key, run_id, get_metrics())


def _run(obj: Ctx, o: dict[str, Any]) -> Any:
    from pipeline import __version__
    from pipeline.alerts.embedded import alerting_session
    from pipeline.judge.follow import follow, judge_window
    from pipeline.judge.kafka import KafkaOptions, consume
    from pipeline.judge.select import Window
    from pipeline.store.sink import Sink

    settings, judge = _judge(obj, o)
    mode = "kafka" if o["kafka"] else "follow" if o["follow"] else "once"
    sink = Sink(judge.engine)
    versions = {r.label: f"{r.key}/{judge.model}" for r in judge.rubrics}
    sink.start_run(judge.run_id, "judge", f"judge {mode} {safe_url(o['endpoint'])}", versions,
                   __version__)
    since, until = parse_when(o["since"]), parse_when(o["until"])
    stop = threading.Event()
    if mode == "once":
        report = judge_window(judge, Window(since, until))
    else:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        with alerting_session(settings, judge.metrics):
            if mode == "follow":
                report = follow(judge, stop, o["poll"], since, o["settle"])
            else:
                kopts = KafkaOptions(settings.kafka_bootstrap,
                                     o["topic"] or settings.kafka_phrases_topic, o["group"],
                                     o["poll"], settings.kafka_session_timeout_s)
                report = consume(judge, kopts, stop)
    sink.finish_run(judge.run_id, report.as_dict(), 0.0)
    return report


def _render(s: dict[str, Any]) -> str:
    lines = [f"chatmon judge: model {s['model']}, rubrics {', '.join(s['rubrics'])}",
             f"  assistant turns read   {s['turns_read']}",
             f"  selected               {s['turns_selected']} "
             f"({', '.join(f'{k} {v}' for k, v in sorted(s['selected_by'].items())) or '-'})",
             f"  already stored         {s['already_stored']} (sent nothing)",
             f"  requests / retries     {s['requests']} / {s['retries']}, tokens {s['tokens']}"]
    lines += ["", f"{'label':<28} {'judged':>7} {'cached':>7} {'failed':>7}"]
    for label in sorted(set(s["judged"]) | set(s["from_cache"]) | set(s["failed"])):
        lines.append(f"{label:<28} {s['judged'].get(label, 0):>7} "
                     f"{s['from_cache'].get(label, 0):>7} {s['failed'].get(label, 0):>7}")
    if s["stopped"]:
        lines += ["", f"stopped: {s['stopped']}; {s['not_judged']} left for the next run"]
    return "\n".join(lines)


@judge_group.command("check")
@click.argument("rubric", metavar="FILE|NAME")
@click.option("--show-prompt", is_flag=True, help="Also print the system prompt it makes.")
def judge_check(rubric: str, show_prompt: bool) -> None:
    """Validate a rubric FILE (or show a shipped one by NAME): each error names its key and
    the rule it breaks (exit status 1)."""
    from pipeline.judge.prompt import system_prompt
    from pipeline.judge.rubric import RubricError, load_rubric_file, shipped

    try:
        r = load_rubric_file(Path(rubric)) if rubric.endswith(".toml") or "/" in rubric \
            else shipped(rubric)
    except RubricError as exc:
        click.echo(f"{exc.source}: {len(exc.problems)} error(s)", err=True)
        for problem in exc.problems:
            click.echo(f"  error: {problem}", err=True)
        sys.exit(1)
    scale = f"{r.scale.min}-{r.scale.max}" + (" (ordinal)" if r.scale.ordinal else "")
    click.echo(f"rubric {rubric} is valid: {r.label} version {r.version}, scale {scale}, "
               f"{len(r.examples)} examples, compared with {r.compare_to or 'no classifier'}")
    if show_prompt:
        click.echo("\n" + system_prompt(r))
