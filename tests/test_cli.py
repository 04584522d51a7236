"""The command line: findings as a table and as JSON, filters, clear errors, help texts."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import cli
from pipeline.embedded import runner
from pipeline.errors import ConfigError
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


def test_findings_json_has_the_model_and_filters_by_it(stored_db) -> None:  # type: ignore[no-untyped-def]
    res = CliRunner().invoke(cli, ["findings", "--json", "--limit", "100000"])
    rows = json.loads(res.output)
    models = {r["model"] for r in rows}
    assert models == {"support-llm-2026-09", "support-llm-2026-11"}  # the examples' two models
    for model in sorted(models):
        res = CliRunner().invoke(cli, ["findings", "--json", "--limit", "100000",
                                       "--model", model])
        picked = json.loads(res.output)
        assert picked and {r["model"] for r in picked} == {model}
        assert len(picked) == sum(r["model"] == model for r in rows)
    res = CliRunner().invoke(cli, ["findings", "--json", "--model", "support-llm"])
    assert json.loads(res.output) == []  # exact names, not prefixes


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


@pytest.mark.parametrize("command", [["findings"], ["report", "--out", "r.html"],
                                     ["validate", "--store"]])
def test_reading_a_store_that_does_not_exist_is_a_clear_error(tmp_path, monkeypatch, command):  # type: ignore[no-untyped-def]
    path = tmp_path / "none.db"
    monkeypatch.setenv("CHATMON_DATABASE_URL", f"sqlite:///{path}")
    res = CliRunner().invoke(cli, command)
    # a ChatmonError: `chatmon` (pipeline.cli.main) prints it as one line and exits 2
    assert isinstance(res.exception, ConfigError), res.output
    assert f"no database at {path}" in str(res.exception)
    assert not path.exists()  # the read did not leave an empty database behind


def test_reading_an_unmigrated_store_is_a_clear_error(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    import sqlite3

    path = tmp_path / "old.db"
    sqlite3.connect(path).close()
    monkeypatch.setenv("CHATMON_DATABASE_URL", f"sqlite:///{path}")
    res = CliRunner().invoke(cli, ["findings"])
    assert isinstance(res.exception, ConfigError)
    assert "run `chatmon db upgrade`" in str(res.exception)


def test_validating_a_file_without_a_store_does_not_record(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    path = tmp_path / "none.db"
    monkeypatch.setenv("CHATMON_DATABASE_URL", f"sqlite:///{path}")
    src = tmp_path / "t.jsonl"
    src.write_text("\n".join((EXAMPLES / "transcripts.jsonl").read_text().splitlines()[:20]))
    res = CliRunner().invoke(cli, ["validate", str(src)])
    assert "not recorded: no database at" in res.output and not path.exists()


@pytest.mark.parametrize("command", [[], ["run"], ["serve"], ["findings"], ["eval"], ["db"],
                                     ["probe"], ["compare"]])
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


def test_an_unreachable_database_is_one_line_without_the_password(monkeypatch, capsys):  # type: ignore[no-untyped-def]
    import socket
    import sys

    from pipeline.cli import main

    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("CHATMON_DATABASE_URL",
                       f"postgresql+psycopg://chatmon:hunter2@127.0.0.1:{port}/chatmon")
    monkeypatch.setattr(sys, "argv", ["chatmon", "findings"])
    with pytest.raises(SystemExit) as exit_:
        main()
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.startswith("error: cannot use the database") and "refused" in err
    assert "hunter2" not in err and "Traceback" not in err


@pytest.mark.slow
def test_a_first_run_prints_only_chatmons_own_output(tmp_path: Path) -> None:
    """On a fresh machine the first run exports the encoder to ONNX (no cache under a new
    HOME): torch's tracer notes, ONNX Runtime's quantization hint and weight-loading progress
    bars must not reach the user. The interpreter's default warning filters apply, as for a
    user (pytest's are not inherited by the child)."""
    import subprocess

    src = tmp_path / "turns.jsonl"
    src.write_text("\n".join(json.dumps(t) for t in [
        {"conversation_id": "c1", "turn": 0, "role": "user", "text": "My parcel is late.",
         "ts": "2026-11-20T10:00:00Z"},
        {"conversation_id": "c1", "turn": 1, "role": "assistant",
         "text": "I'm sorry it is late. Let me check where it is.", "ts": "2026-11-20T10:00:05Z"},
    ]) + "\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CHATMON_", "PYTHONWARNINGS", "HF_HUB_DISABLE"))}
    env.update(HOME=str(tmp_path / "home"), CHATMON_DETECTORS='["empathy"]',
               CHATMON_DATABASE_URL=f"sqlite:///{tmp_path / 'c.db'}")
    proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "run", str(src), "--no-progress"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert list((tmp_path / "home" / ".cache" / "chatmon" / "onnx").glob("*.onnx"))  # exported
    assert proc.stderr == ""
    assert proc.stdout.startswith("chatmon run finished")
