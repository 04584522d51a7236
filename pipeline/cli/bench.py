"""``chatmon bench``: throughput, latency and memory per detector and end to end."""

from __future__ import annotations

import json
from pathlib import Path

import click

from pipeline.cli.context import Ctx, pass_ctx


@click.command("bench")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--markdown", "markdown", is_flag=True, help="Print the BENCHMARKS.md page.")
@click.option("--turns", type=int, default=None,
              help="Turns in the measured corpus [default: 5000; 300 with --quick; 100000 "
                   "with --store].")
@click.option("--file", "file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None,
              help="Turns to measure on: chatmon events (JSON Lines) or conversations in the "
                   "cs-transcripts replay format. Default: ../shared/evaldata/cs-transcripts/"
                   "replay_turns.jsonl when present, else the example transcripts.")
@click.option("--batch-size", type=int, default=None,
              help="Turns per batch (settings default; with --store: per Sink.write).")
@click.option("--detectors", default=None,
              help="Comma-separated detectors (default: every enabled detector).")
@click.option("--naive-turns", type=int, default=500, show_default=True,
              help="Turns for the naive one-message-at-a-time baseline (0: skip it).")
@click.option("--no-per-detector", is_flag=True, help="Skip the each-detector-alone runs.")
@click.option("--no-cached", is_flag=True,
              help="Skip the pipeline run with the caches of seen text on (the headline run, "
                   "fresh text with every cache off, always runs).")
@click.option("--quick", is_flag=True,
              help="Only the fresh-text pipeline on 300 turns: a smoke run for CI that prints "
                   "the figures (no per-detector, cached or naive runs; no threshold).")
@click.option("--transformer", is_flag=True,
              help="Instead: a random BERT-base classifier, PyTorch one by one vs ONNX int8 "
                   "sorted batches (production backend speed).")
@click.option("--kafka", is_flag=True,
              help="Instead: end to end through Kafka and `chatmon worker` processes on "
                   "fresh text (--file or the default corpus; pipeline.bench.kafka; "
                   "CHATMON_KAFKA_BOOTSTRAP or --tansu), printed as JSON.")
@click.option("--kafka-workers", type=int, default=1, show_default=True)
@click.option("--kafka-rate", type=float, default=100.0, show_default=True,
              help="Turns/s for the fixed-rate latency phase.")
@click.option("--tansu", is_flag=True, help="Start a local tansu broker for --kafka.")
@click.option("--hostile", is_flag=True,
              help="Instead: hostile texts (one long token, digit runs, repeated separators, "
                   "'Mr. Mr.', 'a.a.a...@', combining marks...) against ordinary text of the "
                   "same length, through the full pipeline: CPU seconds and the ratio "
                   "(--turns turns per text and role, default 20).")
@click.option("--chars", type=click.IntRange(100), default=5000, show_default=True,
              help="With --hostile: characters per text.")
@click.option("--kinds", default=None,
              help="With --hostile: comma-separated text shapes (default: all of them).")
@click.option("--store", is_flag=True,
              help="Instead: the store at scale on PostgreSQL (pipeline.bench.store): a database "
                   "of its own (dropped at the end) filled through the sink with --turns turns "
                   "of a real run's findings over four weeks; times the fill, every weekly-"
                   "dashboard query over 12 weeks, `chatmon report` (and its peak RSS) and "
                   "`purge --expired` of the oldest week.")
@click.option("--postgres-url", envvar="CHATMON_TEST_POSTGRES_URL",
              default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres",
              show_default=True,
              help="With --store: the server to create the bench database on "
                   "(CHATMON_TEST_POSTGRES_URL).")
@click.option("--fill-workers", type=click.IntRange(1, 64), default=1, show_default=True,
              help="With --store: processes writing the fill (the rate is given per process).")
