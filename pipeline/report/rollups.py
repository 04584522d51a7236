"""What the report's comparisons are computed from (issue 41): the ``rollups`` the sink keeps per
hour, bot and model (``pipeline/store/models.py`` ``RollupRow``), summed over the window and the
week before, so that the report reads a few thousand rows whatever the number of turns:

- replies: the turn rows (``n``) of assistant turns;
- a rate's events: the ``'turns'`` rows (``flagged``: replies with a flagged finding of the
  detector, or of the label);
- a mean's sample: the ``empathy.score`` rows as moments (count, sum, sum of squares of the
  score, or of an evidence number: ``er``, ``ip``, ``ex``, ``alignment``).

- the empathy gap's group side: ``group_rollups``, the replies that answer a mention of a user
  group (a ``bias.user_group`` finding on the turn before), as moments per bot and group.

Only numbers and labels are read, never text.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine, and_, case, func, literal, select, union_all

from pipeline.compare.stats import Moments
from pipeline.store.models import GroupRollupRow, RollupRow

NOW, BEFORE = "now", "before"
EMPATHY = "empathy.score"
TURNS = ("", "", "")  # (detector, label, measure) of the turn row

Key = tuple[str, str, str]  # (detector, label, measure)


@dataclass(frozen=True)
class Cell:
    """One summed rollup row: ``n``, ``flagged`` and the moments of ``total``."""

    n: int = 0
    flagged: int = 0
    total: float = 0.0
    total_sq: float = 0.0

    def __add__(self, other: Cell) -> Cell:
        return Cell(self.n + other.n, self.flagged + other.flagged, self.total + other.total,
                    self.total_sq + other.total_sq)

    @property
    def moments(self) -> Moments:
        return Moments(self.n, self.total, self.total_sq)


EMPTY = Cell()
Cells = dict[Key, Cell]


def detector_turns(detector: str) -> Key:
    """The row of replies with a (flagged) finding of ``detector``."""
    return (detector, "", "turns")


def label_turns(label: str) -> Key:
    """The row of replies with a (flagged) finding of ``label`` (``<detector>.<subtype>``)."""
    return (label.split(".", 1)[0], label, "turns")


def empathy(measure: str = "") -> Key:
    """``empathy.score``'s own score (``measure`` ''), or one of its evidence numbers."""
    return ("empathy", EMPATHY, measure)


@dataclass(frozen=True)
class Sums:
    """Per period (NOW, BEFORE) and (bot, model): the summed rollup cells of assistant turns."""

    cells: dict[str, dict[tuple[str, str], Cells]]

    def groups(self, period: str, key: Callable[[str, str], str]) -> dict[str, Cells]:
        """The cells of ``period`` summed per ``key(bot, model)``: only groups with replies,
        keys in sorted order (as the report lists them)."""
        out: dict[str, Cells] = defaultdict(dict)
        for (bot, model), cells in self.cells.get(period, {}).items():
            if cells.get(TURNS, EMPTY).n <= 0:
                continue
            group = out[key(bot, model)]
            for k, cell in cells.items():
                group[k] = group.get(k, EMPTY) + cell
        return dict(sorted(out.items()))


def load(engine: Engine, before: datetime, start: datetime, end: datetime,
         labels: Iterable[str] = (), measures: Iterable[str] = ()) -> Sums:
    """The assistant turns' rollups of [before, start) (BEFORE) and [start, end) (NOW), summed
    per bot, model and row kind: the turn rows, every detector's 'turns' rows, the 'turns' rows
    of ``labels`` and ``empathy.score``'s own row and its evidence ``measures``. Buckets are
    hours: the bounds should be on the hour."""
    r = RollupRow
    kinds = (r.label == "",  # the turn rows and every detector's 'turns' rows
             and_(r.label.in_(tuple(labels)), r.measure == "turns"),
             and_(r.label == EMPATHY, r.measure.in_(("", *measures))))
    # One read of the covering (label, measure, bucket) index per kind, not an OR of them
    # (which would visit a table page per row).
    rows = union_all(*(
        select(r.bucket, r.bot_id, r.model, r.detector, r.label, r.measure, r.n, r.flagged,
               r.total, r.total_sq)
        .where(kind, r.role == "assistant", r.bucket >= before, r.bucket < end)
        for kind in kinds)).subquery()
    period = case((rows.c.bucket < start, literal(BEFORE)), else_=literal(NOW)).label("period")
    keys = (rows.c.bot_id, rows.c.model, rows.c.detector, rows.c.label, rows.c.measure)
    stmt = (select(period, *keys, func.sum(rows.c.n), func.sum(rows.c.flagged),
                   func.sum(rows.c.total), func.sum(rows.c.total_sq))
            .group_by(period, *keys))
    cells: dict[str, dict[tuple[str, str], Cells]] = defaultdict(lambda: defaultdict(dict))
    with engine.connect() as conn:
        for p, bot, model, detector, label, measure, n, flagged, total, sq in conn.execute(stmt):
            cells[p][(bot or "", model or "")][(detector, label, measure)] = Cell(
                int(n or 0), int(flagged or 0), float(total or 0.0), float(sq or 0.0))
    return Sums({p: dict(v) for p, v in cells.items()})


def group_empathy(engine: Engine, start: datetime, end: datetime
                  ) -> dict[tuple[str, str, str], Moments]:
    """(bot, category, group) -> the moments of the empathy of the replies in [start, end) that
    answer a turn with a ``bias.user_group`` finding of that group (``group_rollups``; a reply
    counts once per group its user turn mentions), summed in SQL: a few rows per bot."""
    g = GroupRollupRow
    stmt = (select(g.bot_id, g.category, g.user_group, func.sum(g.n), func.sum(g.total),
                   func.sum(g.total_sq))
            .where(g.bucket >= start, g.bucket < end, g.user_group != "")
            .group_by(g.bot_id, g.category, g.user_group)
            .having(func.sum(g.n) > 0))
    with engine.connect() as conn:
        return {(bot or "", str(cat), str(grp)): Moments(int(n), float(total), float(sq))
                for bot, cat, grp, n, total, sq in conn.execute(stmt)}
