"""``chatmon bench --store``: the store at scale, on PostgreSQL.

Creates a database of its own on the server (``chatmon_bench_<random>``, dropped at the end,
also on Ctrl-C, TERM or an error), migrates it (``alembic upgrade head``, as ``chatmon db
upgrade``), and fills it through ``Sink.write`` in batches of the pipeline's size with
``--turns`` turns copied from a real run's conversations (``pipeline/bench/store_data.py``:
its labels, scores and findings per turn; six bots of three tenants, two models each, over
the four weeks ending at the last Monday). The day partitions of those four weeks are made
before the fill is timed (``partitions``: how many, in how many seconds), as a live store has
its days made ahead by ``chatmon db upgrade`` and its sinks; made in the fill, on demand, each
new day's DDL (about 0.1 s for the two tables) lands in the batch that first reaches the day,
which over a four-week backfill of 10,000 turns was a fifth of ``Sink.write``'s time. Then,
after ``VACUUM ANALYZE`` (what autovacuum does to a store that filled over weeks), it times:

- every SQL query of the weekly dashboard (``dashboards/weekly.py``) over the 12 weeks ending
  at the newest turn, as Grafana runs it (``dashboards.sqlrun``), the conversation panel with
  the worst conversation; each twice (``queries``: the first run, ``queries_repeat``: the
  second);
- ``chatmon report`` in a child process (its wall time and peak RSS);
- ``purge --expired`` (``Purger``) with 21 days' retention as of the end of the data: the
  oldest of the four weeks.

``user_group_replies``: the replies the empathy gap's rollup counted; ``jit``: the server's JIT
setting as the queries ran (with the index-only reads of migration 0011 it no longer changes
their times: BENCHMARKS.md).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from pipeline.bench.embedded import machine
from pipeline.bench.store_data import Plan, Profile, conversation, make_plan
from pipeline.errors import ConfigError, StoreUnavailable

DEFAULT_SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
RETENTION_DAYS = 21
TREND_WEEKS = 12
ROOT = Path(__file__).resolve().parents[2]
Progress = Callable[[str], None]


def _shown(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


@contextmanager
def bench_database(server_url: str) -> Iterator[str]:
    """A new, empty database on ``server_url``'s server, dropped on the way out."""
    if not server_url.startswith("postgresql"):
        raise ConfigError(f"the store bench needs PostgreSQL, not {_shown(server_url)}")
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT", hide_parameters=True)
    name = f"chatmon_bench_{uuid.uuid4().hex[:10]}"
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except SQLAlchemyError as exc:
        admin.dispose()
        raise StoreUnavailable(f"cannot create a database on {_shown(server_url)} "
                               f"({type(exc).__name__}): set CHATMON_TEST_POSTGRES_URL or "
                               "--postgres-url to a server where this user may") from None
    try:
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _fill_part(url: str, plan: Plan, profile: Profile, part: int, parts: int,
               batch_size: int, progress: Progress | None) -> dict[str, Any]:
    """Conversations ``part``, ``part + parts``, ... through ``Sink.write``, ``batch_size``
    turns (and their findings) a call, as ``Processor.process`` writes a batch."""
    from pipeline.store.db import make_engine
    from pipeline.store.sink import Sink

    engine = make_engine(url)
    sink = Sink(engine)
    run_id, now = str(uuid.uuid4()), datetime.now(UTC)
    turns: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    n_turns = n_findings = 0
    write_s = 0.0
    t0 = time.perf_counter()
    step = max(plan.conversations // 10, 1)

    def flush() -> float:
        w0 = time.perf_counter()
        sink.write(turns, findings, ())
        turns.clear()
        findings.clear()
        return time.perf_counter() - w0

    for i in range(part, plan.conversations, parts):
        for turn, rows in conversation(plan, profile, i, run_id, now):
            turns.append(turn)
            findings += rows
            n_turns += 1
            n_findings += len(rows)
            if len(turns) >= batch_size:
                write_s += flush()
        if progress is not None and part == 0 and i % step == 0 and i:
            done = i / plan.conversations
            progress(f"filled {done:.0%} ({n_turns * parts:,} turns, "
                     f"{time.perf_counter() - t0:.0f} s)")
    if turns:
        write_s += flush()
    wall = time.perf_counter() - t0
    engine.dispose()
    return {"turns": n_turns, "findings": n_findings, "seconds": round(wall, 2),
            "write_s": round(write_s, 2), "turns_per_s": round(n_turns / wall, 1),
            "findings_per_s": round(n_findings / wall, 1),
            "sink_turns_per_s": round(n_turns / max(write_s, 1e-9), 1),
            "sink_findings_per_s": round(n_findings / max(write_s, 1e-9), 1)}


def make_partitions(url: str, plan: Plan) -> dict[str, Any]:
    """The day partitions of the plan's days (and the day after its end), made before the
    fill; on an unpartitioned store none."""
    from pipeline.store import partitions
    from pipeline.store.db import make_engine

    days = [plan.start.date() + timedelta(days=i)
            for i in range((plan.end - plan.start).days + 2)]
    engine = make_engine(url)
    try:
        t0 = time.perf_counter()
        with engine.begin() as conn:
            made = partitions.ensure(conn, days) if partitions.is_partitioned(conn) else []
        return {"made": len(made), "seconds": round(time.perf_counter() - t0, 2)}
    finally:
        engine.dispose()


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def fill(url: str, plan: Plan, profile: Profile, workers: int, batch_size: int,
         progress: Progress | None) -> dict[str, Any]:
    t0 = time.perf_counter()
    if workers == 1:
        parts = [_fill_part(url, plan, profile, 0, 1, batch_size, progress)]
    else:
        import multiprocessing

        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as ex:
            futures = [ex.submit(_fill_part, url, plan, profile, k, workers, batch_size,
                                 _stderr if k == 0 and progress else None)
                       for k in range(workers)]
            parts = [f.result() for f in futures]
    wall = time.perf_counter() - t0
    turns = sum(p["turns"] for p in parts)
    findings = sum(p["findings"] for p in parts)
    return {"processes": workers, "batch_size": batch_size, "seconds": round(wall, 1),
            "turns_per_s": round(turns / wall, 1), "findings_per_s": round(findings / wall, 1),
            "turns_per_s_per_process": round(sum(p["turns_per_s"] for p in parts) / workers, 1),
            "sink_turns_per_s_per_process": round(
                sum(p["sink_turns_per_s"] for p in parts) / workers, 1),
            "sink_findings_per_s_per_process": round(
                sum(p["sink_findings_per_s"] for p in parts) / workers, 1),
            "per_process": parts, "turns": turns, "findings": findings}


def disk(engine: Any, turns: int, findings: int) -> dict[str, Any]:
    """Bytes on disk per table (with its indexes, TOAST and partitions) and per row."""
    with engine.connect() as conn:
        size = {name: int(n or 0) for name, n in conn.execute(text(
            "SELECT c.relname, CASE WHEN c.relkind = 'p' THEN (SELECT SUM("
            "pg_total_relation_size(t.relid)) FROM pg_partition_tree(c.oid) t WHERE t.isleaf) "
            "ELSE pg_total_relation_size(c.oid) END FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') "
            "AND NOT c.relispartition"))}
        database = int(conn.execute(text(
            "SELECT pg_database_size(current_database())")).scalar_one())
    return {"tables": dict(sorted(size.items(), key=lambda kv: -kv[1])),
            "database_bytes": database,
            "turn_row_bytes": round(size.get("turns", 0) / max(turns, 1), 1),
            "finding_row_bytes": round(size.get("findings", 0) / max(findings, 1), 1),
            "bytes_per_turn_all_tables": round(sum(size.values()) / max(turns, 1), 1)}


def dashboard_queries() -> list[tuple[str, str]]:
    """(name, SQL) of every SQL query the weekly dashboard runs, named as in
    ``dashboards.queries`` (the panel's title where a query has no name there)."""
    from dashboards import queries as q
    from dashboards import weekly
    from dashboards.builder import SqlQuery, sql_queries

    names = {v.sql.strip(): k for k, v in vars(q).items() if isinstance(v, SqlQuery)}
    out: dict[str, str] = {}
    for title, sql in sql_queries(weekly.build()):
        out.setdefault(names.get(sql.strip(), title), sql)
    return list(out.items())


def time_queries(engine: Any, end: datetime) -> tuple[dict[str, float], dict[str, float]]:
    from dashboards import sqlrun

    start = end - timedelta(weeks=TREND_WEEKS)
    first: dict[str, float] = {}
    second: dict[str, float] = {}
    variables: dict[str, str] = {}
    for name, sql in dashboard_queries():
        wanted = set(re.findall(r"\$\{(\w+):sqlstring\}", sql))
        if wanted - variables.keys():
            variables.update(_variables(engine, start, end, wanted - variables.keys()))
        given = {k: variables[k] for k in wanted}
        for out in (first, second):
            t0 = time.perf_counter()
            sqlrun.run(engine, sql, start, end, **given)
            out[name] = round(time.perf_counter() - t0, 3)
    return first, second


def _variables(engine: Any, start: datetime, end: datetime, names: set[str]) -> dict[str, str]:
    """Grafana's variables: ``conversation`` is the worst conversation (its panel's link)."""
    from dashboards import queries as q
    from dashboards import sqlrun

    unknown = names - {"conversation"}
    if unknown:
        raise ConfigError(f"no value for the dashboard variable(s) {', '.join(sorted(unknown))}")
    worst = sqlrun.run(engine, q.WORST_CONVERSATIONS.sql, start, end).records()
    if not worst:
        raise ConfigError("the worst-conversations query found nothing to drill into")
    return {"conversation": str(worst[0]["conversation_id"])}


def time_report(url: str) -> tuple[float, float]:
    """``chatmon report`` in a child process: (seconds, peak RSS in MB)."""
    with tempfile.TemporaryDirectory() as tmp:
        err = Path(tmp) / "stderr"
        with err.open("wb") as fh:
            t0 = time.perf_counter()
            proc = subprocess.Popen(
                [sys.executable, "-m", "pipeline.cli", "report", "--out",
                 str(Path(tmp) / "weekly.html"), "--database-url", url],
                stdout=subprocess.DEVNULL, stderr=fh, cwd=ROOT)
            _, status, usage = os.wait4(proc.pid, 0)
            seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            raise RuntimeError(f"chatmon report failed ({proc.returncode}): "
                               f"{err.read_text(errors='replace')[-1500:]}")
    return seconds, usage.ru_maxrss / 1024  # KiB on Linux


def time_purge(engine: Any, plan: Plan) -> tuple[float, dict[str, Any]]:
    """``purge --expired`` with 21 days' retention as of the end of the data: its seconds, and
    the rows it removed (``partitions``: the day partitions it dropped whole, where the store
    has them)."""
    from pipeline.lifecycle.purge import EXPIRED, Purger, Request
    from pipeline.lifecycle.retention import Retention

    t0 = time.perf_counter()
    res = Purger(engine, "chatmon bench --store").run(
        Request(scope=EXPIRED, retention=Retention(days=RETENTION_DAYS)), now=plan.end)
    seconds = time.perf_counter() - t0
    rows: dict[str, Any] = dict(sorted(res.rows.items()))
    if getattr(res, "partitions", None):
        rows["partitions"] = len(res.partitions)
    return seconds, rows


def revision() -> str:
    """The git revision measured, ``+dirty`` when the tree had uncommitted changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, text=True, capture_output=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def run_store_bench(turns: int, server_url: str = DEFAULT_SERVER, workers: int = 1,
                    batch_size: int = 32, progress: Progress | None = None) -> dict[str, Any]:
    from pipeline.store import db

    say = progress or (lambda _msg: None)
    profile = Profile.load()
    plan = make_plan(turns, profile)
    result: dict[str, Any] = {"turns": turns, "revision": revision(),
                              "profile": profile.source,
                              "data": {"start": plan.start.isoformat(),
                                       "end": plan.end.isoformat(),
                                       "conversations": plan.conversations}}
    with bench_database(server_url) as url:
        say(f"database {make_url(url).database}: migrating")
        db.upgrade(url)
        result["partitions"] = make_partitions(url, plan)
        say(f"filling {turns:,} turns with {workers} process(es)")
        result["fill"] = fill(url, plan, profile, workers, batch_size, progress)
        result["findings"] = result["fill"]["findings"]
        result["findings_per_turn"] = round(result["findings"] / turns, 2)
        engine = db.make_engine(url)
        try:
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                t0 = time.perf_counter()
                conn.execute(text("VACUUM ANALYZE"))
                result["vacuum_analyze_s"] = round(time.perf_counter() - t0, 1)
            result["disk"] = disk(engine, turns, result["findings"])
            with engine.connect() as conn:
                newest = conn.execute(text("SELECT MAX(ts) FROM turns")).scalar_one()
                result["user_group_replies"] = int(conn.execute(text(
                    "SELECT COALESCE(SUM(n), 0) FROM group_rollups")).scalar_one())
                result["jit"] = conn.execute(text("SHOW jit")).scalar_one()
            end = newest + timedelta(seconds=1)
            say("timing the dashboard queries")
            result["queries"], result["queries_repeat"] = time_queries(engine, end)
            say("timing chatmon report")
            report_s, rss = time_report(url)
            result["report_s"], result["report_rss_mb"] = round(report_s, 2), round(rss, 1)
            say("timing purge --expired (the oldest week)")
            purge_s, rows = time_purge(engine, plan)
            result["purge_expired_s"], result["purge_rows"] = round(purge_s, 2), rows
        finally:
            engine.dispose()
    result["machine"] = {**machine(), "load_avg_end": [round(x, 2) for x in os.getloadavg()]}
    return result


def render(result: dict[str, Any]) -> str:
    """The result as a few lines of text (``--json`` prints all of it)."""
    f, d, m = result["fill"], result["disk"], result["machine"]
    pt = result["partitions"]
    lines = [
        f"store bench at {result['revision']}: {result['turns']:,} turns, "
        f"{result['findings']:,} findings ({result['findings_per_turn']} a turn), "
        f"{result['data']['start'][:10]} .. {result['data']['end'][:10]}",
        f"fill: {f['seconds']} s with {f['processes']} process(es); per process "
        f"{f['turns_per_s_per_process']} turns/s, Sink.write alone "
        f"{f['sink_turns_per_s_per_process']} turns/s, "
        f"{f['sink_findings_per_s_per_process']} findings/s (the data's {pt['made']} day "
        f"partitions made before it, in {pt['seconds']} s)",
        f"disk: {d['database_bytes'] / 2**20:,.0f} MiB; {d['bytes_per_turn_all_tables']:.0f} "
        f"bytes a turn with its findings, rollups and indexes",
        f"replies answering a user-group mention (group_rollups): "
        f"{result['user_group_replies']:,}; jit {result['jit']}",
        "dashboard queries over 12 weeks (first / second run, s):",
        *(f"  {name:<26} {s:8.3f} {result['queries_repeat'][name]:8.3f}"
          for name, s in result["queries"].items()),
        f"chatmon report: {result['report_s']} s, {result['report_rss_mb']} MB peak RSS",
        f"purge --expired (oldest week): {result['purge_expired_s']} s, "
        f"{sum(v for k, v in result['purge_rows'].items() if k != 'partitions'):,} rows",
        f"machine: {m['cores']} cores, {m['cpu_model']}; load average at the end "
        f"{m['load_avg_end']}",
    ]
    return "\n".join(lines)
