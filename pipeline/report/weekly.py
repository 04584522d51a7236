"""``chatmon report``: the weekly quality view as ONE self-contained HTML file, for teams without
Grafana. It runs the weekly dashboard's own SQL (:mod:`dashboards.queries`) on the store and
draws it with plotly; plotly.js is embedded inline, so the file works offline. Its comparisons
and their intervals come from the rollups (:mod:`pipeline.report.rollups`): the report reads a
number of rows that grows with bots, models and weeks, not with turns (issue 41).

The window: the 7 days ending at the end of the newest stored turn's day (UTC midnight after it,
so a report on an export from last month is not empty), or of today when the store has no
turns; ``--until``/``--days`` override, and the end is rounded up to the day (the phrase and
user-group rollups count per day, the others per hour). "Week over week"
compares it with the 7 days before. Trends show the 8 ISO weeks up to the end. Only aggregates
and redacted excerpts appear in the report, never raw text.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from sqlalchemy import Engine, func, select

from dashboards import queries as q
from dashboards import sqlrun
from pipeline import __version__
from pipeline.errors import ChatmonError
from pipeline.report import comparisons as cmp
from pipeline.report import rollups, side_by_side
from pipeline.report.estimates import Groups
from pipeline.report.layout import CONFIG
from pipeline.report.panels import panels
from pipeline.store import db
from pipeline.store.models import RollupRow

TEMPLATES = Path(__file__).resolve().parent / "templates"
WORST_SHOWN = 10
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime

    def previous(self) -> Window:
        return Window(self.start - (self.end - self.start), self.start)


def default_window(engine: Engine, until: datetime | None = None, days: int = 7) -> Window:
    """``days`` days ending at ``until``, else just after the newest stored turn, else now;
    the end rounded up to the day (UTC midnight), so that the window is whole days of rollups
    (``phrase_rollups`` and ``group_rollups`` count per day). The newest turn's hour is the
    newest rollup hour with turns (by the rollups' primary key, not a scan of the turns)."""
    if until is None:
        with engine.connect() as conn:
            newest = conn.execute(select(func.max(RollupRow.bucket)).where(
                RollupRow.detector == "", RollupRow.label == "", RollupRow.measure == "",
                RollupRow.n > 0)).scalar_one_or_none()
        if isinstance(newest, str):  # SQLite without type processing
            newest = datetime.fromisoformat(newest)
        until = newest + HOUR if newest is not None else datetime.now(UTC)
    if until.tzinfo is None:
        until = until.replace(tzinfo=UTC)
    until = until.astimezone(UTC)  # the report prints its window as UTC
    day = until.replace(hour=0, minute=0, second=0, microsecond=0)
    until = day if day == until else day + DAY
    return Window(until - timedelta(days=days), until)


def _rows(engine: Engine, query: Any, window: Window, **variables: str) -> list[dict[str, Any]]:
    return sqlrun.run(engine, query.sql, window.start, window.end, **variables).records()


def collect(engine: Engine, window: Window, s: cmp.Settings | None = None) -> dict[str, Any]:
    """Every table the report shows (lists of row dicts) and every comparison it draws."""
    s = s or cmp.Settings()
    trend = Window(window.end - timedelta(weeks=8), window.end)
    data: dict[str, Any] = {name: _rows(engine, query, window) for name, query in (
        ("formulas", q.STOCK_EMPATHY), ("phrases", q.STOCK_PHRASES), ("templates", q.TEMPLATES),
        ("worst", q.WORST_CONVERSATIONS), ("validation", q.VALIDATION_LATEST),
        ("agreement", q.AGREEMENT))}
    data["empathy_weeks"] = _rows(engine, q.EMPATHY_WEEKS, trend)
    data["judge_agreement"] = _rows(engine, q.JUDGE_AGREEMENT_WEEKLY, trend)
    data["conversations"] = {
        r["conversation_id"]: _rows(engine, q.CONVERSATION, window,
                                    conversation=r["conversation_id"])
        for r in data["worst"][:WORST_SHOWN]}
    data.update(comparisons(engine, window, s))
    return data


def comparisons(engine: Engine, window: Window, s: cmp.Settings) -> dict[str, Any]:
    """Every comparison the report draws, from the rollups of the window and the week before
    (and ``group_rollups`` for the empathy gap)."""
    sums = rollups.load(engine, window.previous().start, window.start, window.end,
                        {*cmp.LABELS, *side_by_side.LABELS}, cmp.MEASURES)
    data: dict[str, Any] = {}
    data["empathy"] = cmp.empathy_means(sums, s)
    data["missed"] = cmp.missed(sums, s)
    data["bot_empathy"] = cmp.mean(sums, cmp.bot, rollups.empathy(), s)
    data["mechanisms"] = cmp.mechanisms(sums, s)
    data["harms"] = cmp.harms(sums, s)
    data["stock_empathy"] = cmp.stock_empathy(sums, s)
    data["near_duplicates"] = cmp.near_duplicates(sums, s)
    data["gap"] = cmp.empathy_gap(sums, rollups.group_empathy(engine, window.start, window.end),
                                  s)
    data["bots"] = per_bot(sums, data["bot_empathy"], data["harms"], s.min_replies)
    data["models"] = side_by_side.build(sums, s.confidence)
    data["settings"] = s
    return data


def per_bot(sums: rollups.Sums, empathy: Groups, harms: dict[str, Groups],
            min_replies: int) -> list[dict[str, Any]]:
    """The week-over-week table: per bot its replies, and its empathy and harm rows (None where
    the bot had too few replies)."""
    replies = {k: cmp.replies(cells) for k, cells in sums.groups(rollups.NOW, cmp.bot).items()}
    rows_of = {"empathy": {r.key: r for r in empathy.rows},
               **{h: {r.key: r for r in g.rows} for h, g in harms.items()}}
    return [{"bot": bot, "replies": n, "enough": n >= min_replies,
             **{name: rows.get(bot) for name, rows in rows_of.items()}}
            for bot, n in replies.items()]


def render(engine: Engine, window: Window, generated_at: datetime | None = None,
           settings: cmp.Settings | None = None) -> str:
    """The report's HTML."""
    import plotly.offline

    data = collect(engine, window, settings)
    cards = [(p, p.figure.to_html(full_html=False, include_plotlyjs=False, div_id=p.id,
                                  config=CONFIG) if p.figure is not None else "")
             for p in panels(data)]
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]))
    return env.get_template("report.html").render(
        window=window, previous=window.previous(), data=data, cards=cards,
        plotly_js=plotly.offline.get_plotlyjs(), version=__version__,
        generated_at=(generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC"))


def require_current(engine: Engine) -> None:
    """The queries read the newest schema: say how to get there instead of failing in SQL."""
    if not db.is_current(engine):
        raise ChatmonError(f"the store {engine.url.render_as_string()} is not at the newest "
                           "schema: run `chatmon db upgrade` first")


def write_report(engine: Engine, out: Path, window: Window,
                 settings: cmp.Settings | None = None) -> Path:
    require_current(engine)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(engine, window, settings=settings), encoding="utf-8")
    return out