@pass_ctx
def bench_cmd(obj: Ctx, as_json: bool, markdown: bool, turns: int | None, file: Path | None,
              batch_size: int | None, detectors: str | None, naive_turns: int,
              no_per_detector: bool, no_cached: bool, quick: bool, transformer: bool,
              kafka: bool, kafka_workers: int, kafka_rate: float, tansu: bool, hostile: bool,
              chars: int, kinds: str | None, store: bool, postgres_url: str,
              fill_workers: int) -> None:
    """Run the full pipeline on fresh text (every cache of seen text off: the headline), the
    same with caches on, the example transcripts repeated with caches on (stock text
    recurring), each detector alone and a naive baseline, each in a fresh process against a
    temporary SQLite store, after a warm-up; print turns/s, p50/p95/p99 latency (ingest to
    stored result), peak RSS (with the PII analyser's child process) and CPU seconds."""
    from pipeline.bench.embedded import run_bench

    if hostile:
        _hostile(obj, turns or 20, chars, kinds, detectors, as_json)
        return
    if store:
        _store(obj, turns or 100_000, postgres_url, fill_workers, batch_size, as_json)
        return
    turns = turns or (300 if quick else 5000)
    if kafka:
        _kafka(obj, turns, kafka_workers, kafka_rate, tansu, file)
        return
    if transformer:
        from pipeline.bench import transformer as bench_transformer

        out = bench_transformer.run(n_texts=min(turns, 512))
        click.echo(json.dumps(out, indent=2))
        return
    from pipeline.bench.report import render_markdown, render_table

    settings = obj.settings()
    names = tuple(d.strip() for d in detectors.split(",") if d.strip()) if detectors else ()
    quiet = as_json or markdown
    result = run_bench(
        turns=turns, batch_size=batch_size or settings.batch_size,
        detectors=names or settings.enabled_detectors(), file=file, naive_turns=naive_turns,
        per_detector=not (no_per_detector or quick), encoder_backend=settings.encoder_backend,
        cached=not (no_cached or quick), naive=not quick and naive_turns > 0,
        read_ahead=settings.read_ahead,
        progress=None if quiet else lambda label: click.echo(f"measuring {label} ...", err=True))
    if as_json:
        click.echo(json.dumps(result, indent=2))
    elif markdown:
        click.echo(render_markdown(result, "chatmon bench --markdown"), nl=False)
    else:
        click.echo(render_table(result))


def _kafka(obj: Ctx, turns: int, workers: int, rate: float, tansu: bool,
           file: Path | None) -> None:
    import signal
    import sys
    from contextlib import ExitStack

    from pipeline.bench import kafka as kbench

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop workers and broker on TERM
    settings = obj.settings()
    with ExitStack() as stack:
        if tansu:
            settings = settings.model_copy(
                update={"kafka_bootstrap": stack.enter_context(kbench.tansu())})
        click.echo(json.dumps(kbench.bench_kafka(settings, turns, rate, workers, file),
                              indent=2))


def _store(obj: Ctx, turns: int, server_url: str, workers: int, batch_size: int | None,
           as_json: bool) -> None:
    import signal
    import sys

    from pipeline.bench.store import render, run_store_bench

    if turns < 1:
        raise click.BadParameter("at least 1", param_hint="--turns")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # drop the database on TERM too
    result = run_store_bench(turns, server_url, workers,
                             batch_size or obj.settings().batch_size,
                             progress=lambda msg: click.echo(msg, err=True))
    click.echo(json.dumps(result, indent=2) if as_json else render(result))


def _hostile(obj: Ctx, turns: int, chars: int, kinds: str | None, detectors: str | None,
             as_json: bool) -> None:
    from pipeline.bench.hostile import HOSTILE, markdown, measure

    settings = obj.settings()
    if chars > settings.max_text_chars:
        raise click.BadParameter(f"over the input limit of {settings.max_text_chars} "
                                 "characters (CHATMON_MAX_TEXT_CHARS)", param_hint="--chars")
    chosen = [k.strip() for k in kinds.split(",") if k.strip()] if kinds else list(HOSTILE)
    unknown = sorted(set(chosen) - set(HOSTILE))
    if unknown:
        raise click.BadParameter(f"unknown {', '.join(unknown)}; choose from "
                                 f"{', '.join(HOSTILE)}", param_hint="--kinds")
    names = tuple(d.strip() for d in detectors.split(",") if d.strip()) if detectors else ()
    result = measure(chosen, chars, turns, ("user", "assistant"), names, settings)
    click.echo(json.dumps(result, indent=2) if as_json else markdown(result))
