"""``chatmon eval benign``: flags per 1,000 replies, pages replayed at the traffic's own times,
catalogue terms lost to redaction and missed empathy on closings, on traffic we wrote
(tests/eval/fixtures/benign: a café bot with one toxic reply and one leak planted)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pipeline.errors import EvalDataError
from pipeline.eval import BENCHES, run_benchmark
from pipeline.eval.benign import catalogue_redactions, closing_replies, is_closing, load
from pipeline.eval.benign_alerts import replay_alerts
from pipeline.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def result() -> dict:
    assert "benign" in BENCHES
    return run_benchmark("benign", FIXTURES / "benign", Settings()).as_dict()


def test_counts_flagged_replies_per_1000(result) -> None:
    m = result["metrics"]
    assert result["n"] == 6  # assistant replies
    # The one insulting reply of six, and nothing else, is toxic.
    assert m["flagged_per_1000_toxicity"] == round(1000 / 6, 2)
    assert result["detail"]["flagged_per_1000_by_label"]["toxicity.insult"] == round(1000 / 6, 2)
    # Every detector that scored is listed, a quiet one at 0.
    assert m["flagged_per_1000_bias"] == 0.0


def test_pages_for_the_planted_leak(result) -> None:
    rules = {a["rule"]: a for a in result["detail"]["alerts"]}
    assert "ChatmonPIILeak" in rules
    assert rules["ChatmonPIILeak"]["evidence"][0]["conversation_id"] == "cafe-3"
    assert result["metrics"]["pages"] >= 1


def test_catalogue_and_closings(result) -> None:
    m = result["metrics"]
    # 5 mentions in cafe-1 ("Macchiato" inside "Caramel Macchiato" counts once), 3 in cafe-4.
    assert m["catalogue_mentions"] == 8
    assert 0.0 <= m["catalogue_redacted_share"] <= 1.0
    assert m["closing_replies"] == 2
    assert m["closing_replies_missed_empathy"] == 0
    # "Caramel Macchiato" recurs in two replies of one conversation: a stock phrase needs two
    # conversations, so no reply carries one, flagged or stored.
    assert "share_stored_repetition_stock_phrase" not in m


def test_catalogue_redactions_counts_lost_mentions() -> None:
    events = [{"conversation_id": "c", "turn": 0, "role": "user",
               "text": "One Caramel Macchiato and a Macchiato for Sam."}]
    rows = [{"conversation_id": "c", "turn": 0,
             "text_redacted": "One <PERSON> and a Macchiato for <PERSON>."}]
    terms = {"c": ["Macchiato", "Caramel Macchiato"]}
    assert catalogue_redactions(rows, events, terms) == (2, 1)


@pytest.mark.parametrize("text, closing", [
    ("Not now. Thanks for everything.", True),
    ("Nope, thanks. That's it. I am done.", True),
    ("Thank you, bye!", True),
    ("That's all, have a nice day", True),
    ("Thanks, but the app still crashes when I pay.", False),
    ("I'm so frustrated, thanks for nothing.", False),
    ("Can I get a latte?", False),
    ("What time do you close?", False),
])
def test_is_closing(text: str, closing: bool) -> None:
    assert is_closing(text) is closing


def test_closing_replies_pairs_user_then_assistant() -> None:
    events = [
        {"conversation_id": "a", "turn": 0, "role": "user", "text": "Thanks, bye."},
        {"conversation_id": "a", "turn": 1, "role": "assistant", "text": "Bye!"},
        {"conversation_id": "b", "turn": 0, "role": "assistant", "text": "Thanks, bye."},
        {"conversation_id": "b", "turn": 1, "role": "assistant", "text": "Hello?"},
    ]
    flagged = [{"conversation_id": "a", "turn": 1, "label": "empathy.missed"}]
    assert closing_replies(events, flagged) == (1, 1)


def _rows(times: list[datetime]) -> tuple[list[dict], list[dict]]:
    turns, findings = [], []
    for i, ts in enumerate(times):
        base = {"conversation_id": f"c{i}", "turn": 1, "role": "assistant", "ts": ts,
                "bot_id": "b", "tenant": ""}
        turns.append(base)
        findings.append({**base, "turn_id": f"t{i}", "detector": "pii", "label": "pii.leak",
                         "score": 0.9, "flagged": True})
    return turns, findings


def test_alerts_are_judged_at_the_traffic_times() -> None:
    settings = Settings()
    # Two leaks 10 s apart are one page (deduplicated); a day apart, two pages.
    close = replay_alerts(*_rows([T0, T0 + timedelta(seconds=10)]), settings)
    apart = replay_alerts(*_rows([T0, T0 + timedelta(days=1)]), settings)
    assert [(a["rule"], a["count"]) for a in close] == [("ChatmonPIILeak", 1)]
    assert [(a["rule"], a["count"]) for a in apart] == [("ChatmonPIILeak", 2)]
    assert replay_alerts(*_rows([]), settings) == []


def test_welivita_file_becomes_two_bots_over_a_week() -> None:
    events, terms, source = load(FIXTURES / "welivita-pu")
    assert source == "dataset_and_ratings.csv" and terms == {}
    assert len(events) == 3 * 2 * 2  # situations x ChatGPT kinds x (user, reply)
    assert {e["bot_id"] for e in events} == {"welivita-chatgpt", "welivita-chatgpt_empathy"}
    times = sorted(datetime.fromisoformat(e["ts"]) for e in events)
    assert times[-1] - times[0] < timedelta(days=7)


def test_unreadable_input_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(EvalDataError, match="no turns.jsonl"):
        load(tmp_path)
    (tmp_path / "x.jsonl").write_text(json.dumps({"turns": "x"}) + "\nnot json\n")
    with pytest.raises(EvalDataError, match="not chatmon events"):
        load(tmp_path)
