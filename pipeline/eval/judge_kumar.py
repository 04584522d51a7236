"""``chatmon eval kumar PATH --judge URL --model NAME``: measure a judge before trusting it.

The shipped EPITOME rubrics (``epitome_er``, ``epitome_ip``, ``epitome_ex``) are run over the
Kumar et al. EPITOME items (``original_data/sample_epitome.csv``: the seeker's post and the
response) through the same judging path as ``chatmon judge`` (a throw-away SQLite store in a
temporary folder: turns, cache, findings), and each dimension's quadratic-weighted kappa
against the median of the three experts is printed beside the published figures (Gemini 2.5
Pro, all 50 items), Gemini's own ratings on the same items where the set has them, and the
empathy classifier's level on the same items. The texts pass the redaction safety net
(e-mail addresses, long digit runs) before they are sent.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from sqlalchemy import Engine, select

from pipeline.eval.core import EvalResult, read_csv, require
from pipeline.eval.empathy_kumar import expert_median
from pipeline.eval.empathy_sets import DETECTOR, score_items
from pipeline.judge.follow import judge_window
from pipeline.judge.rubric import shipped
from pipeline.judge.runner import Judge, JudgeOptions
from pipeline.judge.select import Window
from pipeline.policy.engine import Policy
from pipeline.probe.client import Endpoint
from pipeline.review.stats import kappa
from pipeline.scoring.redaction import redact
from pipeline.scoring.suite import simple_input
from pipeline.settings import Settings
from pipeline.store import db
from pipeline.store.models import FindingRow
from pipeline.store.sink import Sink, stable_id, turn_id

# dimension -> (shipped rubric, classifier label, short name)
DIMENSIONS = {
    "level_emotional_reactions": ("epitome_er", "empathy.er", "er"),
    "level_interpretations": ("epitome_ip", "empathy.ip", "ip"),
    "level_explorations": ("epitome_ex", "empathy.ex", "ex"),
}
# Kumar et al. 2025, quadratic-weighted kappa against the expert median, all 50 items.
PUBLISHED = {"er": 0.64, "ip": 0.59, "ex": 0.76}
PUBLISHED_JUDGE = "Gemini 2.5 Pro"
EXPERT_PAIR_MEDIAN = 0.58
TS = datetime(2026, 1, 1, tzinfo=UTC)


def _turn(sp_id: str, n: int, role: str, text: str) -> dict[str, Any]:
    clean = redact(text, [])[0]
    return dict(id=turn_id(sp_id, n), conversation_id=sp_id, turn=n, role=role, ts=TS,
                bot_id="kumar", model="", tenant="", lang="en", text_redacted=clean,
                content_hash=stable_id(clean), n_chars=len(clean), metadata={}, text_raw=None,
                raw_expires_at=None, run_id=None, stored_at=TS)


def _ratings(engine: Engine) -> dict[tuple[str, str], int]:
    """(item, judge label) -> rating."""
    with engine.connect() as conn:
        rows = conn.execute(select(FindingRow.conversation_id, FindingRow.label,
                                   FindingRow.evidence).where(FindingRow.detector == "judge"))
        return {(r[0], r[1]): int(r[2]["rating"]) for r in rows}


def judge_items(rows: list[dict[str, str]], endpoint: Endpoint, key: SecretStr | None,
                options: JudgeOptions) -> tuple[dict[tuple[str, str], int], dict[str, Any]]:
    rubrics = [shipped(r) for r, _, _ in DIMENSIONS.values()]
    with tempfile.TemporaryDirectory(prefix="chatmon-kumar-judge-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'judge.db'}"
        db.upgrade(url)
        engine = db.make_engine(url)
        try:
            Sink(engine).write([t for r in rows for t in (
                _turn(r["sp_id"], 0, "user", r["seeker_post"]),
                _turn(r["sp_id"], 1, "assistant", r["response_post"]))])
            judge = Judge(engine, endpoint, rubrics, options, Policy(), key)
            report = judge_window(judge, Window()).as_dict()
            return _ratings(engine), report
        finally:
            engine.dispose()


def _gemini(path: Path) -> dict[str, dict[str, float]]:
    file = path / "annotations" / "epitome" / "gemini_ratings.csv"
    if not file.is_file():
        return {}
    return {r["sp_id"]: {k: float(v) for k, v in r.items() if k in DIMENSIONS and v}
            for r in read_csv(file, ("sp_id",))}


def evaluate_kumar_judge(path: Path, settings: Settings, endpoint: Endpoint,
                         key: SecretStr | None = None,
                         options: JudgeOptions | None = None) -> EvalResult:
    (file,) = require(path / "original_data", "sample_epitome.csv")
    gold = expert_median(path, "epitome", "sp_id")
    rows = [r for r in read_csv(file, ("sp_id", "seeker_post", "response_post"))
            if r["sp_id"] in gold]
    opts = options or JudgeOptions(sample_rate=1.0)
    rated, report = judge_items(rows, endpoint, key, opts)
    found = score_items([simple_input(r["response_post"], prompt=r["seeker_post"])
                         for r in rows], settings)
    gemini = _gemini(path)
    metrics: dict[str, float] = {}
    table = []
    for dim, (rubric, label, short) in DIMENSIONS.items():
        items = [r["sp_id"] for r in rows if dim in gold[r["sp_id"]]]
        expert = [round(gold[i][dim]) for i in items]
        judged = [(e, rated[(i, f"judge.{rubric}")]) for i, e in zip(items, expert, strict=True)
                  if (i, f"judge.{rubric}") in rated]
        levels = [int(f[label].evidence["level"]) for f in found]
        on_items = dict(zip([r["sp_id"] for r in rows], levels, strict=True))
        g = [(e, round(gemini[i][dim])) for i, e in zip(items, expert, strict=True)
             if dim in gemini.get(i, {})]
        row: dict[str, Any] = {"dimension": short, "n": len(items), "judged": len(judged),
               "judge": kappa([e for e, _ in judged], [j for _, j in judged], "quadratic"),
               "classifier": kappa(expert, [on_items[i] for i in items], "quadratic"),
               "gemini_on_these_items": kappa([e for e, _ in g], [x for _, x in g],
                                              "quadratic") if g else None,
               "published_gemini": PUBLISHED[short], "expert_pair_median": EXPERT_PAIR_MEDIAN}
        table.append(row)
        metrics[f"judge_kappa_{short}"] = _nan(row["judge"])
        metrics[f"kappa_{short}"] = _nan(row["classifier"])
    detail = {"table": table, "judge": report, "published_judge": PUBLISHED_JUDGE,
              "note": f"quadratic-weighted kappa against the median of three experts on the "
                      f"{len(rows)} EPITOME items of {path.name}; the published figures are "
                      "on all 50 items",
              "classifier_levels": f"{DETECTOR}.er/ip/ex evidence.level"}
    return EvalResult("kumar", f"judge:{endpoint.model}", len(rows), metrics, detail)


def _nan(x: float | None) -> float:
    return float("nan") if x is None else x


def render_table(result: dict[str, Any]) -> str:
    d = result["detail"]
    lines = [f"kumar EPITOME items: judge {result['detector'][6:]} (n={result['n']}); "
             "quadratic-weighted kappa against the expert median",
             f"{'dimension':<10} {'judge':>7} {'classifier':>11} "
             f"{'Gemini here':>12} {'published':>10} {'expert pairs':>13}"]
    for r in d["table"]:
        lines.append(f"{r['dimension']:<10} {_k(r['judge'])} {_k(r['classifier'], 11)} "
                     f"{_k(r['gemini_on_these_items'], 12)} {_k(r['published_gemini'], 10)} "
                     f"{_k(r['expert_pair_median'], 13)}")
    j = d["judge"]
    lines += [f"published: {d['published_judge']} on all 50 items; expert pairs: median "
              "kappa of the expert pairs (Kumar et al. 2025)",
              f"judge: {j['requests']} requests, {sum(j['failed'].values())} failed"
              + (f", stopped: {j['stopped']}" if j["stopped"] else "")]
    return "\n".join(lines)


def _k(x: float | None, width: int = 7) -> str:
    return f"{x:>{width}.2f}" if x is not None else f"{'-':>{width}}"

