"""Run the dashboards' PostgreSQL-dialect panel SQL against a store (PostgreSQL or SQLite).

Grafana expands ``$__timeFilter(col)`` and ``${var:sqlstring}`` itself; here they become bound
parameters (``:t_from``, ``:t_to``, ``:var``). For SQLite, ``date_trunc('week'|'day', x)``
becomes ``date(...)`` (Monday-based weeks, like PostgreSQL's ISO weeks); everything else in the
queries (``->``/``->>`` on JSON, ``CAST ... AS double precision``, window functions) is valid
in both dialects (SQLite >= 3.38).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, Engine, bindparam, text

_TIME_FILTER = re.compile(r"\$__timeFilter\(([\w.]+)\)")
_VARIABLE = re.compile(r"\$\{(\w+):sqlstring\}")
_TRUNC = re.compile(r"date_trunc\('(week|day)', ([\w.]+)\)")


@dataclass(frozen=True)
class Result:
    columns: list[str]
    rows: list[tuple[Any, ...]]

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, r, strict=True)) for r in self.rows]


def expand(sql: str, dialect: str) -> str:
    """The panel SQL with Grafana macros as bound parameters, in ``dialect``."""
    out = _TIME_FILTER.sub(r"(\1 >= :t_from AND \1 < :t_to)", sql)
    out = _VARIABLE.sub(r":\1", out)
    if dialect == "sqlite":
        out = _TRUNC.sub(_sqlite_trunc, out)
    return out


def _sqlite_trunc(match: re.Match[str]) -> str:
    unit, column = match.groups()
    if unit == "day":
        return f"date({column})"
    return f"date({column}, '-6 days', 'weekday 1')"


def run(engine: Engine, sql: str, t_from: datetime, t_to: datetime,
        **variables: str) -> Result:
    """Execute one panel query for the time range [t_from, t_to)."""
    dialect = engine.dialect.name
    stmt = text(expand(sql, dialect))
    names = set(re.findall(r":(\w+)", str(stmt)))
    if {"t_from", "t_to"} <= names:
        stmt = stmt.bindparams(bindparam("t_from", type_=DateTime(timezone=True)),
                               bindparam("t_to", type_=DateTime(timezone=True)))
    params: dict[str, Any] = {"t_from": _aware(t_from), "t_to": _aware(t_to), **variables}
    if dialect == "sqlite":  # stored naive UTC; compare like with like
        params["t_from"] = params["t_from"].astimezone(UTC).replace(tzinfo=None)
        params["t_to"] = params["t_to"].astimezone(UTC).replace(tzinfo=None)
    params = {k: v for k, v in params.items() if k in names}
    with engine.connect() as conn:
        res = conn.execute(stmt, params)
        return Result(list(res.keys()), [tuple(r) for r in res])


def _aware(when: datetime) -> datetime:
    return when if when.tzinfo else when.replace(tzinfo=UTC)
