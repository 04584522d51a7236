"""Data quality with great-expectations (1.x, ephemeral context, pandas dataframes).

Two entry points:

- :func:`validate_file`: a transcript export before ingestion (suite ``transcripts``): schema,
  roles, non-empty text, length limits, turn order, timestamp sanity.
- :func:`validate_store`: the stored tables (suites ``store.findings``, ``store.turns``,
  ``store.volume``, ``store.integrity``): score ranges, null rates, turns per day against the
  days before, findings without turns. It reads the 7 days ending at the newest stored turn.

Outcomes go to the ``validation_results`` table (:func:`record`), which the weekly dashboard's
"Data quality" row and ``chatmon report`` read. No transcript text is copied into results: only
expectation names, columns, counts and observed aggregates.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import Engine, insert

from pipeline.report.quality_frames import read_transcripts, store_frames
from pipeline.store.models import ValidationResultRow

ROLES = ("user", "assistant")
REQUIRED = ("conversation_id", "turn", "role", "text", "ts")
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Check:
    suite: str
    expectation: str
    column: str
    success: bool
    unexpected_count: int | None
    observed: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Outcome:
    source: str
    checks: list[Check]

    @property
    def success(self) -> bool:
        return all(c.success for c in self.checks)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.success]


@functools.cache
def _gx() -> Any:
    """great_expectations and one ephemeral context per process (building one is slow)."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    config = DataContextConfig(analytics_enabled=False,
                               progress_bars=ProgressBarsConfig(globally=False),
                               store_backend_defaults=InMemoryStoreBackendDefaults())
    return gx, gx.get_context(mode="ephemeral", project_config=config)


def transcript_expectations(max_chars: int, now: datetime) -> list[Any]:
    import great_expectations.expectations as E  # noqa: N812

    latest = (now.timestamp() + 86_400)
    out: list[Any] = [E.ExpectColumnToExist(column=c) for c in REQUIRED]
    out += [E.ExpectColumnValuesToNotBeNull(column=c) for c in REQUIRED]
    out += [
        E.ExpectColumnValuesToBeInSet(column="parse_ok", value_set=[True]),
        E.ExpectColumnValuesToBeInSet(column="role", value_set=list(ROLES)),
        E.ExpectColumnValueLengthsToBeBetween(column="text", min_value=1, max_value=max_chars),
        E.ExpectColumnValuesToNotMatchRegex(column="text", regex=r"^\s*$"),
        E.ExpectColumnValuesToBeBetween(column="turn", min_value=0),
        E.ExpectCompoundColumnsToBeUnique(column_list=["conversation_id", "turn"]),
        E.ExpectColumnValuesToNotBeNull(column="ts_epoch_s"),
        E.ExpectColumnValuesToBeBetween(column="ts_epoch_s", min_value=EARLIEST.timestamp(),
                                        max_value=latest),
        E.ExpectColumnValuesToBeInSet(column="ts_in_turn_order", value_set=[True]),
    ]
    return out


def store_expectations(max_chars: int) -> dict[str, list[Any]]:
    import great_expectations.expectations as E  # noqa: N812

    findings = [E.ExpectColumnValuesToNotBeNull(column=c)
                for c in ("turn_id", "detector", "label", "score")]
    findings += [E.ExpectColumnValuesToBeBetween(column="score", min_value=0, max_value=1),
                 E.ExpectColumnValuesToBeInSet(column="flagged", value_set=[True, False])]
    turns = [E.ExpectColumnValuesToBeInSet(column="role", value_set=list(ROLES)),
             E.ExpectColumnValuesToNotBeNull(column="bot_id", mostly=0.99),
             E.ExpectColumnValuesToNotBeNull(column="model", mostly=0.95),
             E.ExpectColumnValuesToBeBetween(column="n_chars", min_value=0, max_value=max_chars)]
    volume = [E.ExpectColumnValuesToBeBetween(column="ratio_to_median", min_value=0.25,
                                              max_value=4.0)]
    integrity = [E.ExpectTableRowCountToEqual(value=0)]
    return {"store.findings": findings, "store.turns": turns, "store.volume": volume,
            "store.integrity": integrity}


