"""The pandas dataframes that :mod:`pipeline.report.quality` validates: a transcript export (with
derived columns for timestamp sanity and turn order) and the store's recent tables."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import Engine, func, select

from pipeline.ingest.events import KNOWN_FIELDS
from pipeline.store.models import FindingRow, TurnRow

STORE_DAYS = 7
VOLUME_DAYS = 7


def read_transcripts(path: Path) -> pd.DataFrame:
    """One row per line; a line that is not a JSON object gets ``parse_ok = False``."""
    opener = gzip.open if path.suffix == ".gz" else open
    records: list[dict[str, Any]] = []
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                obj = None
            if isinstance(obj, dict):
                records.append({**{k: obj[k] for k in KNOWN_FIELDS if k in obj},
                                "parse_ok": True})
            else:
                records.append({"parse_ok": False})
    return _derive(pd.DataFrame.from_records(records))


def _derive(frame: pd.DataFrame) -> pd.DataFrame:
    if frame.empty:
        return frame.assign(parse_ok=pd.Series(dtype=bool))
    ts = frame["ts"] if "ts" in frame else pd.Series([None] * len(frame), index=frame.index)
    ts = ts.where(ts.map(lambda v: isinstance(v, str)))
    parsed = pd.to_datetime(ts, utc=True, errors="coerce", format="ISO8601")
    frame["ts_epoch_s"] = parsed.map(lambda t: None if pd.isna(t) else t.timestamp())
    frame["ts_in_turn_order"] = _in_turn_order(frame)
    return frame


def _in_turn_order(frame: pd.DataFrame) -> pd.Series:
    """True where the turn's time is not before the previous turn's in its conversation."""
    if "conversation_id" not in frame or "turn" not in frame:
        return pd.Series(True, index=frame.index)
    turn = pd.to_numeric(frame["turn"], errors="coerce")
    order = frame.assign(_turn=turn).sort_values(["conversation_id", "_turn"], kind="stable")
    previous = order.groupby("conversation_id", sort=False)["ts_epoch_s"].shift()
    ok = ~(order["ts_epoch_s"] < previous)
    return ok.reindex(frame.index)


def _newest(engine: Engine) -> datetime | None:
    with engine.connect() as conn:
        newest = conn.execute(select(func.max(TurnRow.ts))).scalar_one_or_none()
    if newest is not None and newest.tzinfo is None:
        newest = newest.replace(tzinfo=UTC)
    return newest


def _read(engine: Engine, stmt: Any) -> pd.DataFrame:
    with engine.connect() as conn:
        result = conn.execute(stmt)
        return pd.DataFrame([tuple(r) for r in result], columns=list(result.keys()))


def store_frames(engine: Engine) -> dict[str, pd.DataFrame]:
    """Suite name -> the dataframe it validates (the 7 days ending at the newest turn)."""
    end = (_newest(engine) or datetime.now(UTC)) + timedelta(seconds=1)
    start = end - timedelta(days=STORE_DAYS)
    findings = _read(engine, select(FindingRow.turn_id, FindingRow.detector, FindingRow.label,
                                    FindingRow.score, FindingRow.flagged)
                     .where(FindingRow.ts >= start, FindingRow.ts < end))
    turns = _read(engine, select(TurnRow.role, TurnRow.bot_id, TurnRow.model, TurnRow.n_chars)
                  .where(TurnRow.ts >= start, TurnRow.ts < end))
    turns = turns.replace({"bot_id": {"": None}, "model": {"": None}})
    orphans = _read(engine, select(FindingRow.id)
                    .outerjoin(TurnRow, TurnRow.id == FindingRow.turn_id)
                    .where(TurnRow.id.is_(None)).limit(1000))
    return {"store.findings": findings, "store.turns": turns,
            "store.volume": _volume(engine, end), "store.integrity": orphans}


def _volume(engine: Engine, end: datetime) -> pd.DataFrame:
    """One row: turns on the newest day and their ratio to the median of the 7 days before
    (days without turns count as 0). Empty when there is no earlier day to compare with."""
    last_day = (end - timedelta(seconds=1)).date()
    first_day = last_day - timedelta(days=VOLUME_DAYS)
    start = datetime.combine(first_day, datetime.min.time(), tzinfo=UTC)
    ts = _read(engine, select(TurnRow.ts).where(TurnRow.ts >= start, TurnRow.ts < end))
    days = pd.to_datetime(ts["ts"], utc=True).dt.date.value_counts() if len(ts) else {}
    counts = [int(days.get(first_day + timedelta(days=i), 0)) for i in range(VOLUME_DAYS + 1)]
    previous, latest = counts[:-1], counts[-1]
    median = float(pd.Series(previous).median())
    if not any(previous):
        return pd.DataFrame({"day": [], "turns": [], "median_previous": [],
                             "ratio_to_median": []})
    return pd.DataFrame({"day": [str(last_day)], "turns": [latest],
                         "median_previous": [median],
                         "ratio_to_median": [latest / median if median else float("inf")]})
