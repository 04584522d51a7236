"""The judge over stored turns: once over a time window (``chatmon judge``), or following new
turns as they are stored (``chatmon judge --follow``), apart from whatever stores them.

Following reads turns in stored order (``stored_at``, then id) from a cursor kept in the store
(``judge_cursors``, one per judge model and rubric set), only turns stored ``settle_s`` ago or
more, so a batch another process is still committing is not passed over. The cursor moves
only past a batch the judge finished; when the endpoint is unavailable or the day's budget is
spent, the same batch is tried again after a wait that doubles (up to 12 polls), so nothing
is lost and the judge catches up when the endpoint returns.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from pipeline.judge.runner import Judge, JudgeReport
from pipeline.judge.select import Window, assistant_turns, candidates
from pipeline.judge.store import get_cursor, set_cursor

log = logging.getLogger(__name__)
SETTLE_S = 10.0
MAX_BACKOFF_POLLS = 12


def judge_window(judge: Judge, window: Window) -> JudgeReport:
    """Judge the sampled and rule-matched assistant turns of ``window`` (by turn time); stops
    early when the endpoint is unavailable or the budget is spent (``report.stopped``)."""
    o, after = judge.options, window.after
    while True:
        rows = assistant_turns(judge.engine, replace(window, after=after), o.batch)
        if not rows:
            return judge.report
        picked = candidates(judge.engine, rows, o.sample_rate, o.rules)
        judge.report.read(len(rows), picked)
        judge.judge(picked)
        if judge.report.stopped:
            return judge.report
        after = (rows[-1].ts, rows[-1].id)


def cursor_name(judge: Judge) -> str:
    keys = ",".join(sorted(r.key for r in judge.rubrics))
    text = f"follow|{judge.model}|{keys}"
    return text if len(text) <= 200 else text[:150] + "|" + hashlib.sha256(
        text.encode()).hexdigest()[:40]


def follow(judge: Judge, stop: threading.Event, poll_s: float = 5.0,
           since: datetime | None = None, settle_s: float = SETTLE_S) -> JudgeReport:
    """Judge new turns as they are stored until ``stop`` is set."""
    engine, o = judge.engine, judge.options
    name = cursor_name(judge)
    position = get_cursor(engine, name)
    wait = poll_s
    while not stop.is_set():
        settled = datetime.now(UTC) - timedelta(seconds=settle_s)
        rows = assistant_turns(engine, Window(since=since, after=position,
                                              stored_before=settled), o.batch)
        if not rows:
            stop.wait(poll_s)
            continue
        picked = candidates(engine, rows, o.sample_rate, o.rules)
        report = judge.judge(picked)
        if report.stopped:
            log.warning("judge: %s; trying the same %d turns again in %.0f s", report.stopped,
                        len(rows), wait)
            stop.wait(wait)
            wait = min(wait * 2, poll_s * MAX_BACKOFF_POLLS)
            continue
        wait = poll_s
        judge.report.read(len(rows), picked)
        position = (rows[-1].stored_at, rows[-1].id)
        set_cursor(engine, name, position)
    return judge.report
