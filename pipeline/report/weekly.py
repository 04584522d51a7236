"""``chatmon report``: the weekly quality view as ONE self-contained HTML file, for teams without
Grafana. It runs the weekly dashboard's own SQL (:mod:`dashboards.queries`) on the store and
draws it with plotly; plotly.js is embedded inline, so the file works offline.

The window: the 7 days ending at the newest stored turn (so a report on an export from last
month is not empty), or ending now when the store has no turns; ``--until``/``--days`` override.
"Week over week" compares it with the 7 days before. Trends show the 8 ISO weeks up to the end.
Only aggregates and redacted excerpts appear in the report, never raw text.
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
from pipeline.report import figures as figs
from pipeline.store import db
from pipeline.store.models import TurnRow

TEMPLATES = Path(__file__).resolve().parent / "templates"
WORST_SHOWN = 10
COMPARED_MODELS = 4


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime

    def previous(self) -> Window:
        return Window(self.start - (self.end - self.start), self.start)


def default_window(engine: Engine, until: datetime | None = None, days: int = 7) -> Window:
    """``days`` days ending at ``until``, else at the newest stored turn, else now."""
    if until is None:
        with engine.connect() as conn:
            newest = conn.execute(select(func.max(TurnRow.ts))).scalar_one_or_none()
        if isinstance(newest, str):  # SQLite without type processing
            newest = datetime.fromisoformat(newest)
        until = newest + timedelta(seconds=1) if newest is not None else datetime.now(UTC)
    if until.tzinfo is None:
        until = until.replace(tzinfo=UTC)
    until = until.astimezone(UTC)  # the report prints its window as UTC
    return Window(until - timedelta(days=days), until)


def _rows(engine: Engine, query: Any, window: Window, **variables: str) -> list[dict[str, Any]]:
    return sqlrun.run(engine, query.sql, window.start, window.end, **variables).records()


def collect(engine: Engine, window: Window) -> dict[str, Any]:
    """Every table the report shows, as lists of row dicts."""
    trend = Window(window.end - timedelta(weeks=8), window.end)
    data: dict[str, Any] = {name: _rows(engine, query, window) for name, query in (
        ("mechanisms", q.MECHANISMS), ("phrases", q.STOCK_PHRASES),
        ("near_duplicates", q.NEAR_DUPLICATES), ("templates", q.TEMPLATES),
        ("gap", q.EMPATHY_GAP), ("summary", q.BOT_SUMMARY), ("worst", q.WORST_CONVERSATIONS),
        ("validation", q.VALIDATION_LATEST), ("agreement", q.AGREEMENT))}
    data["previous"] = _rows(engine, q.BOT_SUMMARY, window.previous())
    data["empathy_trend"] = _rows(engine, q.EMPATHY_WEEKLY, trend)
    data["judge_agreement"] = _rows(engine, q.JUDGE_AGREEMENT_WEEKLY, trend)
    data["conversations"] = {
        r["conversation_id"]: _rows(engine, q.CONVERSATION, window,
                                    conversation=r["conversation_id"])
        for r in data["worst"][:WORST_SHOWN]}
    data["models"] = model_comparison(engine, window)
    return data


def model_comparison(engine: Engine, window: Window) -> dict[str, Any] | None:
    """``chatmon compare`` for the window's models with the most replies (up to 4; the first
    is the reference), or None when the window holds fewer than two models."""
    from pipeline.compare.data import Selection, models_in
    from pipeline.compare.view import build

    sel = Selection(since=window.start, until=window.end)
    models = models_in(engine, sel, limit=COMPARED_MODELS)
    return build(engine, models, sel, require_replies=False) if len(models) >= 2 else None


def _figures(data: dict[str, Any]) -> list[tuple[str, Any]]:
    """(div id, figure) for every plot that has data."""
    candidates = [
        ("plot-empathy-trend", data["empathy_trend"], lambda: figs.empathy_trend(
            data["empathy_trend"])),
        ("plot-mechanisms", data["mechanisms"], lambda: figs.mechanisms(data["mechanisms"])),
        ("plot-harms", data["summary"], lambda: figs.harms(data["summary"], data["previous"])),
        ("plot-gap", data["gap"], lambda: figs.empathy_gap(data["gap"])),
        ("plot-phrases", data["phrases"], lambda: figs.stock_phrases(data["phrases"])),
        ("plot-near-duplicates", data["near_duplicates"],
         lambda: figs.near_duplicates(data["near_duplicates"])),
        ("plot-templates", data["templates"], lambda: figs.templates(data["templates"])),
        ("plot-judge-agreement", data["judge_agreement"],
         lambda: figs.judge_agreement(data["judge_agreement"])),
    ]
    return [(div, make()) for div, rows, make in candidates if rows]


def changes(current: list[dict[str, Any]], previous: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per bot: this window's numbers and their change since the window before (None: no data
    the week before)."""
    prev = {r["bot"]: r for r in previous}
    out = []
    for r in current:
        before = prev.get(r["bot"])
        row = {"bot": r["bot"], "replies": r["replies"]}
        for key in ("empathy", *figs.HARMS):
            now = None if r[key] is None else float(r[key])
            then = None if before is None or before[key] is None else float(before[key])
            row[key] = now
            row[f"{key}_change"] = None if now is None or then is None else now - then
        out.append(row)
    return out


def render(engine: Engine, window: Window, generated_at: datetime | None = None) -> str:
    """The report's HTML."""
    import plotly.offline

    data = collect(engine, window)
    plots = [(div, fig.to_html(full_html=False, include_plotlyjs=False, div_id=div,
                               config={"displayModeBar": False, "responsive": True}))
             for div, fig in _figures(data)]
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]))
    return env.get_template("report.html").render(
        window=window, previous=window.previous(), data=data, plots=plots,
        changes=changes(data["summary"], data["previous"]),
        plotly_js=plotly.offline.get_plotlyjs(), version=__version__,
        generated_at=(generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC"))


def require_current(engine: Engine) -> None:
    """The queries read the newest schema: say how to get there instead of failing in SQL."""
    if not db.is_current(engine):
        raise ChatmonError(f"the store {engine.url.render_as_string()} is not at the newest "
                           "schema: run `chatmon db upgrade` first")


def write_report(engine: Engine, out: Path, window: Window) -> Path:
    require_current(engine)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(engine, window), encoding="utf-8")
    return out
