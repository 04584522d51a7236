"""What the report's comparisons are computed from (issue 41): the ``rollups`` the sink keeps per
hour, bot and model (``pipeline/store/models.py`` ``RollupRow``), summed over the window and the
week before, so that the report reads a few thousand rows whatever the number of turns:

- replies: the turn rows (``n``) of assistant turns;
- a rate's events: the ``'turns'`` rows (``flagged``: replies with a flagged finding of the
  detector, or of the label);
- a mean's sample: the ``empathy.score`` rows as moments (count, sum, sum of squares of the
  score, or of an evidence number: ``er``, ``ip``, ``ex``, ``alignment``).

Only the empathy gap reads rows: the replies that follow a ``bias.user_group`` finding, by index
(findings' (label, ts), then (conversation_id, turn)), summed in SQL. Only numbers and labels are
read, never text.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine, and_, case, func, literal, or_, select
from sqlalchemy.orm import aliased

from pipeline.compare.stats import Moments
from pipeline.store.models import FindingRow, RollupRow

NOW, BEFORE = "now", "before"
EMPATHY = "empathy.score"
USER_GROUP = "bias.user_group"
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
    period = case((r.bucket < start, literal(BEFORE)), else_=literal(NOW)).label("period")
    kinds = or_(r.label == "", and_(r.label.in_(tuple(labels)), r.measure == "turns"),
                and_(r.label == EMPATHY, r.measure.in_(("", *measures))))
    stmt = (select(period, r.bot_id, r.model, r.detector, r.label, r.measure, func.sum(r.n),
                   func.sum(r.flagged), func.sum(r.total), func.sum(r.total_sq))
            .where(r.role == "assistant", r.bucket >= before, r.bucket < end, kinds)
            .group_by(period, r.bot_id, r.model, r.detector, r.label, r.measure))
    cells: dict[str, dict[tuple[str, str], Cells]] = defaultdict(lambda: defaultdict(dict))
    with engine.connect() as conn:
        for p, bot, model, detector, label, measure, n, flagged, total, sq in conn.execute(stmt):
            cells[p][(bot or "", model or "")][(detector, label, measure)] = Cell(
                int(n or 0), int(flagged or 0), float(total or 0.0), float(sq or 0.0))
    return Sums({p: dict(v) for p, v in cells.items()})


def group_empathy(engine: Engine, since: datetime, start: datetime, end: datetime
                  ) -> dict[tuple[str, str, str], Moments]:
    """(bot, category, group) -> the moments of the empathy of the replies in [start, end) that
    answer a turn with a ``bias.user_group`` finding of that group (found since ``since``, so
    that a reply early in the window still sees the turn before it). A reply counts once per
    group its user turn mentions. The mentions are read by the findings' (label, ts) index and
    joined to their replies on (conversation_id, turn) (indexed: the database probes it per
    mention when mentions are few, as on support traffic, or hashes the window's empathy
    scores when they are not), summed in SQL: a few rows per bot."""
    g, e = aliased(FindingRow), aliased(FindingRow)
    group = g.evidence["group"].as_string()
    category = func.coalesce(g.evidence["category"].as_string(), "")
    mentions = (select(g.conversation_id, g.turn, category.label("category"),
                       group.label("grp"))
                .where(g.label == USER_GROUP, g.ts >= since, g.ts < end, group.is_not(None),
                       group != "")
                .distinct().subquery())
    stmt = (select(e.bot_id, mentions.c.category, mentions.c.grp, func.count(),
                   func.sum(e.score), func.sum(e.score * e.score))
            .select_from(mentions)
            .join(e, and_(e.conversation_id == mentions.c.conversation_id,
                          e.turn == mentions.c.turn + 1, e.label == EMPATHY,
                          e.role == "assistant", e.ts >= start, e.ts < end))
            .group_by(e.bot_id, mentions.c.category, mentions.c.grp))
    with engine.connect() as conn:
        return {(bot or "", str(cat), str(grp)): Moments(int(n), float(total), float(sq))
                for bot, cat, grp, n, total, sq in conn.execute(stmt)}
