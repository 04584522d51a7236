"""Purging a conversation reaches the judge's tables too: its ``judge.*`` findings, and the
cached answer whose reasoning quotes its reply (the scripted judge quotes it, as real judges
often do). Another conversation's cached answer stays, so judging it again costs nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text

from pipeline.cli import cli
from pipeline.lifecycle.purge import EXPIRED, Purger, Request
from pipeline.lifecycle.retention import Retention
from tests.judge.conftest import conversation, judge_all, judge_rows
from tests.judge.scripted_judge import ScriptedJudge
from tests.test_purge_conversation import traces

C, D = "c-judged-erase", "d-judged-keep"


def test_purge_removes_the_judges_findings_and_cached_answers(
        store: Callable[..., str], monkeypatch: pytest.MonkeyPatch) -> None:
    url = store([
        *conversation(C, "The oak bookcase arrived with a warped shelf.",
                      "Sorry the bookcase shelf arrived warped; a new shelf ships today."),
        *conversation(D, "Where is my parcel?", "It is at the depot and arrives tomorrow.",
                      minute=5)])
    with ScriptedJudge(quote=True) as server:
        judge_all(url, server.url)
        asked = len(server.requests)
    engine = create_engine(url)
    with engine.connect() as conn:
        c_texts = [t for (t,) in conn.execute(text(
            "select text_redacted from turns where conversation_id = :c"), {"c": C})]
        cache_convs = {c for (c,) in conn.execute(text(
            "select conversation_id from judge_cache"))}
    assert asked == 2 and cache_convs == {C, D}
    assert {t for t, _ in traces(engine, [c_texts[1]])} >= {"turns", "judge_cache"}

    monkeypatch.setenv("CHATMON_DATABASE_URL", url)
    done = CliRunner().invoke(cli, ["purge", "--conversation", C, "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["rows"]["judge_cache"] == 1

    assert traces(engine, [C, *c_texts]) == []
    assert [r.conversation_id for r in judge_rows(url)] == [D]
    with ScriptedJudge(quote=True) as server:
        report = judge_all(url, server.url)
        assert server.requests == [] and report.already_stored == 1
    engine.dispose()


def test_expiry_removes_cached_answers_with_their_conversation(
        store: Callable[..., str]) -> None:
    """The conversations are from 2026-03; a 30-day retention on 2026-05-01 expires the first,
    whose turns are all older, but not the second, sent in April."""
    url = store([*conversation(C, "My invoice is wrong.", "Sorry, I have corrected it."),
                 *conversation(D, "Where is my parcel?", "It arrives tomorrow.",
                               minute=60 * 24 * 40)])
    with ScriptedJudge(quote=True) as server:
        judge_all(url, server.url)
    engine = create_engine(url)
    result = Purger(engine, "expiry").run(Request(EXPIRED, retention=Retention(30)),
                                          now=datetime(2026, 5, 1, tzinfo=UTC))
    with engine.connect() as conn:
        cache_convs = [c for (c,) in conn.execute(text("select conversation_id from judge_cache"))]
    engine.dispose()
    assert result.rows["turns"] == 2 and result.rows["judge_cache"] == 1
    assert cache_convs == [D]
