"""What taking turns as OpenTelemetry spans costs: spans per second through ``POST /v1/traces``
against the same kind of turns sent as chatmon events to ``POST /v1/turns``, and the decoding
(protobuf parse plus the mapping to turn events, no scoring) alone.

    .venv/bin/python scripts/bench_otel.py [--spans 500] [--batch 32] [--detectors pii]

Builds chat spans from ``chatmon bench``'s default corpus (the cs-transcripts replay sample when
it sits beside the repository): one span per reply (joined to at least ``--reply-chars``),
carrying the conversation so far as ``gen_ai.input.messages`` and the reply as
``gen_ai.output.messages``, as an instrumented application sends them. Two disjoint halves of
the corpus, so neither run finds the other's text already analysed: the first and last
quarters go to ``/v1/traces`` as OTLP protobuf, the middle two, mapped to chatmon events by the
same mapping, to ``/v1/turns`` (in that order: traces, turns, turns, traces); all in batches of
``--batch`` spans (and their turns) from 4 client threads, to
a ``chatmon serve`` subprocess on SQLite in a temporary folder. Prints JSON: spans_per_s,
turns_per_s of each route, decode_ms_per_span, the decode's share of a turn's cost, and
the machine (as ``chatmon bench`` names it)."""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.bench.corpus import default_source, read_source  # noqa: E402
from pipeline.bench.embedded import machine  # noqa: E402

TOKEN = "bench-otel"


def dialogs(reply_chars: int) -> list[tuple[str, list[tuple[str, str]]]]:
    """The corpus's conversations as (user, reply) pairs of about ``reply_chars``-character
    replies: the corpus's replies are short (57 characters on average in the replay sample),
    so consecutive exchanges are joined, users' with users', bots' with bots', until the reply
    is long enough. The text stays real support phrasing, and none of it repeats."""
    by_conv: dict[str, list[dict[str, Any]]] = {}
    for event in read_source(default_source()):
        by_conv.setdefault(str(event["conversation_id"]), []).append(event)
    out = []
    for conv, events in by_conv.items():
        pairs: list[tuple[str, str]] = []
        users: list[str] = []
        bots: list[str] = []
        for event in events:
            (users if event["role"] == "user" else bots).append(event["text"])
            if bots and users and len(" ".join(bots)) >= reply_chars:
                pairs.append((" ".join(users), " ".join(bots)))
                users, bots = [], []
        if pairs:
            out.append((conv, pairs))
    return out


def chat_spans(n: int, reply_chars: int = 130) -> list[Any]:
    """``n`` chat spans, one per reply, each with the conversation so far, as
    ``opentelemetry-proto`` Span messages."""
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    def part(role: str, said: str) -> dict[str, Any]:
        return {"role": role, "parts": [{"type": "text", "content": said}]}

    out: list[Any] = []
    for conv, pairs in dialogs(reply_chars):
        past: list[dict[str, Any]] = []
        for user, reply in pairs:
            i = len(out)
            past.append(part("user", user))
            t0 = 1_795_000_000_000_000_000 + i * 10_000_000_000
            attrs = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                     "gen_ai.request.model": "bench-llm", "gen_ai.conversation.id": conv,
                     "gen_ai.input.messages": json.dumps(past),
                     "gen_ai.output.messages": json.dumps([part("assistant", reply)])}
            out.append(Span(
                name="chat bench-llm", trace_id=(i + 1).to_bytes(16, "big"),
                span_id=(i + 1).to_bytes(8, "big"), kind=Span.SPAN_KIND_CLIENT,
                start_time_unix_nano=t0, end_time_unix_nano=t0 + 1_500_000_000,
                attributes=[KeyValue(key=k, value=AnyValue(string_value=v))
                            for k, v in attrs.items()]))
            if len(out) == n:
                return out
            past.append(part("assistant", reply))
    raise SystemExit(f"the corpus makes fewer than {n} spans")


def export_body(spans: list[Any]) -> bytes:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.add(key="service.name").value.string_value = "bench-bot"
    rs.scope_spans.add().spans.extend(spans)
    return req.SerializeToString()


def decode(body: bytes) -> list[dict[str, Any]]:
    """What ``/v1/traces`` does before scoring: parse the protobuf body and map its spans to
    chatmon turn events."""
    from pipeline.ingest.otel import OtelOptions, map_request
    from pipeline.ingest.otel_wire import PROTOBUF
    from pipeline.ingest.otel_wire import decode as parse

    return [m.event for m in map_request(parse(body, PROTOBUF), OtelOptions()).events]


