"""A bot's PII catalogue in the Kafka worker: the same file, learned once, gives the worker the
findings and the redacted text ``chatmon run`` gives (real tansu, real PostgreSQL, the real
analyser): the catalogue is an explicit input, not state a worker builds from what it saw."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from tests.kafka.helpers import KafkaNames, Worker, chatmon, chatmon_env, wait_until, write_jsonl
from tests.test_pii_catalogue_pipeline import traffic

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.slow]


def _stored(url: str) -> tuple[dict[tuple[Any, ...], Any], dict[tuple[str, int], str]]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            found = conn.execute(text(
                "select conversation_id, turn, label, span_start, span_end, score, flagged, "
                "detector_version from findings")).all()
            turns = conn.execute(text(
                "select conversation_id, turn, text_redacted from turns")).all()
    finally:
        engine.dispose()
    return ({tuple(r[:5]): (round(float(r[5]), 3), bool(r[6]), r[7]) for r in found},
            {(r[0], int(r[1])): r[2] for r in turns})


def test_the_worker_applies_the_catalogue_as_run_does(
        kafka_bootstrap: str, names: KafkaNames, postgres_url: str, tmp_path: Path,
        workers: Callable[..., Worker]) -> None:
    rows = traffic()
    path = write_jsonl(tmp_path / "week.jsonl", rows)
    catalogue = tmp_path / "catalogue.json"
    env = chatmon_env(kafka_bootstrap, names, postgres_url, ("pii",))
    learned = chatmon(["pii", "catalogue", "learn", str(path), "-o", str(catalogue)], env,
                      timeout=300)
    assert learned.returncode == 0, learned.stderr
    env["CHATMON_DETECTOR_OPTIONS"] = json.dumps({"pii": {"catalogue": str(catalogue)}})
    assert chatmon(["topics", "create"], env).returncode == 0
    worker = workers(env, "w", wait=False)
    embedded = f"sqlite:///{tmp_path / 'embedded.db'}"
    ran = chatmon(["run", str(path)], {**env, "CHATMON_DATABASE_URL": embedded}, timeout=300)
    assert ran.returncode == 0, ran.stderr
    expected = _stored(embedded)
    assert expected[1][("coffee-0", 1)] == "I would say Marzipane."
    assert expected[1][("music-0", 1)] == "I would say <PERSON>."

    worker.ready()
    produced = chatmon(["produce", str(path), "--no-progress"], env)
    assert produced.returncode == 0, produced.stderr
    wait_until(lambda: len(_stored(postgres_url)[1]) >= len(rows), 120, "every turn stored")
    assert _stored(postgres_url) == expected
