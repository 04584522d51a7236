"""``chatmon judge`` against a scripted judge server (a real local HTTP server playing an LLM,
since no real one exists here): findings for exactly the sampled and rule-matched turns, a
rerun that sends nothing, the cache, broken JSON retried once then dead-lettered, refusals,
429 with Retry-After, slow and dead endpoints, budgets."""

from __future__ import annotations

import json
import socket
import time

from sqlalchemy import create_engine, text

from pipeline.judge.budget import reservation
from pipeline.judge.prompt import messages
from pipeline.judge.rubric import shipped
from pipeline.judge.select import Rule, sample_point
from tests.judge.conftest import (
    add_findings,
    conversation,
    conversations,
    dead_letters,
    judge_all,
    judge_rows,
)
from tests.judge.scripted_judge import ScriptedJudge, scripted_rating


def test_stores_exactly_the_sampled_and_rule_matched_turns_and_a_rerun_sends_nothing(
        store, judge_server):
    url = store(conversations(60))
    add_findings(url, [("c0003", 1, "manipulation.dependence", 0.8, True, {}),
                       ("c0004", 1, "manipulation.guilt", 0.4, False, {}),  # near miss
                       ("c0005", 1, "empathy.score", 0.2, True, {}),
                       ("c0006", 1, "empathy.score", 0.3, False, {})])  # near miss: not < 0.3
    rules = (Rule.parse("manipulation.* flagged"), Rule.parse("empathy.score < 0.3"))
    sampled = {f"c{i:04d}" for i in range(60) if sample_point(f"c{i:04d}", 1) < 0.2}
    expected = sorted(sampled | {"c0003", "c0005"})
    assert 3 < len(sampled) < 25  # the hash spreads: a fifth of 60, give or take

    report = judge_all(url, judge_server.url, sample_rate=0.2, rules=rules,
                       rubrics=("epitome_er", "empathy"))
    rows = judge_rows(url)
    assert sorted({r.conversation_id for r in rows}) == expected
    assert {r.turn for r in rows} == {1}  # assistant turns only
    assert len(rows) == 2 * len(expected) == len(judge_server.requests)
    assert report.turns_read == 60 and report.turns_selected == len(expected)
    assert report.selected["manipulation.* flagged"] == 1
    assert report.selected["empathy.score < 0.3"] == 1

    before = len(judge_server.requests)
    again = judge_all(url, judge_server.url, sample_rate=0.2, rules=rules,
                      rubrics=("epitome_er", "empathy"))
    assert len(judge_server.requests) == before  # zero calls
    assert again.already_stored == 2 * len(expected) and not again.from_endpoint
    assert len(judge_rows(url)) == len(rows)


def test_finding_carries_rating_model_rubric_and_reason_and_the_request_is_pinned(
        store, judge_server):
    url = store(conversation("c1", "My card was charged twice.", "I am sorry. [rate=2]"))
    judge_all(url, judge_server.url)
    (row,) = judge_rows(url)
    ev = json.loads(row.evidence) if isinstance(row.evidence, str) else row.evidence
    assert (row.label, row.score, bool(row.flagged)) == ("judge.epitome_er", 1.0, True)
    assert ev["rating"] == 2 and ev["scale"] == [0, 2] and ev["model"] == "judge-1"
    assert (ev["rubric"], ev["rubric_version"], ev["compare_to"]) == ("epitome_er", "1",
                                                                      "empathy.er")
    assert ev["reason"] == "Scripted: rated 2."
    assert row.detector_version == "epitome_er@1/judge-1"
    body = judge_server.requests[0]["body"]
    assert (body["model"], body["temperature"], body["seed"]) == ("judge-1", 0.0, 0)
    assert body["messages"][1]["content"].startswith("<user>\nMy card was charged twice.")


def test_scores_place_the_rating_on_the_scale(store, judge_server):
    url = store(conversation("c1", "Hi", "Fine. [rate=4]"))
    judge_all(url, judge_server.url, rubrics=("empathy",))
    (row,) = judge_rows(url)
    assert row.score == 0.75 and bool(row.flagged)  # (4 - 1) / (5 - 1)


def test_the_cache_answers_the_same_redacted_text_without_a_request(store, judge_server):
    same = "Sorry for the inconvenience, it ships tomorrow."
    url = store(conversation("a", "Where is it?", same) + conversation("b", "Where is it?", same)
                + conversation("c", "Where is my refund?", same, minute=1))
    report = judge_all(url, judge_server.url)
    assert len(judge_rows(url)) == 3
    assert len(judge_server.requests) == 2  # a and b send the same messages; c another user turn
    assert report.from_cache["judge.epitome_er"] == 1
    engine = create_engine(url)
    with engine.begin() as conn:  # findings gone (a purge, a lost table): the cache remains
        conn.execute(text("delete from findings where detector = 'judge'"))
    judge_all(url, judge_server.url)
    assert len(judge_server.requests) == 2 and len(judge_rows(url)) == 3
    judge_all(url, judge_server.url, model="judge-2")  # another judge model asks again
    assert len(judge_server.requests) == 4
    assert {r.detector_version for r in judge_rows(url)} == {"epitome_er@1/judge-1",
                                                            "epitome_er@1/judge-2"}