def decode_ms_per_span(bodies: list[bytes], n_spans: int, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):  # the best of a few: the machine may be busy with other work
        start = time.perf_counter()
        for body in bodies:
            decode(body)
        best = min(best, time.perf_counter() - start)
    return 1000.0 * best / n_spans


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def post_all(url: str, bodies: list[bytes], content_type: str) -> float:
    import httpx

    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": content_type}
    with httpx.Client(timeout=600) as client:
        def send(body: bytes) -> None:
            r = client.post(url, content=body, headers=headers)
            if r.status_code != 200:
                raise SystemExit(f"{url} answered {r.status_code}: {r.text[:300]}")

        start = time.perf_counter()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(send, bodies))
        return time.perf_counter() - start


def serve(folder: str, detectors: str | None) -> tuple[subprocess.Popen[bytes], str]:
    import httpx

    port = free_port()
    env = {**os.environ, "CHATMON_DATABASE_URL": f"sqlite:///{folder}/bench.db",
           "CHATMON_SERVE_TOKEN": TOKEN, "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    if detectors:
        env["CHATMON_DETECTORS"] = json.dumps(detectors.split(","))
    proc = subprocess.Popen([sys.executable, "-m", "pipeline.cli", "serve", "--port", str(port)],
                            env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/health", timeout=5).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise SystemExit(f"chatmon serve exited with {proc.returncode}")
        time.sleep(0.5)
    proc.kill()
    raise SystemExit("chatmon serve did not start in 300 s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spans", type=int, default=500)
    ap.add_argument("--batch", type=int, default=32, help="spans per request")
    ap.add_argument("--reply-chars", type=int, default=130,
                    help="join replies up to at least this length (130: about 170 on average)")
    ap.add_argument("--detectors", help="comma-separated (default: serve's default, all)")
    args = ap.parse_args()
    n, size = args.spans, args.batch
    spans = chat_spans(2 * n + 2 * size, args.reply_chars)
    warm = [export_body(spans[2 * n:2 * n + size])]
    warm_events = [json.dumps([{**e, "conversation_id": f"ev-{e['conversation_id']}"}
                               for e in decode(export_body(spans[2 * n + size:]))]).encode()]
    # Quarters of the corpus, sent in the order traces, turns, turns, traces: a machine whose
    # speed drifts (warm-up, other work) and text that gets longer or shorter along the corpus
    # weigh on both routes alike.
    half = n // 2
    quarters = [spans[q * half:(q + 1) * half] for q in range(4)]
    traced = [[export_body(q[i:i + size]) for i in range(0, half, size)]
              for q in (quarters[0], quarters[3])]
    as_turns = [[json.dumps([{**e, "conversation_id": f"ev-{e['conversation_id']}"}
                             for e in decode(export_body(q[i:i + size]))]).encode()
                 for i in range(0, half, size)] for q in (quarters[1], quarters[2])]
    n = 2 * half
    turns_otlp = sum(len(decode(b)) for part in traced for b in part)
    turns_events = sum(len(json.loads(b)) for part in as_turns for b in part)
    decode_ms = decode_ms_per_span(traced[0] + traced[1], n)
    with tempfile.TemporaryDirectory(prefix="bench-otel-") as folder:
        proc, base = serve(folder, args.detectors)
        try:
            post_all(f"{base}/v1/traces", warm, "application/x-protobuf")  # models warm
            post_all(f"{base}/v1/turns", warm_events, "application/json")
            t_otlp = post_all(f"{base}/v1/traces", traced[0], "application/x-protobuf")
            t_events = post_all(f"{base}/v1/turns", as_turns[0], "application/json")
            t_events += post_all(f"{base}/v1/turns", as_turns[1], "application/json")
            t_otlp += post_all(f"{base}/v1/traces", traced[1], "application/x-protobuf")
        finally:
            proc.terminate()
            proc.wait(30)
    turn_ms = 1000.0 * t_events / turns_events
    replies = [len(json.loads(s.attributes[-1].value.string_value)[0]["parts"][0]["content"])
               for s in quarters[0] + quarters[3]]
    print(json.dumps({
        "spans": n, "batch": size, "detectors": args.detectors or "default (all)",
        "mean_reply_chars": round(sum(replies) / n),
        "v1_traces": {"spans_per_s": round(n / t_otlp, 1), "turns": turns_otlp,
                      "turns_per_s": round(turns_otlp / t_otlp, 1)},
        "v1_turns": {"turns": turns_events, "turns_per_s": round(turns_events / t_events, 1)},
        "traces_turn_rate_vs_turns": round(turns_otlp / t_otlp / (turns_events / t_events), 3),
        "decode_ms_per_span": round(decode_ms, 3),
        "decode_ms_per_turn": round(decode_ms * n / turns_otlp, 3),
        "turn_ms_v1_turns": round(turn_ms, 2),
        "decode_share_of_turn": round(decode_ms * n / turns_otlp / turn_ms, 4),
        "machine": machine(), "load_avg_1m": round(os.getloadavg()[0], 2)}, indent=2))


if __name__ == "__main__":
    main()
