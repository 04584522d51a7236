"""``chatmon run`` on PostgreSQL: the same dead letters and idempotency as on SQLite."""

from __future__ import annotations

import json
import shutil

from pipeline.embedded import runner
from tests.conftest import EXAMPLES, count_rows


def test_run_on_postgres_is_idempotent(postgres_url, make_processor, tmp_path):  # type: ignore[no-untyped-def]
    src = tmp_path / "in.jsonl"
    lines = (EXAMPLES / "transcripts.jsonl").read_text().splitlines()[:40]
    bad = (EXAMPLES / "bad_events.jsonl").read_bytes()
    src.write_bytes(("\n".join(lines) + "\n").encode() + bad)
    proc = make_processor(postgres_url)
    first = runner.run([str(src)], proc.settings, progress=False, processor=proc).as_dict()
    expected = json.loads((EXAMPLES / "bad_events.expected.json").read_text())
    assert first["dead_lettered"] == len(expected)
    rows = count_rows(postgres_url)
    assert rows["turns"] == first["turns_stored"] > 40 and rows["findings"] > 0
    proc2 = make_processor(postgres_url)
    second = runner.run([str(src)], proc2.settings, progress=False, processor=proc2).as_dict()
    assert second["turns_stored"] == 0 and count_rows(postgres_url) == rows
    shutil.rmtree(tmp_path, ignore_errors=True)