def test_a_new_rubric_version_is_a_new_finding_and_asks_again(store, judge_server):
    url = store(conversation("c1", "Hi", "Hello, how can I help?"))
    judge_all(url, judge_server.url)
    v2 = shipped("epitome_er").model_copy(update={"version": "2"})
    judge_all(url, judge_server.url, rubric_objects=[v2])
    assert len(judge_server.requests) == 2
    assert {r.detector_version for r in judge_rows(url)} == {"epitome_er@1/judge-1",
                                                            "epitome_er@2/judge-1"}


def test_broken_json_is_retried_once_then_a_failure_never_guessed(store, judge_server):
    url = store(conversation("ok", "Hi", "Fine [broken-once]")
                + conversation("bad", "Hi", "Fine [broken]", minute=1))
    report = judge_all(url, judge_server.url)
    rows = judge_rows(url)
    assert [r.conversation_id for r in rows] == ["ok"]  # the second answer was JSON
    assert report.failed == {"judge.epitome_er": 1}
    assert len(judge_server.requests) == 4  # two per reply
    retry = judge_server.requests[-1]["body"]["messages"]
    assert retry[-1]["role"] == "user" and "not usable (not JSON" in retry[-1]["content"]
    (dead,) = dead_letters(url)
    assert (dead.reason, dead.conversation_id, dead.turn, dead.detector) == (
        "judge_failed", "bad", 1, "judge")
    assert "an unusable answer twice: not JSON" in dead.detail


def test_a_refused_request_is_a_failure_and_not_retried(store, judge_server):
    url = store(conversation("c1", "Hi", "Fine [refuse]"))
    report = judge_all(url, judge_server.url)
    assert report.failed == {"judge.epitome_er": 1} and not judge_rows(url)
    assert len(judge_server.requests) == 1
    assert "HTTP 400" in dead_letters(url)[0].detail


def test_429_with_retry_after_is_waited_out(store):
    url = store(conversation("c1", "Hi", "Fine [busy]"))
    with ScriptedJudge(retry_after="1") as server:
        t0 = time.monotonic()
        report = judge_all(url, server.url)
        waited = time.monotonic() - t0
    assert len(judge_rows(url)) == 1 and report.retries == 2
    assert waited >= 2.0  # Retry-After: 1, twice (the backoff alone would be milliseconds)


def test_a_slow_endpoint_past_the_timeout_leaves_the_turn_for_later(store):
    from pipeline.probe.client import RetryPolicy

    url = store(conversation("c1", "Hi", "Fine [slow]"))
    with ScriptedJudge(slow_s=1.0) as server:
        report = judge_all(url, server.url, retry=RetryPolicy(0, 0.01, timeout_s=0.3))
        assert report.stopped and "no answer within 0.3 s" in report.stopped
        assert not judge_rows(url) and not dead_letters(url)
        judge_all(url, server.url, retry=RetryPolicy(0, 0.01, timeout_s=5.0))
    assert len(judge_rows(url)) == 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_dead_endpoint_stops_the_run_and_the_next_run_catches_up(store):
    url = store(conversations(5))
    port = _closed_port()
    report = judge_all(url, f"http://127.0.0.1:{port}/v1")
    assert report.stopped and report.stopped.startswith("endpoint unavailable: cannot reach")
    assert report.not_judged == 5 and not judge_rows(url) and not dead_letters(url)
    with ScriptedJudge(port=port) as server:
        report = judge_all(url, server.url)
    assert report.stopped is None and len(judge_rows(url)) == 5


def test_token_budget_stops_before_the_request_that_could_pass_it(store, judge_server):
    url = store(conversations(10))
    rubric = shipped("epitome_er")
    engine = create_engine(url)
    with engine.connect() as conn:
        first = conn.execute(text("select text_redacted from turns where turn = 0 "
                                  "order by conversation_id limit 1")).scalar_one()
        reply = conn.execute(text("select text_redacted from turns where turn = 1 "
                                  "order by conversation_id limit 1")).scalar_one()
    want = reservation(messages(rubric, first, reply), 200)
    budget = 100 * 3 + want  # after 3 answers (100 tokens each) a 4th fits; a 5th would not
    report = judge_all(url, judge_server.url, tokens_per_day=budget, concurrency=1)
    assert len(judge_server.requests) == 4 and len(judge_rows(url)) == 4
    assert report.stopped and "token budget" in report.stopped
    with engine.connect() as conn:
        used = conn.execute(text("select requests, tokens from judge_usage")).one()
    assert tuple(used) == (4, 400) and budget >= 400
    again = judge_all(url, judge_server.url, tokens_per_day=budget, concurrency=1)
    assert len(judge_server.requests) == 4 and again.stopped  # the day's budget is kept


def test_requests_per_minute_space_the_requests(store, judge_server):
    url = store(conversations(4))
    judge_all(url, judge_server.url, requests_per_minute=240, concurrency=4)  # one per 0.25 s
    gaps = [b - a for a, b in zip(judge_server.times, judge_server.times[1:], strict=False)]
    assert len(judge_server.times) == 4 and min(gaps) >= 0.2


def test_scripted_ratings_are_what_is_stored(store, judge_server):
    url = store(conversations(8))
    judge_all(url, judge_server.url, rubrics=("empathy",))
    engine = create_engine(url)
    with engine.connect() as conn:
        texts = dict(conn.execute(text("select conversation_id, text_redacted from turns "
                                       "where turn = 1")).all())
    for row in judge_rows(url):
        ev = json.loads(row.evidence) if isinstance(row.evidence, str) else row.evidence
        assert ev["rating"] == scripted_rating(texts[row.conversation_id], 1, 5)
