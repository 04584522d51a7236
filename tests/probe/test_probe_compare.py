"""The issue's acceptance test: two models behind one local chat-completions endpoint (the
scripted bot), one warm and one answering every message with one stock template plus, now and
then, a dependence cue. After ``chatmon probe`` for each, with every default detector, the
templated model has clearly more repetition and manipulation flags and a lower mean empathy, in
``chatmon compare --json`` and in ``chatmon findings --json`` by model. Also: a probed turn is
scored exactly like the same turn sent through ``chatmon run``, and the weekly report shows the
models side by side (the signals its rollups hold)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text

from pipeline.cli import cli
from tests.probe.scripted_bot import ScriptedBot

SUITE = Path(__file__).parent / "data" / "small_suite.json"
WARM, TEMPLATED = "warm-1", "templated-1"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Both models probed once into one SQLite store (raw text kept, for the run comparison)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('probe') / 'chatmon.db'}"
    env = {"CHATMON_DATABASE_URL": url, "CHATMON_KEEP_RAW_TEXT": "true"}
    out: dict[str, Any] = {"url": url, "env": env}
    with ScriptedBot() as bot:
        for model in (WARM, TEMPLATED):
            res = CliRunner().invoke(cli, ["probe", "--endpoint", bot.url, "--model", model,
                                           "--suite", str(SUITE), "--json"], env=env)
            assert res.exit_code == 0, res.output
            out[model] = json.loads(res.stdout)
    yield out


def invoke(store: dict[str, Any], *args: str) -> Any:
    res = CliRunner().invoke(cli, list(args), env=store["env"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout) if "--json" in args else res.stdout


def test_both_models_were_probed_in_full(store: dict[str, Any]) -> None:
    for model in (WARM, TEMPLATED):
        s = store[model]
        assert s["failed"] == [] and s["scenarios"] == s["conversations_stored"] == 18
        assert s["turns_stored"] == 40 and s["requests"] == 20  # two multi-turn scenarios


def test_compare_shows_the_templated_model_is_worse(store: dict[str, Any]) -> None:
    out = invoke(store, "compare", "--model", WARM, "--model", TEMPLATED, "--json")
    assert out["replies"] == {WARM: 20, TEMPLATED: 20} and out["reference"] == WARM
    sig = {row["signal"]: row for row in out["signals"]}
    for signal in ("repetition", "manipulation"):
        warm, templ = sig[signal]["models"][WARM], sig[signal]["models"][TEMPLATED]
        diff = sig[signal]["differences"][TEMPLATED]
        assert templ["value"] >= warm["value"] + 0.3, (signal, warm, templ)
        assert diff["significant"] is True and diff["low"] > 0, (signal, diff)
    empathy = sig["empathy"]
    assert empathy["models"][TEMPLATED]["value"] < empathy["models"][WARM]["value"] - 0.1
    assert empathy["differences"][TEMPLATED]["significant"] is True
    assert empathy["differences"][TEMPLATED]["high"] < 0
    # the warm bot asks how the user is; the template never asks anything
    assert sig["style.question"]["models"][TEMPLATED]["value"] == 0
    assert sig["style.question"]["models"][WARM]["value"] >= 1


def test_compare_is_deterministic_and_reads_as_a_table(store: dict[str, Any]) -> None:
    args = ("compare", "--model", TEMPLATED, "--model", WARM, "--json")
    assert invoke(store, *args) == invoke(store, *args)
    table = invoke(store, "compare", "--model", WARM, "--model", TEMPLATED)
    lines = table.splitlines()
    assert lines[2].split()[:3] == ["signal", f"{WARM}", "(n=20)"]
    assert any(line.startswith("repetition %") and line.rstrip().endswith("*") for line in lines)
    assert "empathy gap per group" in table


def test_empathy_gap_from_the_paired_scenarios(store: dict[str, Any]) -> None:
    out = invoke(store, "compare", "--model", WARM, "--model", TEMPLATED, "--probe", "--json")
    gaps = {(g["model"], g["group"]): g for g in out["empathy_gap"]}
    assert set(gaps) == {(m, g) for m in (WARM, TEMPLATED) for g in ("older", "younger")}
    for m in (WARM, TEMPLATED):
        older, younger = gaps[(m, "older")], gaps[(m, "younger")]
        assert older["axis"] == "age" and older["pairs"] == 2
        # Two groups: +-half the difference, each printed to 4 places, so the two may round
        # apart by one unit in the last place (they did on an AVX2-only CPU: -0.0244 / 0.0243).
        assert older["gap"] == pytest.approx(-younger["gap"], abs=1.5e-4)
        assert older["significant"] is False and older["p"] >= 0.5  # 2 pairs prove nothing


def _flagged_by(store: dict[str, Any], model: str, detector: str) -> set[tuple[str, int]]:
    rows = invoke(store, "findings", "--json", "--model", model, "--detector", detector,
                  "--flagged", "--limit", "100000")
    assert all(r["model"] == model and r["role"] == "assistant" for r in rows)
    return {(r["conversation_id"], r["turn"]) for r in rows}


def test_findings_by_model_show_the_same(store: dict[str, Any]) -> None:
    for detector in ("repetition", "manipulation"):
        warm = _flagged_by(store, WARM, detector)
        templ = _flagged_by(store, TEMPLATED, detector)
        assert len(templ) >= 2 * len(warm) + 5, (detector, len(warm), len(templ))
    dependence = invoke(store, "findings", "--json", "--model", TEMPLATED, "--label",
                        "manipulation.dependence", "--flagged", "--limit", "1000")
    assert dependence and all("only one" in r["excerpt"] for r in dependence)
    assert not invoke(store, "findings", "--json", "--model", WARM, "--label",
                      "manipulation.dependence", "--flagged")


def _iso(ts: Any) -> str:
    """SQLite hands back naive datetimes (or strings) for the UTC times stored."""
    ts = datetime.fromisoformat(ts) if isinstance(ts, str) else ts
    return (ts if ts.tzinfo else ts.replace(tzinfo=UTC)).isoformat()


def _findings(url: str) -> dict[tuple[str, int, str], float]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(text("select conversation_id, turn, label, score from findings"))
        out = {(c, t, lab): round(s, 6) for c, t, lab, s in rows}
    engine.dispose()
    return out


def test_probed_turns_are_scored_like_the_same_turns_through_chatmon_run(
        store: dict[str, Any], tmp_path: Path) -> None:
    """Export the probed turns (raw text, suite order, one model after the other, as probed)
    and run them through `chatmon run` into a fresh store: the same findings, score for
    score."""
    engine = create_engine(store["url"])
    with engine.connect() as conn:
        turns = conn.execute(text(
            "select t.conversation_id, t.turn, t.role, t.text_raw, t.ts, t.bot_id, t.model "
            "from turns t join runs r on r.id = t.run_id "
            "order by r.started_at, t.stored_at, t.conversation_id, t.turn")).all()
    engine.dispose()
    src = tmp_path / "probed.jsonl"
    src.write_text("".join(json.dumps({
        "conversation_id": c, "turn": t, "role": role, "text": raw, "ts": _iso(ts),
        "bot_id": bot, "model": model}) + "\n" for c, t, role, raw, ts, bot, model in turns))
    # one process per model, as the probes were: repetition state is per process
    other = f"sqlite:///{tmp_path / 'run.db'}"
    lines = src.read_text().splitlines(keepends=True)
    for model in (WARM, TEMPLATED):
        part = tmp_path / f"{model}.jsonl"
        part.write_text("".join(line for line in lines if f'"model": "{model}"' in line))
        res = CliRunner().invoke(cli, ["run", str(part), "--json", "--no-progress"],
                                 env={"CHATMON_DATABASE_URL": other})
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout)["dead_lettered"] == 0
    probed, replayed = _findings(store["url"]), _findings(other)
    assert len(probed) > 300
    assert probed == replayed


def test_weekly_report_puts_the_models_side_by_side(store: dict[str, Any],
                                                    tmp_path: Path) -> None:
    out = tmp_path / "weekly.html"
    res = CliRunner().invoke(cli, ["report", "--out", str(out)], env=store["env"])
    assert res.exit_code == 0, res.output
    html = out.read_text()
    section = html.split('<section id="models">', 1)[1].split("</section>", 1)[0]
    assert f"{TEMPLATED} (n=20)" in section and f"{WARM} (n=20)" in section
    assert "repetition" in section and "empathy_failures" in section
    # from the rollups (issue 41): the style profile and the paired-probe gap need each reply,
    # so the report points to chatmon compare for them
    assert "style.emoji" not in section and "chatmon compare --model A --model B" in section
