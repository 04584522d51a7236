"""The command line: findings as a table and as JSON, filters, clear errors, help texts."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from pipeline import runner
from pipeline.cli import cli
from tests.conftest import EXAMPLES


@pytest.fixture
def stored_db(tmp_path, sqlite_url, make_processor, monkeypatch):  # type: ignore[no-untyped-def]
    src = tmp_path / "t.jsonl"
    shutil.copy(EXAMPLES / "transcripts.jsonl", src)
    src.write_text("\n".join(src.read_text().splitlines()[:80]))
    proc = make_processor(sqlite_url)
    runner.run([str(src)], proc.settings, progress=False, processor=proc)
    monkeypatch.setenv("CHATMON_DATABASE_URL", sqlite_url)
    return sqlite_url


def test_findings_json_has_the_contract_fields(stored_db) -> None:  # type: ignore[no-untyped-def]
    res = CliRunner().invoke(cli, ["findings", "--json", "--limit", "5"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    assert 0 < len(rows) <= 5
    for row in rows:
        assert {"conversation_id", "turn", "detector", "label", "score"} <= set(row)
        assert 0.0 <= row["score"] <= 1.0


def test_findings_filters(stored_db) -> None:  # type: ignore[no-untyped-def]
    res = CliRunner().invoke(cli, ["findings", "--json", "--detector", "pii", "--limit", "1000"])
    rows = json.loads(res.output)
    assert rows and all(r["detector"] == "pii" for r in rows)
    conv = rows[0]["conversation_id"]
    res = CliRunner().invoke(cli, ["findings", "--json", "--conversation", conv])
    assert {r["conversation_id"] for r in json.loads(res.output)} == {conv}
    res = CliRunner().invoke(cli, ["findings", "--json", "--since", "2030-01-01"])
    assert json.loads(res.output) == []
    res = CliRunner().invoke(cli, ["findings", "--since", "not-a-date"])
    assert res.exit_code != 0 and "ISO 8601" in res.output


def test_findings_table(stored_db) -> None:  # type: ignore[no-untyped-def]
    res = CliRunner().invoke(cli, ["findings", "--limit", "3"])
    assert res.exit_code == 0
    lines = res.output.strip().splitlines()
    assert lines[0].startswith("time") and len(lines) == 4


def test_eval_unknown_benchmark_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    res = CliRunner().invoke(cli, ["eval", "nope", str(tmp_path), "--json"])
    assert res.exit_code == 2 and "unknown benchmark" in res.output


def test_run_missing_file_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    res = CliRunner().invoke(cli, ["run", str(tmp_path / "missing.jsonl")])
    assert res.exit_code == 2 and "no such file" in res.output


@pytest.mark.parametrize("command", [[], ["run"], ["serve"], ["findings"], ["eval"], ["db"]])
def test_help_texts(command: list[str]) -> None:
    res = CliRunner().invoke(cli, [*command, "--help"])
    assert res.exit_code == 0 and "Usage:" in res.output


def test_models_list_and_offline_fetch_error(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CHATMON_MODEL_DIR", str(tmp_path))
    res = CliRunner().invoke(cli, ["models", "list", "--json"])
    rows = json.loads(res.output)
    assert {r["name"] for r in rows} >= {"detoxify-original", "detoxify-unbiased"}
    assert not any(r["present"] for r in rows)
    res = CliRunner().invoke(cli, ["models", "fetch", "no-such-model"])
    assert res.exit_code != 0


def test_train_empathy_writes_weights_and_licence_note(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    from tests.conftest import ROOT

    data = ROOT / "tests" / "eval" / "fixtures" / "epitome"
    res = CliRunner().invoke(cli, ["train", "empathy", "--data", str(data), "--out",
                                   str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    weights = np.load(tmp_path / "out" / "model.npz")
    assert len(weights.files) > 0
    assert "non-commercial" in (tmp_path / "out" / "LICENSE-NOTE.txt").read_text()
