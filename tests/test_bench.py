"""``chatmon bench`` on a tiny corpus: the JSON shape and sane values (no timed assertions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.bench.corpus import EXAMPLES, corpus_lines, read_source
from pipeline.bench.report import render_markdown, render_table, targets
from pipeline.cli import cli

LATENCY_KEYS = {"turns_per_s", "p50_ms", "p95_ms", "p99_ms", "peak_rss_mb"}


def test_corpus_repeats_whole_conversations_under_fresh_ids() -> None:
    base = [json.loads(x) for x in EXAMPLES.read_text().splitlines() if x.strip()]
    lines = [json.loads(x) for x in corpus_lines(len(base) * 2 + 3, "b", EXAMPLES)]
    assert len(lines) == len(base) * 2 + 3
    keys = {(r["conversation_id"], r["turn"]) for r in lines}
    assert len(keys) == len(lines)  # no duplicate (conversation, turn): nothing is deduplicated
    assert [r["text"] for r in lines[: len(base)]] == [r["text"] for r in base]
    assert lines[len(base)]["conversation_id"] != lines[0]["conversation_id"]


def test_replay_conversations_become_events(tmp_path: Path) -> None:
    """The cs-transcripts replay format (one conversation per line) is read as chatmon events:
    system actions and empty turns skipped, turns numbered, times increasing, a bot per source."""
    src = tmp_path / "replay.jsonl"
    src.write_text(json.dumps({"source": "sgd", "conversation_id": "7", "turns": [
        {"role": "user", "text": "I need a table for two."},
        {"role": "system_action", "text": "Looked up restaurants."},
        {"role": "assistant", "text": "Which city?"}, {"role": "user", "text": "  "},
        {"role": "user", "text": "Lyon."}]}) + "\n")
    events = read_source(src)
    assert [(e["turn"], e["role"], e["text"]) for e in events] == [
        (0, "user", "I need a table for two."), (1, "assistant", "Which city?"),
        (2, "user", "Lyon.")]
    assert {e["conversation_id"] for e in events} == {"sgd-7"}
    assert {e["bot_id"] for e in events} == {"replay-sgd"}
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)
    assert len(set(e["ts"] for e in events)) == 3 and events[0]["ts"].endswith("Z")


def test_replay_conversations_sharing_an_id_stay_apart(tmp_path: Path) -> None:
    """Two conversations of a source with one id (SGD reuses ids across splits) become two
    conversations, so the second is scored, not dead-lettered as a conflicting duplicate."""
    conv = {"source": "sgd", "conversation_id": "1_00007"}
    src = tmp_path / "replay.jsonl"
    src.write_text("\n".join(json.dumps({**conv, "turns": [{"role": "user", "text": t}]})
                             for t in ("Book me a cab.", "Find a dentist in Oakland.")) + "\n")
    events = read_source(src)
    assert len({(e["conversation_id"], e["turn"]) for e in events}) == 2
    assert events[0]["conversation_id"] == "sgd-1_00007"


def test_the_warm_up_shares_no_conversation_with_the_measured_corpus(tmp_path: Path) -> None:
    src = tmp_path / "turns.jsonl"
    src.write_text("\n".join(json.dumps({"conversation_id": f"c{c}", "turn": t, "role": "user",
                                         "text": f"text {c} {t}", "ts": "2026-01-01T00:00:00Z"})
                             for c in range(10) for t in range(3)) + "\n")
    measured = [json.loads(x)["text"] for x in corpus_lines(9, "b", src)]
    warm = [json.loads(x)["text"] for x in corpus_lines(9, "w", src, from_end=True)]
    assert measured[:3] == ["text 0 0", "text 0 1", "text 0 2"]
    assert warm[:3] == ["text 9 0", "text 9 1", "text 9 2"]
    assert not set(measured) & set(warm)


@pytest.fixture(scope="module")
def bench_json(tmp_path_factory: pytest.TempPathFactory) -> dict:
    # A small file of our own, two conversations, repeated to 60 turns.
    src = tmp_path_factory.mktemp("bench") / "turns.jsonl"
    rows = []
    for c in range(2):
        for t in range(4):
            rows.append({"conversation_id": f"c{c}", "turn": t,
                         "role": "user" if t % 2 == 0 else "assistant",
                         "text": "I'm sorry to hear that. Let me check your order." if t % 2
                         else f"My parcel {c} never arrived, can you help?",
                         "ts": f"2026-01-01T00:00:0{t}Z"})
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    res = CliRunner().invoke(cli, ["bench", "--json", "--turns", "60", "--detectors",
                                   "repetition", "--naive-turns", "20", "--file", str(src)])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_bench_json_shape(bench_json: dict) -> None:
    assert list(bench_json)[0] == "pipeline_fresh_text"  # the headline comes first
    assert set(bench_json) >= {"pipeline_fresh_text", "pipeline", "detectors", "naive",
                               "speedup_vs_naive", "speedup_vs_naive_cached", "machine"}
    assert set(bench_json["pipeline_fresh_text"]) >= LATENCY_KEYS
    assert set(bench_json["pipeline"]) >= LATENCY_KEYS
    assert set(bench_json["detectors"]) == {"repetition"}
    assert set(bench_json["detectors"]["repetition"]) >= LATENCY_KEYS
    assert bench_json["machine"]["cores"] >= 1
    assert len(bench_json["machine"]["load_avg_start"]) == 3


def test_bench_values_are_sane(bench_json: dict) -> None:
    p = bench_json["pipeline_fresh_text"]
    assert bench_json["pipeline"]["turns"] == 60
    assert p["turns"] == 60 and p["detector_errors"] == {}
    assert p["turns_per_s"] > 0 and p["seconds"] > 0
    assert 0 < p["p50_ms"] <= p["p95_ms"] <= p["p99_ms"]
    assert p["peak_rss_mb"] > 20  # a Python process with numpy and SQLAlchemy loaded
    assert p["encoder_backend"] is None  # repetition needs no sentence vectors
    assert bench_json["naive"]["turns"] == 20 and bench_json["naive"]["turns_per_s"] > 0
    ratio = p["turns_per_s"] / bench_json["naive"]["turns_per_s"]
    assert bench_json["speedup_vs_naive"] == pytest.approx(ratio, rel=0.05, abs=0.1)


def test_table_and_markdown_render_every_configuration(bench_json: dict) -> None:
    table = render_table(bench_json)
    assert table.index("pipeline, fresh text") < table.index("pipeline, caches on")
    assert "repetition alone" in table
    assert "naive baseline" in table
    md = render_markdown(bench_json, "chatmon bench --markdown")
    assert "| naive baseline |" in md and "chatmon bench --markdown" in md
    assert md.count("| yes |") + md.count("| MISS |") == len(targets(bench_json)) == 5
    assert "pipeline_examples_cached" not in bench_json  # only beside the default corpus
    # Beside the default corpus, the examples repeated with caches on is a row and a target.
    stock = {**bench_json["pipeline"], "turns_per_s": 512.0, "peak_rss_mb": 2048.0}
    both = {**bench_json, "pipeline_examples_cached": stock}
    assert "pipeline, examples, caches on" in render_table(both)
    rows = {w: (v, ok) for w, _, v, ok in targets(both)}
    assert rows["caches on, the examples repeated: turns/s"] == ("512.0", True)
    assert rows["peak RSS (MB)"] == ("2048.0", False)  # the largest of the three runs


def test_an_unknown_detector_is_reported_not_crashed(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["bench", "--json", "--turns", "5", "--detectors", "nope",
                                   "--naive-turns", "2"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert "error" in out["pipeline_fresh_text"] and out["speedup_vs_naive"] is None


def test_quick_mode_runs_only_the_fresh_text_pipeline(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["bench", "--quick", "--json", "--turns", "12",
                                   "--detectors", "repetition,manipulation"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert set(out) & {"pipeline", "naive", "detectors"} == set()
    fresh = out["pipeline_fresh_text"]
    assert fresh["turns"] == 12 and fresh["turns_per_s"] > 0 and fresh["detector_errors"] == {}
    assert fresh["encoder_cache"] is False


@pytest.mark.slow
def test_transformer_bench_on_a_tiny_model() -> None:
    from pipeline.bench import transformer as bench_transformer

    out = bench_transformer.run(n_texts=16, one_by_one=4, batch_size=8, small=True)
    assert out["texts"] == 16 and out["torch_one_by_one"]["turns"] == 4
    fast = out["onnx_int8_sorted_batches"]
    assert fast["turns_per_s"] > 0 and fast["batch_size"] == 8
    assert fast["gflop_per_s_fp32_equivalent"] > 0
    assert fast["ratio_to_fp32_ceiling"] == pytest.approx(
        fast["gflop_per_s_fp32_equivalent"] / 180.0, abs=0.01)
    assert out["int8_vs_fp32_logit_correlation"] > 0.8  # same model, int8 weights
    assert out["mean_tokens"] > 5  # real bert-base-uncased tokenisation of the example replies
    short = out["onnx_int8_sentences"]
    assert short["turns"] == 16 and 0 < short["mean_tokens"] < out["mean_tokens"]
    assert short["turns_per_s"] > 0 and short["gflop_per_s_fp32_equivalent"] > 0


def test_kafka_bench_reads_stored_times_from_either_store() -> None:
    """PostgreSQL hands back datetimes, SQLite ISO text: both give the same epoch seconds."""
    from datetime import UTC, datetime

    from pipeline.bench.kafka import _epoch

    at = datetime(2026, 11, 21, 15, 30, 0, 250000, tzinfo=UTC)
    assert _epoch(at) == _epoch(at.replace(tzinfo=None)) == _epoch("2026-11-21 15:30:00.250000")
    assert _epoch(at) == at.timestamp()


def test_kafka_bench_turns_are_unique_when_the_source_repeats_a_conversation_id(
        tmp_path: Path) -> None:
    """The replay sample holds some conversation ids twice; every benchmarked turn must be
    stored (a repeated (conversation, turn) would be a conflicting duplicate, never stored)."""
    from pipeline.bench.kafka import synthetic_turns

    conv = {"source": "sgd", "conversation_id": "1_00007",
            "turns": [{"role": "user", "text": "hi"}, {"role": "assistant", "text": "hello"}]}
    other = {**conv, "turns": [{"role": "user", "text": "book a table"},
                               {"role": "assistant", "text": "for how many?"}]}
    src = tmp_path / "replay.jsonl"
    src.write_text("".join(json.dumps(c) + "\n" for c in (conv, other)))
    rows = synthetic_turns(8, "t-", src)
    keys = [(r["conversation_id"], r["turn"]) for r in rows]
    assert len(keys) == len(set(keys)) == 8
    assert [r["text"] for r in rows[:4]] == ["hi", "hello", "book a table", "for how many?"]
    assert rows[0]["conversation_id"] != rows[2]["conversation_id"]
