"""Turn languages: a detector that declares ``languages`` is given only turns in them (a turn
without ``lang`` takes its conversation's, then ``default_lang``, unless its text is surely in
another language); the shared features are not computed for turns no detector will read; PII
still runs on every turn, because redaction must; the skipped turns are counted in the summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from detectors.base import Turn, primary_language, speaks
from detectors.features import EMBEDDING
from detectors.toxicity.detector import ToxicityDetector
from pipeline.embedded import runner
from pipeline.scoring.language import LanguageGuesser, turn_language
from pipeline.scoring.suite import DetectorSuite, FeatureExtractor, simple_input


@pytest.mark.parametrize(("tag", "primary"), [
    ("en", "en"), ("en-GB", "en"), ("pt_BR", "pt"), (" ES ", "es"), ("zh-Hant-TW", "zh"),
    (None, None), ("", None), ("  ", None),
])
def test_primary_language(tag, primary):
    assert primary_language(tag) == primary


class _English:
    languages = frozenset({"en"})


class _Any:
    pass


@pytest.mark.parametrize(("det", "lang", "reads"), [
    (_English(), "en-US", True),
    (_English(), "es", False),
    (_English(), None, True),  # unknown language: every detector reads it
    (_Any(), "ja", True),
    (ToxicityDetector(), "fr", False),  # the offline model is English only
    (ToxicityDetector(backend="detoxify", variant="multilingual"), "fr", True),
    (ToxicityDetector(backend="detoxify", variant="multilingual"), "de", False),
    (ToxicityDetector(backend="detoxify", variant="unbiased"), "fr", False),
])
def test_speaks(det, lang, reads):
    assert speaks(det, lang) is reads


def _turn(text_: str, lang: str | None = None, role: str = "assistant") -> Turn:
    from datetime import UTC, datetime

    return Turn("c", 1, role, text_, datetime(2026, 11, 20, tzinfo=UTC), lang=lang)  # type: ignore[arg-type]


GUESSER = LanguageGuesser()
ES_USER = _turn("Mi pedido no ha llegado.", "es", "user")


@pytest.mark.parametrize(("what", "turn", "history", "default", "guesser", "lang"), [
    ("its own tag wins over the text", _turn("Thank you for waiting.", "es-MX"), (), "en",
     GUESSER, "es-MX"),
    ("the conversation's tag, the text being ambiguous", _turn("Ok."), (ES_USER,), "en",
     GUESSER, "es"),
    ("the default", _turn("Ok."), (), "en", GUESSER, "en"),
    ("no default, no tag, ambiguous text: unknown", _turn("Ok."), (), None, GUESSER, None),
    ("Spanish text in an untagged conversation",
     _turn("Lo siento mucho, ¿me da su número de pedido?"), (), "en", GUESSER, "es"),
    ("English text in a Spanish-tagged conversation (the bot switched)",
     _turn("I am sorry, could you give me your order number please?"), (ES_USER,), "en",
     GUESSER, "en"),
    ("German text, German default", _turn("Ihre Rückerstattung wird in drei bis fünf Werktagen "
                                          "bearbeitet."), (), "de", GUESSER, "de"),
    ("detection off: the prior only", _turn("Lo siento mucho, ¿me da su número de pedido?"),
     (), "en", None, "en"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_turn_language(what, turn, history, default, guesser, lang):
    assert turn_language(turn, history, default, guesser) == lang, what


@pytest.fixture(scope="module")
def suite(pii_suite) -> DetectorSuite:  # type: ignore[no-untyped-def]
    s = DetectorSuite([*pii_suite.detectors, *DetectorSuite.from_names(
        ["toxicity", "empathy"], encoder_backend="onnx-int8").detectors],
        encoder_backend="onnx-int8")
    s.load()
    return s


def test_features_are_computed_only_for_turns_a_detector_reads(suite):
    extractor = FeatureExtractor(suite.detectors, suite.features.encoder)
    out = extractor.add([simple_input("I am sorry to hear that.", lang="en"),
                         simple_input("Lo siento mucho.", lang="es")])
    assert EMBEDDING in out[0].context.features
    assert EMBEDDING not in out[1].context.features


def _event(cid: str, turn: int, role: str, text_: str, **extra: str) -> str:
    return json.dumps({"conversation_id": cid, "turn": turn, "role": role, "text": text_,
                       "ts": f"2026-11-20T10:00:0{turn}Z", **extra})


def _run(path: Path, url: str, make_processor, suite, **settings):  # type: ignore[no-untyped-def]
    proc = make_processor(url, suite=suite, **settings)
    summary = runner.run([str(path)], proc.settings, progress=False, processor=proc).as_dict()
    with create_engine(url).connect() as conn:
        rows = conn.execute(text("select conversation_id, detector from findings "
                                 "where role = 'assistant'")).all()
        stored = dict(conn.execute(text("select conversation_id, text_redacted from turns "
                                        "where role = 'assistant'")).all())
    found: dict[str, set[str]] = {}
    for cid, det in rows:
        found.setdefault(cid, set()).add(det)
    return summary, found, stored


@pytest.fixture
def transcripts(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([
        # Spanish: only the user turn says so; the reply inherits it from its conversation
        _event("es", 0, "user", "Mi pedido no ha llegado y estoy harto.", lang="es"),
        _event("es", 1, "assistant", "Lo siento mucho, idiota. Escriba a ana.ruiz@example.com."),
        # English, no language given anywhere: default_lang decides
        _event("en", 0, "user", "My parcel never arrived and I'm fed up."),
        _event("en", 1, "assistant", "I'm so sorry, you idiot. Write to ana.ruiz@example.com."),
    ]) + "\n")
    return path


def test_english_only_detectors_skip_a_spanish_conversation(
        transcripts, sqlite_url, make_processor, suite):
    summary, found, stored = _run(transcripts, sqlite_url, make_processor, suite)
    assert {"toxicity", "empathy", "pii"} <= found["en"]
    assert found["es"] == {"pii"}  # PII still runs: the address is redacted in both languages
    assert all("ana.ruiz" not in t and "<EMAIL_ADDRESS>" in t for t in stored.values())
    assert summary["not_scored_language"] == {"empathy": 1, "toxicity": 1}


def test_default_lang_applies_to_turns_without_one(transcripts, sqlite_url, make_processor, suite):
    summary, found, _ = _run(transcripts, sqlite_url, make_processor, suite, default_lang="de",
                             detect_language=False)
    assert found["en"] == found["es"] == {"pii"}
    assert summary["not_scored_language"] == {"empathy": 2, "toxicity": 2}


def test_untagged_text_in_another_language_is_detected(tmp_path, sqlite_url, make_processor,
                                                       suite):
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([
        _event("fr", 0, "user", "Ma commande n'est jamais arrivée et je suis furieux."),
        _event("fr", 1, "assistant", "Je suis désolé pour ce retard, imbécile. Pouvez-vous me "
                                     "donner votre numéro de commande ?"),
        _event("en", 0, "user", "My parcel never arrived and I'm fed up."),
        _event("en", 1, "assistant", "I'm so sorry, you idiot. Can I have your order number?"),
    ]) + "\n")
    summary, found, _ = _run(path, sqlite_url, make_processor, suite)
    assert {"toxicity", "empathy"} <= found["en"]
    assert not {"toxicity", "empathy"} & found.get("fr", set())
    assert summary["not_scored_language"] == {"empathy": 1, "toxicity": 1}


def test_no_language_guessing_when_every_detector_reads_every_language(
        sqlite_url, make_processor, suite):
    assert make_processor(sqlite_url).languages is None  # the PII-only suite
    assert make_processor(sqlite_url, suite=suite).languages is not None
    assert make_processor(sqlite_url, suite=suite, detect_language=False).languages is None
