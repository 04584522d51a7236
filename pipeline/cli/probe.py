"""``chatmon probe``: send a scenario suite to a live bot and store the scored conversations."""

from __future__ import annotations

import json
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import click

from pipeline.cli.context import Ctx, client_options, pass_ctx, safe_url

DEFAULT_KEY_ENV = "CHATMON_PROBE_API_KEY"


def _options(fn):  # type: ignore[no-untyped-def]
    """The HTTP options, kept apart from the command so each stays readable."""
    for opt in reversed([
        click.option("--api", type=click.Choice(["openai", "json"]), default="openai",
                     show_default=True, help="openai: POST {URL}/chat/completions (vLLM, Ollama, "
                     "llama.cpp, TGI, hosted LLMs). json: POST {URL} with --field mappings."),
        click.option("--field", "fields", multiple=True, metavar="KEY=PATH",
                     help="--api json: where things go, as dotted paths. KEY: messages, message, "
                     "system, model, conversation, reply (defaults messages=messages, "
                     "model=model, reply=reply; an empty PATH unsets one)."),
        *client_options(DEFAULT_KEY_ENV),
        click.option("--rate", type=click.FloatRange(0.0, min_open=True), default=None,
                     help="At most this many requests per second (default: no limit)."),
        click.option("--concurrency", type=click.IntRange(1, 256), default=4, show_default=True,
                     help="Conversations held at the same time."),
        click.option("--temperature", type=float, default=None,
                     help="Sent as `temperature` (default: the server's)."),
        click.option("--max-tokens", type=click.IntRange(1), default=None,
                     help="Sent as `max_tokens` (default: the server's)."),
    ]):
        fn = opt(fn)
    return fn


@click.command("probe")
@click.option("--endpoint", metavar="URL", help="The bot's base URL, e.g. http://127.0.0.1:8000/v1.")
@click.option("--model", help="Model name sent to the endpoint, and stored with the turns.")
@click.option("--suite", "suite_file", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Your own scenario suite (JSON, same format as the built-in).")
@click.option("--category", "categories", multiple=True,
              help="Only scenarios of this category (repeatable).")
@click.option("--system-prompt", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="File with the system prompt to send first.")
@click.option("--bot-id", default="probe", show_default=True, help="bot_id of the stored turns.")
@click.option("--store-as", default=None,
              help="Model name to store instead of --model (e.g. model+prompt-v2).")
@click.option("--tenant", default=None, help="tenant of the stored turns.")
@click.option("--label", default="", help="Run label: a new label makes new conversations; the "
              "same one resumes (scenarios already stored are not sent again).")
@_options
@click.option("--list", "list_only", is_flag=True,
              help="Validate the suite and list its scenarios; send nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option("--database-url", default=None, help="Overrides CHATMON_DATABASE_URL.")
@pass_ctx
def probe_cmd(obj: Ctx, endpoint: str | None, model: str | None, suite_file: Path | None,
              categories: tuple[str, ...], list_only: bool, as_json: bool, no_progress: bool,
              database_url: str | None, **opts: Any) -> None:
    """Send the scenario suite (built in: grief, fear, anger, frustration, shame, plain
    requests, multi-turn, manipulation and personal-data bait, paired user groups) to a live bot
    and store the conversations, scored by the same pipeline as production turns.

    A failed scenario is reported and the rest go on; the exit status is 1 when any failed.
    Ctrl-C keeps what is stored (exit status 130); running the same command again resumes.
    """
    from pipeline.probe.suite import load_suite

    suite = load_suite(suite_file).select(categories)
    if list_only:
        click.echo(_listing(suite, as_json))
        return
    if not endpoint or not model:
        raise click.UsageError("--endpoint and --model are required (or --list)")
    result = _probe(obj, suite, endpoint, model, database_url,
                    progress=not no_progress and not as_json and sys.stderr.isatty(), **opts)
    out = result.as_dict()
    click.echo(json.dumps(out, indent=2) if as_json else _render(out))
    if result.interrupted:
        sys.exit(130)
    if result.failed:
        sys.exit(1)


def _probe(obj: Ctx, suite: Any, url: str, model: str, database_url: str | None,
           progress: bool, **o: Any) -> Any:
    from pipeline.embedded.runner import build_processor
    from pipeline.probe.client import Endpoint, FieldMap, RetryPolicy
    from pipeline.probe.runner import ProbeOptions, run_probe
    from pipeline.settings import secret_from_env

    settings = obj.settings(database_url=database_url)
    try:
        fields = FieldMap.parse(list(o["fields"]))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--field") from exc
    prompt = o["system_prompt"].read_text(encoding="utf-8") if o["system_prompt"] else None
    endpoint = Endpoint(url, model, o["api"], fields, prompt, o["temperature"], o["max_tokens"],
                        o["auth_header"])
    key = (settings.probe_api_key if o["api_key_env"] == DEFAULT_KEY_ENV
           else secret_from_env(o["api_key_env"]))
    options = ProbeOptions(o["bot_id"], o["store_as"], o["tenant"], o["label"], o["concurrency"],
                           o["rate"], RetryPolicy(o["retries"], o["backoff"],
                                                  timeout_s=o["timeout"]), progress)
    run_id = str(uuid.uuid4())
    # every record is built by the probe: its own "probe" metadata is stored unredacted
    proc = build_processor(settings, run_id, "probe", _safe_url(url), own_metadata="probe")
    result = run_probe(suite, endpoint, proc, options, key, run_id)
    proc.sink.finish_run(run_id, result.as_dict(), result.seconds)
    return result


def _safe_url(url: str) -> str:
    return "probe " + safe_url(url)


def _listing(suite: Any, as_json: bool) -> str:
    by_category = Counter(s.category for s in suite.scenarios)
    if as_json:
        return json.dumps({"suite": suite.name, "version": suite.version,
                           "scenarios": len(suite.scenarios),
                           "by_category": dict(sorted(by_category.items())),
                           "items": [{**s.marker(), "turns": list(s.turns)}
                                     for s in suite.scenarios]}, indent=2)
    lines = [f"suite {suite.name} {suite.version}: {len(suite.scenarios)} scenarios"]
    lines += [f"  {cat:<20} {n:>4}" for cat, n in sorted(by_category.items())]
    return "\n".join(lines)


def _render(s: dict[str, Any]) -> str:
    label = f", label {s['label']}" if s["label"] else ""
    lines = ["interrupted: what is stored stays; run the same command again to resume"
             ] if s["interrupted"] else []
    lines += [
        f"chatmon probe: model {s['model']} (stored as {s['stored_model']}, bot {s['bot_id']}), "
        f"suite {s['suite']} {s['suite_version']}{label}",
        f"  scenarios              {s['scenarios']}",
        f"  conversations stored   {s['conversations_stored']}",
        f"  already stored         {s['already_stored']} (not sent again)",
        f"  turns stored           {s['turns_stored']}",
        f"  requests / retries     {s['requests']} / {s['retries']}",
        f"  failed                 {len(s['failed'])}",
    ]
    lines += [f"    {f['scenario']}: {f['error']}" for f in s["failed"]]
    lines += ["", "flagged by policy:"]
    lines += [f"  {lab:<36} {n:>5}" for lab, n in s["flagged_by_label"].items()] or ["  none"]
    lines += ["", f"compare: chatmon compare --model {s['stored_model']} --model OTHER_MODEL"]
    return "\n".join(lines)
