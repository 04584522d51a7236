"""The redaction stage always runs and fails closed (issue 16.3).

- PII detector not enabled: planted names, street addresses, cards, e-mails, phones never reach
  the database, the logs or the dead-letter file (the real CLI, then every byte it left).
- PII analyser raising (monkeypatched: it simulates a failure of the real detector): on a batch
  only, the stage retries text by text and redacts; always, the turns are stored fully masked
  or dead-lettered without text, counted in the summary, the metric and an alert.
- The safety net alone (Kafka stage 2's already-redacted input) masks only e-mails and digit
  runs: what the stage exists for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import create_engine, text

from detectors.pii.detector import PiiDetector
from pipeline.embedded import runner
from pipeline.ingest.events import RawRecord
from pipeline.metrics import get_metrics
from pipeline.scoring.redaction import FAILED, Redactor, redact
from pipeline.scoring.suite import DetectorSuite
from tests.alerting.receiver import Receiver
from tests.test_pii_never_stored import PLANTED, _events, _needles

NAME, ADDRESS = "Marguerite Okonkwo-Villanueva", "742 Evergreen Terrace"


def _stored_bytes(db: Path) -> str:
    """The database file, its WAL (the open engine's writes may still be there) and every row."""
    files = [f for f in (db, Path(f"{db}-wal")) if f.exists()]
    out = "".join(f.read_bytes().decode("utf-8", errors="replace") for f in files)
    engine = create_engine(f"sqlite:///{db}")
    with engine.connect() as conn:
        for table in ("turns", "findings", "dead_letters"):
            out += repr(conn.execute(text(f"select * from {table}")).all())
    engine.dispose()
    return out


def test_pii_not_enabled_planted_values_never_stored_raw(tmp_path: Path) -> None:
    """Only `style` runs (no PII detector): redaction still analyses every turn."""
    src = tmp_path / "pii.jsonl"
    src.write_bytes(b"\n".join(_events()) + b"\n")
    db = tmp_path / "chatmon.db"
    env = {**os.environ, "CHATMON_DATABASE_URL": f"sqlite:///{db}", "CHATMON_LOG_LEVEL": "DEBUG",
           "CHATMON_DETECTORS": '["style"]'}
    proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "run", str(src), "--json"],
                          env=env, capture_output=True, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    summary = json.loads(proc.stdout)
    assert summary["turns_stored"] == 6 and summary["dead_lettered"] == 5
    assert not any(label.startswith("pii.") for label in summary["findings_by_label"])
    assert summary["redaction_failures"] == {}
    engine = create_engine(f"sqlite:///{db}")
    with engine.connect() as conn:
        stored = [r[0] for r in conn.execute(text("select text_redacted from turns order by turn"))]
    engine.dispose()
    assert "<PERSON>" in stored[0] and "<STREET_ADDRESS>" in stored[3]
    produced = {"stdout": proc.stdout, "stderr": proc.stderr}
    produced.update({f.name: f.read_bytes() for f in tmp_path.iterdir() if f != src})
    for name, blob in produced.items():
        for needle in _needles():
            assert needle not in blob.decode("utf-8", errors="replace"), f"{needle!r} in {name}"


def _good(conversation: str = "r-1") -> list[RawRecord]:
    p = PLANTED
    turns = [("user", f"I'm {p['name']}, I live at {p['address']}, Springfield."),
             ("assistant", f"Thanks {p['name']}, I'll write to {p['email']} about it.")]
    return [RawRecord("test", str(i), json.dumps({
        "conversation_id": conversation, "turn": i, "role": r, "text": t,
        "ts": f"2026-11-20T10:00:0{i}Z", "bot_id": "b", "metadata": {"note": p["name"]}}))
        for i, (r, t) in enumerate(turns)]


@pytest.fixture
def style_suite() -> DetectorSuite:
    suite = DetectorSuite.from_names(["style"])
    suite.load()
    return suite


def _turns(url: str) -> list[dict[str, Any]]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = [dict(r._mapping) for r in conn.execute(text(
            "select turn, text_redacted, metadata from turns order by turn"))]
    engine.dispose()
    return rows


def test_analyser_failing_on_batches_only_is_retried_text_by_text(
        sqlite_url, make_processor, style_suite, pii_suite, monkeypatch) -> None:
    proc = make_processor(sqlite_url, suite=style_suite, redaction_failure="mask")
    proc.redactor = Redactor(pii_suite.detectors[0])  # the session's loaded analyser
    real = PiiDetector.analyze

    def batch_fails(self: PiiDetector, texts: Any, min_score: float) -> Any:
        if len(texts) > 1:
            raise RuntimeError("simulated analyser failure on a batch")
        return real(self, texts, min_score)

    monkeypatch.setattr(PiiDetector, "analyze", batch_fails)
    report = proc.process(_good())
    assert report.turns_stored == 2 and report.redaction_failures == {}
    rows = _turns(sqlite_url)
    assert "<PERSON>" in rows[0]["text_redacted"] and "<STREET_ADDRESS>" in rows[0]["text_redacted"]
    assert all(NAME not in r["text_redacted"] and FAILED not in r["text_redacted"] for r in rows)


def _always_fails(self: PiiDetector, texts: Any, min_score: float) -> Any:
    raise RuntimeError(f"simulated failure quoting {texts[0][:20]}")


