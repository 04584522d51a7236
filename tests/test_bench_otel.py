"""scripts/bench_otel.py's decode (protobuf parse plus the mapping, what ``/v1/traces`` does
before scoring) runs on spans the script builds, so the benchmark cannot rot unnoticed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_otel.py"


def test_the_bench_decodes_three_spans_into_their_new_turns() -> None:
    spec = importlib.util.spec_from_file_location("bench_otel", SCRIPT)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    spans = bench.chat_spans(3)
    events = bench.decode(bench.export_body(spans))
    # Each span carries the history but adds only its user turn and its reply.
    assert [e["role"] for e in events] == ["user", "assistant"] * 3
    replies = [json.loads(s.attributes[-1].value.string_value)[0]["parts"][0]["content"]
               for s in spans]
    assert [e["text"] for e in events if e["role"] == "assistant"] == replies
    assert all(len(r) >= 130 for r in replies)
    first = events[0]["conversation_id"]
    assert [e["turn"] for e in events if e["conversation_id"] == first][:2] == [0, 1]
    assert bench.decode_ms_per_span([bench.export_body(spans)], 3, repeat=1) > 0
