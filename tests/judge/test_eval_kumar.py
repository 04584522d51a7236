"""``chatmon eval kumar --judge URL --model NAME`` on the hand-written Kumar fixture, with a
scripted judge (a real local HTTP server; no real LLM runs here) whose ratings are set per
item: the printed kappa per dimension is the quadratic-weighted kappa of those ratings against
the expert median, beside the published figures and the classifier's."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from pipeline.cli import cli
from tests.judge.scripted_judge import ScriptedJudge

FIXTURE = Path(__file__).resolve().parents[1] / "eval" / "fixtures" / "kumar"
DIMS = {"Emotional reactions": ("level_emotional_reactions", "er"),
        "Interpretations": ("level_interpretations", "ip"),
        "Explorations": ("level_explorations", "ex")}


def _experts() -> dict[str, dict[str, float]]:
    import csv

    per: dict[str, dict[str, list[float]]] = {}
    for n in (1, 2, 3):
        path = FIXTURE / "annotations" / "epitome" / f"expert{n}_ratings.csv"
        with path.open() as fh:
            for row in csv.DictReader(fh):
                for dim, _ in DIMS.values():
                    per.setdefault(row["sp_id"], {}).setdefault(dim, []).append(
                        float(row[dim]))
    return {k: {d: statistics.median(v) for d, v in dims.items()} for k, dims in per.items()}


def test_kumar_judge_table(monkeypatch, tmp_path):
    import csv

    with (FIXTURE / "original_data" / "sample_epitome.csv").open() as fh:
        items = {r["response_post"]: r["sp_id"] for r in csv.DictReader(fh)}
    gold = _experts()

    def script(system: str, reply: str) -> int:
        title = next(t for t in DIMS if f"Criterion: {t} (EPITOME)" in system)
        dim, short = DIMS[title]
        value = round(gold[items[reply]][dim])
        # one deliberate miss per dimension, on the second item
        return (value + 1) % 3 if items[reply] == "s1r2" else value

    monkeypatch.setenv("CHATMON_DATABASE_URL", f"sqlite:///{tmp_path / 'unused.db'}")
    with ScriptedJudge(script=script) as server:
        out = CliRunner().invoke(cli, ["eval", "kumar", str(FIXTURE), "--judge", server.url,
                                       "--model", "judge-1", "--json"])
        table = CliRunner().invoke(cli, ["eval", "kumar", str(FIXTURE), "--judge", server.url,
                                         "--model", "judge-1"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    assert result["detector"] == "judge:judge-1" and result["n"] == 5
    assert len(server.requests) == 2 * 15  # 5 items x 3 rubrics, twice (no cache across runs)
    ids = sorted(items.values())
    for dim, short in DIMS.values():
        expert = [round(gold[i][dim]) for i in ids]
        judged = [(v + 1) % 3 if i == "s1r2" else v for i, v in zip(ids, expert, strict=True)]
        want = round(cohen_kappa_score(expert, judged, weights="quadratic"), 4)
        assert result["metrics"][f"judge_kappa_{short}"] == want
        assert f"kappa_{short}" in result["metrics"]  # the classifier's, on the same items
    rows = {r["dimension"]: r for r in result["detail"]["table"]}
    assert rows["er"]["published_gemini"] == 0.64 and rows["ip"]["published_gemini"] == 0.59
    assert rows["ex"]["published_gemini"] == 0.76 and rows["er"]["expert_pair_median"] == 0.58
    assert rows["er"]["gemini_on_these_items"] is None  # the fixture has no gemini file
    assert table.exit_code == 0, table.output
    assert "published" in table.output and "expert pairs" in table.output
    assert table.output.count("0.58") >= 3