def _masked_metric() -> float:
    value = REGISTRY.get_sample_value("chatmon_redaction_failures_total", {"outcome": "masked"})
    return value or 0.0


def test_pii_detector_raising_stores_turns_fully_masked_and_counts_them(
        sqlite_url, make_processor, pii_suite, monkeypatch, caplog) -> None:
    """PII among the detectors and failing on every batch and every turn alone."""
    proc = make_processor(sqlite_url, suite=pii_suite)
    monkeypatch.setattr(PiiDetector, "analyze", _always_fails)
    before = _masked_metric()
    proc.on_batch = get_metrics().on_batch
    with caplog.at_level("DEBUG"):
        report = proc.process(_good())
    assert report.turns_stored == 2 and report.redaction_failures["masked"] == 2
    assert report.redaction_failures["text_masked"] == 2  # both turns' metadata
    assert report.detector_errors["pii"] == 2  # the detector's own failure is still reported
    assert _masked_metric() - before == 2
    rows = _turns(sqlite_url)
    assert [r["text_redacted"] for r in rows] == [f"<{FAILED}>"] * 2
    blob = _stored_bytes(Path(sqlite_url.removeprefix("sqlite:///"))) + caplog.text
    for needle in (NAME, ADDRESS, PLANTED["email"], "Evergreen", "Okonkwo"):
        assert needle not in blob


def test_pii_detector_raising_dead_letters_turns_without_text(
        sqlite_url, make_processor, pii_suite, monkeypatch) -> None:
    proc = make_processor(sqlite_url, suite=pii_suite, redaction_failure="dead_letter")
    monkeypatch.setattr(PiiDetector, "analyze", _always_fails)
    report = proc.process(_good())
    assert report.turns_stored == 0 and report.finding_rows == []
    assert report.redaction_failures["dead_lettered"] == 2
    assert report.dead_letters["redaction_failed"] == 2
    engine = create_engine(sqlite_url)
    with engine.connect() as conn:
        rows = conn.execute(text("select reason, raw_excerpt from dead_letters "
                                 "where reason = 'redaction_failed'")).all()
        n_turns = conn.execute(text("select count(*) from turns")).scalar_one()
    engine.dispose()
    assert n_turns == 0 and [tuple(r) for r in rows] == [("redaction_failed", "")] * 2
    assert NAME not in _stored_bytes(Path(sqlite_url.removeprefix("sqlite:///")))


def test_a_failing_analyser_is_counted_in_the_summary_and_alerted(
        tmp_path: Path, sqlite_url, make_processor, style_suite, pii_suite, monkeypatch) -> None:
    src = tmp_path / "t.jsonl"
    src.write_bytes(b"".join(r.data.encode() + b"\n" for r in _good("r-2")))  # type: ignore[union-attr]
    monkeypatch.setattr(PiiDetector, "analyze", _always_fails)
    with Receiver() as rx:
        proc = make_processor(sqlite_url, suite=style_suite, alert_webhook_url=rx.url("/hook"),
                              alert_eval_interval_s=60)
        proc.redactor = Redactor(pii_suite.detectors[0])
        proc.on_batch = get_metrics().on_batch
        summary = runner.run([str(src)], proc.settings, progress=False, processor=proc)
    assert summary.as_dict()["redaction_failures"] == {"masked": 2, "text_masked": 2}
    bodies = [b for path, b, _ in rx.requests if path == "/hook"]
    fired = [b for b in bodies if b["rule"] == "ChatmonRedactionFailed"]
    assert fired and fired[0]["status"] == "firing"
    assert fired[0]["counts"]["redaction_failures"] == 4
    assert fired[0]["evidence"] == [{"conversation_id": "r-2", "turn": t,
                                     "label": "redaction_failed"} for t in (0, 1)]
    assert all(NAME not in raw.decode() for _, _, raw in rx.requests)


def test_safety_net_only_leaves_names_and_addresses_which_the_stage_redacts(pii_suite) -> None:
    """What stage 2 (already redacted input) runs, and why every other caller needs the
    analyser: the safety net alone keeps names and street addresses."""
    raw = f"I'm {NAME}, I live at {ADDRESS}; mail {PLANTED['email']}, card {PLANTED['card']}."
    net_only = Redactor(None).texts([raw])[0]
    assert NAME in net_only and ADDRESS in net_only  # the gap the stage closes
    assert PLANTED["email"] not in net_only and PLANTED["card"] not in net_only
    assert net_only == redact(raw, [])[0]
    full = Redactor(pii_suite.detectors[0]).texts([raw])[0]
    assert NAME not in full and "Evergreen" not in full and PLANTED["card"] not in full


def test_review_notes_are_redacted_by_the_stage_without_the_pii_detector() -> None:
    """`chatmon review import` with only `style` enabled (it fell back to the safety net)."""
    from pipeline.cli.review import note_redactor
    from pipeline.review.importer import safety_net
    from pipeline.settings import Settings

    redact_notes = note_redactor(Settings(detectors=("style",)))
    out = redact_notes([f"The user is {NAME} and lives at {ADDRESS}, Springfield.", ""])
    assert NAME not in out[0] and "Okonkwo" not in out[0] and "Evergreen" not in out[0]
    assert safety_net([f"The user is {NAME}"]) == [f"The user is {NAME}"]  # what it did before
    assert out[1] == ""
