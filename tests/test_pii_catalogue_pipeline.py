"""A bot's learned catalogue through the real pipeline (issue 39, deliverable 4).

``chatmon pii catalogue learn`` on a week of a coffee bot's traffic, then the same traffic
through ``chatmon run``'s processor (batches of 32, and of 1 on a freshly loaded detector: a
restart) and through ``chatmon serve`` (one event per request), with the real analyser:

- a menu item no rule knows ("I would say Marzipane"; since pii 1.8.0 the head keeps a word-like
  name such as "Frostbite" itself), named in 12 conversations, is kept in
  the stored text and raises no ``pii.person`` or ``pii.leak``; the same name on another bot is
  redacted (catalogues are per bot);
- a customer's name recurring in 3 conversations (below the 5 a catalogue entry needs), and a
  given name after "the order is for" in all 12, stay redacted;
- every mode stores the same findings and the same redacted text;
- neither the catalogue file nor the store holds a customer's name.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import SecretStr
from sqlalchemy import create_engine, text
from starlette.testclient import TestClient

from pipeline.cli import cli
from pipeline.embedded import runner
from pipeline.embedded.serve import create_app
from pipeline.scoring.process import Processor
from pipeline.scoring.suite import DetectorSuite
from pipeline.settings import Settings
from pipeline.store import db
from pipeline.store.sink import Sink

pytestmark = pytest.mark.slow

START = datetime(2026, 11, 2, 9, tzinfo=UTC)
TOKEN = "t0ken-for-tests"


def _conv(cid: str, bot: str, k: int, lines: list[tuple[str, str]]) -> list[dict[str, Any]]:
    at = START + timedelta(minutes=7 * k)
    return [{"conversation_id": cid, "turn": i, "role": role, "text": t, "bot_id": bot,
             "ts": (at + timedelta(seconds=20 * i)).isoformat()}
            for i, (role, t) in enumerate(lines)]


def traffic() -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for k in range(12):
        events += _conv(f"coffee-{k}", "coffee-bot", k, [
            ("user", "Hi, what would you recommend today?"),
            ("assistant", "I would say Marzipane."),
            ("user", "Great, one of those. The order is for Sam."),
            ("assistant", "Thanks, it will be ready in five minutes."),
        ])
    for k in range(3):  # one customer, three visits
        events += _conv(f"regular-{k}", "coffee-bot", 20 + k, [
            ("user", "The usual please"),
            ("assistant", "Here is your latte, Kowalczyk."),
        ])
    for k in range(2):
        events += _conv(f"music-{k}", "music-bot", 40 + k, [
            ("user", "Any suggestion?"),
            ("assistant", "I would say Marzipane."),
        ])
    return events


@pytest.fixture(scope="module")
def learned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("catalogue")
    events = folder / "week.jsonl"
    events.write_text("".join(json.dumps(e) + "\n" for e in traffic()))
    out = folder / "catalogue.json"
    result = CliRunner().invoke(cli, ["pii", "catalogue", "learn", str(events), "--out",
                                      str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "coffee-bot: 15 conversations, " in result.output
    return events, out


def _suite(catalogue: Path | None) -> DetectorSuite:
    options = {"pii": {"catalogue": str(catalogue)}} if catalogue else {}
    suite = DetectorSuite.from_names(["pii"], options)
    suite.load()
    for d in suite.detectors:
        if hasattr(d, "configure_cache"):
            d.configure_cache(0)  # each run computes every turn in its own batches
    return suite


def _processor(url: str, suite: DetectorSuite, **settings: Any) -> Processor:
    db.upgrade(url)
    s = Settings(database_url=url, **settings)
    sink = Sink(db.make_engine(url))
    sink.start_run(url, "run", "test", suite.versions, "test")
    return Processor(s, suite, sink, run_id=url)


def _stored(url: str) -> tuple[dict[tuple[Any, ...], Any], dict[tuple[str, int], str]]:
    engine = create_engine(url)
    with engine.connect() as conn:
        found = conn.execute(text(
            "select conversation_id, turn, label, span_start, span_end, score, flagged, "
            "detector_version from findings")).all()
        turns = conn.execute(text(
            "select conversation_id, turn, text_redacted from turns")).all()
    engine.dispose()
    return ({tuple(r[:5]): (round(float(r[5]), 3), bool(r[6]), r[7]) for r in found},
            {(r[0], r[1]): r[2] for r in turns})


def test_the_catalogue_file_holds_no_span_text(learned: tuple[Path, Path]) -> None:
    raw = learned[1].read_bytes().lower()
    for word in (b"frostbite", b"kowalczyk", b"sam"):
        assert word not in raw
    data = json.loads(raw)
    coffee = next(b for b in data["bots"] if b["bot"] == "coffee-bot")
    assert coffee["conversations"] == 15 and len(coffee["entries"]) >= 1
    music = next(b for b in data["bots"] if b["bot"] == "music-bot")
    assert music["entries"] == {}  # 2 conversations: below min_conversations


def test_run_restart_and_serve_keep_the_menu_and_redact_the_customers(
        learned: tuple[Path, Path], tmp_path: Path) -> None:
    events, catalogue = learned
    # Without the catalogue the analyser takes the menu item for a person (else this test
    # could not fail).
    plain = _processor(f"sqlite:///{tmp_path}/plain.db", _suite(None), batch_size=32)
    runner.run([str(events)], plain.settings, progress=False, processor=plain)
    _, before = _stored(f"sqlite:///{tmp_path}/plain.db")
    assert before[("coffee-0", 1)] == "I would say <PERSON>."
    assert before[("regular-0", 1)] == "Here is your latte, <PERSON>."

    suite = _suite(catalogue)
    runs = {}
    url = f"sqlite:///{tmp_path}/run32.db"
    proc = _processor(url, suite, batch_size=32)
    runner.run([str(events)], proc.settings, progress=False, processor=proc)
    runs["run32"] = _stored(url)
    url = f"sqlite:///{tmp_path}/restart.db"  # a new worker: the detector loaded afresh
    proc = _processor(url, _suite(catalogue), batch_size=1)
    runner.run([str(events)], proc.settings, progress=False, processor=proc)
    runs["restart1"] = _stored(url)
    url = f"sqlite:///{tmp_path}/serve.db"
    proc = _processor(url, suite, batch_size=8, serve_token=SecretStr(TOKEN))
    with TestClient(create_app(proc.settings, proc)) as client:
        for e in traffic():
            r = client.post("/v1/turns", json=e, headers={"Authorization": f"Bearer {TOKEN}"})
            assert r.status_code < 300, r.text
    runs["serve"] = _stored(url)

    found, stored = runs["run32"]
    assert stored[("coffee-0", 1)] == "I would say Marzipane."  # the menu is the menu
    assert stored[("music-0", 1)] == "I would say <PERSON>."  # another bot's catalogue
    assert stored[("coffee-0", 2)].endswith("The order is for <PERSON>.")  # a customer
    assert stored[("regular-0", 1)] == "Here is your latte, <PERSON>."  # 3 visits: below K
    coffee_labels = {k[2] for k in found if k[0] == "coffee-0" and k[1] == 1}
    assert not coffee_labels & {"pii.person", "pii.leak"}
    assert any(k[0] == "music-0" and k[1] == 1 and k[2] == "pii.person" for k in found)
    versions = {v[2] for v in found.values()}
    assert len(versions) == 1 and "+catalogue." in versions.pop()
    for mode in ("restart1", "serve"):
        assert runs[mode] == runs["run32"], f"{mode} differs from run"
    for name in ("run32", "restart", "serve", "plain"):
        raw = (tmp_path / f"{name}.db").read_bytes()
        assert b"Kowalczyk" not in raw


def test_learn_refuses_an_input_without_turns_and_a_bot_it_has_not_seen(
        learned: tuple[Path, Path], tmp_path: Path) -> None:
    from pipeline.pii_catalogue.learn import CatalogueError

    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"conversation_id": "c", "turn": 0}\n')
    out = tmp_path / "c.json"
    with pytest.raises(CatalogueError, match=r"no valid turns .* \(1 rejected\)"):
        CliRunner().invoke(cli, ["pii", "catalogue", "learn", str(empty), "-o", str(out)],
                           catch_exceptions=False)
    with pytest.raises(CatalogueError, match="no turns of bot"):
        CliRunner().invoke(cli, ["pii", "catalogue", "learn", str(learned[0]), "-o", str(out),
                                 "--bot", "nobody"], catch_exceptions=False)
    assert not out.exists()
    shown = CliRunner().invoke(cli, ["pii", "catalogue", "show", str(learned[1])])
    assert shown.exit_code == 0 and "-/coffee-bot: 15 conversations" in shown.output
