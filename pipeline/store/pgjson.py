"""PostgreSQL: many rows in one statement, sent as one JSON parameter
(``INSERT ... SELECT ... FROM json_to_recordset(:rows) ...``).

The sink's batches and their rollups go this way on PostgreSQL. A multi-row ``VALUES`` (what
SQLAlchemy sends for ``INSERT ... RETURNING`` of many rows) is a new query string of thousands
of placeholders per batch, which psycopg parses in Python each time; the pipelined executemany
sends a statement per row and dumps every value in Python. One JSON document is serialised in
C, parsed by the server, and the statement text stays the same, so the server's work is the
rows' alone and the client's a ``json.dumps``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, Float, Integer, Table


def _pg_type(column: Any) -> str:
    kind = column.type
    if isinstance(kind, JSON):
        return "json"
    if isinstance(kind, Boolean):
        return "boolean"
    if isinstance(kind, BigInteger):
        return "bigint"
    if isinstance(kind, Integer):
        return "integer"
    if isinstance(kind, Float):
        return "double precision"
    if kind.__class__.__name__ == "UTCDateTime":
        return "timestamptz"
    return "text"


def insert_sql(table: Table, param: str, conflict: Sequence[str], action: str = "DO NOTHING",
               alias: str = "") -> str:
    """``INSERT INTO table SELECT ... FROM json_to_recordset(:param) ON CONFLICT (conflict)
    action`` (``alias`` names the table for an ``action`` that reads it)."""
    cols = [c.name for c in table.columns]
    names = ", ".join(f'"{c}"' for c in cols)
    record = ", ".join(f'"{c.name}" {_pg_type(c)}' for c in table.columns)
    target = f"{table.name} AS {alias}" if alias else table.name
    return (f"INSERT INTO {target} ({names}) SELECT {names} "
            f"FROM json_to_recordset(CAST(:{param} AS json)) AS x({record}) "
            f"ON CONFLICT ({', '.join(conflict)}) {action}")


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def rows_json(table: Table, rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows as one JSON array, each with every column (a missing one takes the column's
    scalar default, else null)."""
    defaults = {c.name: (c.default.arg if c.default is not None and c.default.is_scalar
                         else None) for c in table.columns}
    names = defaults.keys()
    full = [r if names <= r.keys() else {k: r.get(k, d) for k, d in defaults.items()}
            for r in rows]
    return json.dumps(full, default=_default, ensure_ascii=False, allow_nan=False)