def run_suite(name: str, frame: pd.DataFrame, expectations: list[Any]) -> list[Check]:
    gx, context = _gx()
    unique = f"{name}-{uuid.uuid4().hex[:8]}"  # the context lives on: no name clashes
    asset = context.data_sources.add_pandas(unique).add_dataframe_asset(name=name)
    batch = asset.add_batch_definition_whole_dataframe("all").get_batch(
        batch_parameters={"dataframe": frame})
    suite = context.suites.add(gx.ExpectationSuite(name=unique))
    for expectation in expectations:
        suite.add_expectation(expectation)
    result = batch.validate(suite)
    return [_check(name, r) for r in result.results]


def _check(suite: str, r: Any) -> Check:
    cfg = r.expectation_config
    res = r.result or {}
    column = cfg.kwargs.get("column") or ",".join(cfg.kwargs.get("column_list") or [])
    observed = {k: _plain(res[k]) for k in ("observed_value", "element_count",
                                            "unexpected_percent", "missing_count")
                if k in res}
    if r.exception_info and r.exception_info.get("raised_exception"):
        observed["error"] = str(r.exception_info.get("exception_message", ""))[:200]
    unexpected = res.get("unexpected_count")
    return Check(suite, cfg.type, column, bool(r.success),
                 None if unexpected is None else int(unexpected), observed)


def _plain(value: Any) -> Any:
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    return str(value)


def validate_file(path: Path, max_chars: int, now: datetime | None = None) -> Outcome:
    frame = read_transcripts(path)
    checks = run_suite("transcripts", frame,
                       transcript_expectations(max_chars, now or datetime.now(UTC)))
    return Outcome(str(path), checks)


def validate_store(engine: Engine, max_chars: int) -> Outcome:
    frames = store_frames(engine)
    checks: list[Check] = []
    for name, expectations in store_expectations(max_chars).items():
        checks += run_suite(name, frames[name], expectations)
    return Outcome("store", checks)


def record(engine: Engine, outcome: Outcome, when: datetime | None = None) -> str:
    """One row per check; returns the validation id."""
    validation_id = str(uuid.uuid4())
    when = when or datetime.now(UTC)
    rows = [{"id": uuid.uuid4().hex, "validation_id": validation_id, "checked_at": when,
             "suite": c.suite, "source": outcome.source[:1000], "expectation": c.expectation,
             "column_name": c.column, "success": c.success,
             "unexpected_count": c.unexpected_count, "observed": c.observed}
            for c in outcome.checks]
    with engine.begin() as conn:
        conn.execute(insert(ValidationResultRow), rows)
    return validation_id


def format_table(outcome: Outcome) -> str:
    head = ("suite", "expectation", "column", "result", "unexpected", "observed")
    lines = [head] + [(c.suite, c.expectation.removeprefix("expect_"), c.column,
                       "pass" if c.success else "FAIL",
                       "" if c.unexpected_count is None else str(c.unexpected_count),
                       _observed(c)) for c in outcome.checks]
    widths = [max(len(row[i]) for row in lines) for i in range(len(head) - 1)]
    out = ["  ".join(v.ljust(w) for v, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1]
           for row in lines]
    failed = len(outcome.failed)
    out.append(f"{len(outcome.checks) - failed} passed, {failed} failed ({outcome.source})")
    return "\n".join(out)


def _observed(c: Check) -> str:
    if "error" in c.observed:
        return f"error: {c.observed['error'][:80]}"
    if "observed_value" in c.observed:
        return f"observed {c.observed['observed_value']}"
    if c.unexpected_count and "unexpected_percent" in c.observed:
        return f"{float(c.observed['unexpected_percent']):.1f}% unexpected"
    return ""
