"""How fast ``chatmon purge`` deletes on PostgreSQL at a million turns.

    .venv/bin/python scripts/bench_purge.py [--turns 1000000] [--admin-url URL] [--json]

Creates a database of its own (dropped at the end), migrates it, fills it in SQL with
``--turns`` turns (4 turns per conversation, 4 tenants, 5 bots, spread over 120 days) and one
finding per turn (every 50th reviewed), then times, each on a fresh fill:

- ``purge --expired`` with a policy that expires about half the rows (tenants with 30, 60 and
  90 days, the rest 45), the weekly counts included;
- ``purge --conversation`` of 100 conversations (the request path: deletion records, turns by
  conversation, dead letters, near-duplicate evidence);
- ``purge --tenant`` of one of the four tenants.

Rows/s counts every row removed (turns, findings, reviews), turns/s the turns alone.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from pipeline.lifecycle.purge import EXPIRED, Purger, Request  # noqa: E402
from pipeline.lifecycle.retention import Retention  # noqa: E402
from pipeline.store import db, partitions  # noqa: E402

DEFAULT_ADMIN = os.environ.get("CHATMON_TEST_POSTGRES_URL",
                               "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
RETENTION = Retention(45, {"tenant-0": 30, "tenant-1": 60, "tenant-2": 90})

FILL = """
INSERT INTO turns (id, conversation_id, turn, role, ts, bot_id, model, tenant, lang,
                   text_redacted, content_hash, n_chars, metadata, run_id, stored_at)
SELECT substr(md5('t' || i) || md5('u' || i), 1, 40), 'conv-' || (i / 4), i % 4,
       CASE WHEN i % 2 = 0 THEN 'user' ELSE 'assistant' END,
       now() - make_interval(secs => i::bigint * 10368000 / :n),
       'bot-' || ((i / 4) % 5), 'model-a', 'tenant-' || ((i / 4) % 4), 'en',
       'I am sorry to hear that, order ' || i || ' ships on Friday.', md5('h' || i), 48,
       '{}', 'bench', now()
FROM generate_series(0, :n - 1) AS i;
INSERT INTO findings (id, turn_id, conversation_id, turn, role, ts, bot_id, model, tenant,
                      detector, detector_version, label, score, flagged, evidence, excerpt,
                      created_at, suppressed)
SELECT substr(md5('f' || t.id), 1, 40), t.id, t.conversation_id, t.turn, t.role, t.ts,
       t.bot_id, t.model, t.tenant, 'empathy', 'bench', 'empathy.score', 0.4, false,
       '{"er": {"level": 1}}', 'sorry to hear that', t.ts, false
FROM turns t;
INSERT INTO reviews (id, finding_id, reviewer, present, note, source, imported_at)
SELECT substr(md5('r' || f.id), 1, 40), f.id, 'ann', true, '', 'bench', now()
FROM findings f WHERE f.turn = 1 AND right(f.conversation_id, 2) = '00';
ANALYZE;
"""


def fill(url: str, n: int) -> float:
    engine = create_engine(url)
    t0 = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(text("TRUNCATE reviews, findings, turns, dead_letters, deletions, purges, "
                          "rollups, phrase_rollups, conversation_rollups"))
        # The day partitions of the 120 days (an expiry of the previous fill dropped some).
        today = datetime.now(UTC).date()
        partitions.ensure(conn, [today - timedelta(days=d) for d in range(122)])
        for stmt in FILL.split(";"):
            if stmt.strip():
                conn.execute(text(stmt), {"n": n})
    engine.dispose()
    return time.perf_counter() - t0


def timed(url: str, request: Request) -> dict[str, Any]:
    engine = db.make_engine(url)
    t0 = time.perf_counter()
    result = Purger(engine, "bench").run(request)
    seconds = time.perf_counter() - t0
    engine.dispose()
    removed = sum(result.rows.get(t, 0) for t in ("turns", "findings", "reviews"))
    return {"seconds": round(seconds, 2), "rows": dict(result.rows),
            "rows_per_s": round(removed / seconds), "turns_per_s":
            round(result.rows.get("turns", 0) / seconds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=1_000_000)
    parser.add_argument("--admin-url", default=DEFAULT_ADMIN)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    admin = create_engine(args.admin_url, isolation_level="AUTOCOMMIT")
    name = f"chatmon_bench_purge_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(args.admin_url).set(database=name).render_as_string(hide_password=False)
    out: dict[str, Any] = {"turns": args.turns, "cpu": _cpu(), "postgres": None}
    try:
        db.upgrade(url)
        with create_engine(url).connect() as conn:
            out["postgres"] = conn.execute(text("show server_version")).scalar_one()
        runs = {"expired": Request(EXPIRED, retention=RETENTION),
                "conversation x100": Request("conversation", tuple(
                    f"conv-{i * 997 % (args.turns // 4)}" for i in range(100))),
                "tenant": Request("tenant", tenant="tenant-3")}
        for label, request in runs.items():
            out[f"fill_s ({label})"] = round(fill(url, args.turns), 1)
            out[label] = timed(url, request)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    print(json.dumps(out, indent=2) if args.json else _table(out))


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} cores)"
    except OSError:
        pass
    return platform.processor() or "unknown"


def _table(out: dict[str, Any]) -> str:
    lines = [f"{out['turns']:,} turns, PostgreSQL {out['postgres']}, {out['cpu']}", "",
             "| purge | seconds | rows removed | rows/s | turns/s |", "|---|---:|---:|---:|---:|"]
    for label in ("expired", "conversation x100", "tenant"):
        r = out[label]
        rows = ", ".join(f"{t} {n:,}" for t, n in sorted(r["rows"].items()))
        lines.append(f"| {label} | {r['seconds']} | {rows} | {r['rows_per_s']:,} | "
                     f"{r['turns_per_s']:,} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
