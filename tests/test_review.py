"""The review loop on a real store (SQLite; PostgreSQL where marked): stratified samples, review
lines (bad lines and near misses), idempotent imports, agreement numbers against hand counts,
scikit-learn and the dashboards' SQL, Krippendorff's alpha, threshold suggestions, the CLI
(the issue's Done-when: a batch of 80 rated and imported twice), and POST /v1/reviews."""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, text

from dashboards import queries, sqlrun
from pipeline.cli import cli
from pipeline.review import agreement as ag
from pipeline.review.importer import store_reviews
from pipeline.review.lines import LineError, Review, Unrated, parse, parse_line
from pipeline.review.sample import SampleFilter, allocate, sample
from pipeline.review.stats import suggest_threshold, wilson
from pipeline.store import db
from tests.dashboards.seed import END, START, rows, seed_store


@pytest.fixture
def store(sqlite_url: str) -> Iterator[tuple[str, Engine]]:
    """A migrated store with the dashboards' seed findings and no reviews."""
    db.upgrade(sqlite_url)
    engine = db.make_engine(sqlite_url)
    seed_store(engine)
    with engine.begin() as conn:
        conn.execute(text("delete from reviews"))
    yield sqlite_url, engine
    engine.dispose()


def rate(line: dict[str, Any], reviewer: str = "ann") -> dict[str, Any]:
    """A deterministic reviewer: agrees with the flag unless the id's hash says otherwise."""
    flip = int(hashlib.sha256((line["finding_id"] + reviewer).encode()).hexdigest(), 16) % 4 == 0
    return {**line, "present": line["flagged"] != flip, "reviewer": reviewer}


ALLOCATIONS = [
    (10, {("a", True): 100, ("a", False): 100}, {("a", True): 5, ("a", False): 5}),
    (10, {("a", True): 2, ("a", False): 100, ("b", True): 100},
     {("a", True): 2, ("a", False): 5, ("b", True): 3}),
    (7, {("a", True): 100, ("b", False): 100}, {("a", True): 4, ("b", False): 3}),
    (10, {("a", True): 1, ("b", True): 2}, {("a", True): 1, ("b", True): 2}),
    (2, {("a", True): 5, ("b", True): 5, ("c", True): 5},
     {("a", True): 1, ("b", True): 1, ("c", True): 0}),
    (5, {("a", True): 0, ("b", True): 9}, {("a", True): 0, ("b", True): 5}),
]


@pytest.mark.parametrize(("n", "sizes", "expected"), ALLOCATIONS)
def test_allocation_is_equal_and_passes_on_what_small_strata_cannot_take(n, sizes, expected):
    assert allocate(n, sizes) == expected


def test_sample_is_stratified_deterministic_and_redacted(store) -> None:
    _, engine = store
    lines = sample(engine, 40, SampleFilter())
    assert len(lines) == 40 and len({x["finding_id"] for x in lines}) == 40
    strata = Counter((x["label"], x["flagged"]) for x in lines)
    assert max(strata.values()) - min(strata.values()) <= 1  # every stratum is large enough
    assert sample(engine, 40, SampleFilter()) == lines
    assert sample(engine, 40, SampleFilter(), seed=1) != lines
    first = lines[0]
    for key in ("finding_id", "label", "score", "flagged", "excerpt", "text", "answers", "ts"):
        assert key in first
    assert first["present"] is None
    assistant = next(x for x in lines if x["role"] == "assistant")
    assert assistant["answers"] == f"[user turn {assistant['turn'] - 1}]"
    assert assistant["ts"].endswith("+00:00")


@pytest.mark.parametrize(("flt", "check"), [
    (SampleFilter(detector="pii"), lambda x: x["detector"] == "pii"),
    (SampleFilter(label="empathy.score"), lambda x: x["label"] == "empathy.score"),
    (SampleFilter(tenant="globex"), lambda x: x["tenant"] == "globex"),
    (SampleFilter(since=END.replace(day=15)), lambda x: x["ts"] >= "2026-11-15"),
])
def test_sample_filters(store, flt, check) -> None:
    _, engine = store
    lines = sample(engine, 30, flt)
    assert lines and all(check(x) for x in lines)


def test_sample_leaves_out_reviewed_findings_unless_asked(store) -> None:
    _, engine = store
    lines = sample(engine, 20, SampleFilter(label="empathy.score"))
    store_reviews(engine, [parse(rate(x), i, False) for i, x in enumerate(lines)], "t")
    again = {x["finding_id"] for x in sample(engine, 20, SampleFilter(label="empathy.score"))}
    assert not again & {x["finding_id"] for x in lines}
    every = sample(engine, 10_000, SampleFilter(label="empathy.score", include_reviewed=True))
    assert {x["finding_id"] for x in lines} <= {x["finding_id"] for x in every}


FID = "a" * 40
LINES = [
    # (line, expected)
    (json.dumps({"finding_id": FID, "present": True}), Review(1, FID, True, None, "", "", None)),
    (json.dumps({"finding_id": FID, "present": False, "rating": 0, "reviewer": " bo ",
                 "note": "fine", "label": "empathy.er", "score": 0.3}),
     Review(1, FID, False, 0, "bo", "fine", "empathy.er")),
    (json.dumps({"finding_id": FID, "present": None}), Unrated(1)),
    (json.dumps({"finding_id": FID}), Unrated(1)),
    ("", None),
    ("{not json", "not JSON"),
    ("[1, 2]", "a review is a JSON object, not list"),
    (json.dumps({"present": True}), "finding_id is required"),
    (json.dumps({"finding_id": "abc", "present": True}), "is not a finding id"),
    (json.dumps({"finding_id": FID, "present": "yes"}),
     'present must be true or false (got "yes")'),
    (json.dumps({"finding_id": FID, "present": 1}), "present must be true or false (got 1)"),
    (json.dumps({"finding_id": FID, "present": True, "rating": 3}), "rating must be 0, 1 or 2"),
    (json.dumps({"finding_id": FID, "present": True, "rating": 1.5}), "rating must be 0, 1 or 2"),
    (json.dumps({"finding_id": FID, "present": True, "note": "x" * 2001}), "note must be"),
    (json.dumps({"finding_id": FID, "present": True, "reviewer": 7}), "reviewer must be"),
]


@pytest.mark.parametrize(("line", "expected"), LINES, ids=[str(e)[:40] for _, e in LINES])
def test_review_lines(line: str, expected: Any) -> None:
    got = parse_line(line, 1)
    if isinstance(expected, str):
        assert isinstance(got, LineError) and expected in got.error, got
    else:
        assert got == expected


def test_posted_reviews_need_present() -> None:
    got = parse({"finding_id": FID}, 0, allow_unrated=False)
    assert isinstance(got, LineError) and "present must be" in got.error


def _lines(engine: Engine, label: str, n: int) -> list[dict[str, Any]]:
    return sample(engine, n, SampleFilter(label=label, include_reviewed=True))


def test_import_errors_are_per_line_and_the_rest_is_stored(store) -> None:
    _, engine = store
    er = _lines(engine, "empathy.score", 4)
    tox = _lines(engine, "toxicity.insult", 1)[0]
    items = [parse(rate(er[0]), 1, False), parse({**rate(er[1]), "label": "pii.leak"}, 2, False),
             parse({"finding_id": "b" * 40, "present": True}, 3, False),
             parse(rate(er[2]), 4, False), parse(rate(er[2]), 5, False),  # same twice: fine
             parse({**rate(er[3]), "present": True}, 6, False),
             parse({**rate(er[3]), "present": False}, 7, False),  # contradicts line 6
             parse({**rate(tox), "present": True, "rating": 0}, 8, False),  # fine: no mechanism
             parse({"finding_id": "c" * 40}, 9, False)]
    res = store_reviews(engine, items, "t")
    errors = {e.index: e.error for e in res.errors}
    assert set(errors) == {2, 3, 7, 9}
    assert "is not the finding's label 'empathy.score'" in errors[2]
    assert "unknown finding id " + "b" * 40 in errors[3]
    assert "same finding and reviewer as 6" in errors[7]
    assert (res.stored, res.unchanged, res.updated) == (4, 1, 0)


def test_mechanism_rating_must_agree_with_present(store) -> None:
    _, engine = store
    engine_er = _seed_mechanism(engine)
    res = store_reviews(engine, [parse({"finding_id": engine_er, "present": True, "rating": 0},
                                       1, False),
                                 parse({"finding_id": engine_er, "present": True, "rating": 2,
                                        "reviewer": "x"}, 2, False)], "t")
    assert [e.index for e in res.errors] == [1] and "rating 0 contradicts present=true" in \
        res.errors[0].error
    assert res.stored == 1


def _seed_mechanism(engine: Engine) -> str:
    """An empathy.er finding (the seed has only empathy.score)."""
    from sqlalchemy import insert

    from pipeline.store.models import FindingRow

    turns, findings = rows(3)
    row = {**next(f for f in findings if f["label"] == "empathy.score"), "label": "empathy.er",
           "id": "e" * 40}
    with engine.begin() as conn:
        conn.execute(insert(FindingRow), [row])
    return row["id"]


def test_reimport_adds_nothing_and_a_changed_answer_replaces_the_old(store) -> None:
    _, engine = store
    lines = _lines(engine, "empathy.score", 6)
    first = store_reviews(engine, [parse(rate(x), i, False) for i, x in enumerate(lines)], "t")
    again = store_reviews(engine, [parse(rate(x), i, False) for i, x in enumerate(lines)], "t")
    assert (first.stored, again.stored, again.unchanged) == (6, 0, 6)
    flipped = {**rate(lines[0]), "present": not rate(lines[0])["present"]}
    changed = store_reviews(engine, [parse(flipped, 0, False)], "t")
    assert (changed.stored, changed.updated) == (0, 1)
    with engine.connect() as conn:
        assert conn.execute(text("select count(*) from reviews")).scalar_one() == 6


def test_notes_are_redacted_before_they_are_stored(store, pii_suite) -> None:
    from pipeline.scoring.redaction import Redactor

    _, engine = store
    line = _lines(engine, "empathy.score", 1)[0]
    note = "user is Jane Roe, jane.roe@example.net, +1 212 555 0147; reply was fine"
    store_reviews(engine, [parse({**rate(line), "note": note}, 0, False)], "t",
                  Redactor(pii_suite.detectors[0]).texts)
    with engine.connect() as conn:
        stored = conn.execute(text("select note from reviews")).scalar_one()
    assert "jane.roe" not in stored and "555 0147" not in stored and "Jane Roe" not in stored
    assert "reply was fine" in stored


def _expected(rated: list[dict[str, Any]]) -> dict[str, tuple[int, float]]:
    by: dict[str, list[bool]] = defaultdict(list)
    for x in rated:
        by[x["label"]].append(x["present"] == x["flagged"])
    return {k: (len(v), round(sum(v) / len(v), 4)) for k, v in by.items()}


def test_done_when_a_batch_of_80_rated_and_imported_twice(store, tmp_path: Path) -> None:
    url, _ = store
    env = {"CHATMON_DATABASE_URL": url}
    batch, rated_file = tmp_path / "batch.jsonl", tmp_path / "rated.jsonl"
    run = CliRunner().invoke(cli, ["review", "sample", "--n", "80", "--out", str(batch)], env=env)
    assert run.exit_code == 0, run.output
    assert "wrote 80 findings" in run.output
    rated = [rate(json.loads(x)) for x in batch.read_text().splitlines()]
    assert len(rated) == 80
    rated_file.write_text("".join(json.dumps(x) + "\n" for x in rated))
    for stored in (80, 0):
        res = CliRunner().invoke(cli, ["review", "import", "--json", str(rated_file)], env=env)
        assert res.exit_code == 0, res.output
        assert json.loads(res.output)["stored"] == stored
    res = CliRunner().invoke(cli, ["review", "agreement", "--json"], env=env)
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)
    assert got["reviews"] == 80
    assert {k: (v["n"], v["agreement"]) for k, v in got["labels"].items()} == _expected(rated)
    table = CliRunner().invoke(cli, ["review", "agreement"], env=env)
    assert "empathy.score" in table.output and "at least 30 are needed" in table.output


def test_import_cli_reports_bad_lines_and_exits_1(store, tmp_path: Path) -> None:
    url, engine = store
    good = rate(_lines(engine, "empathy.score", 1)[0])
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(good) + "\n{oops\n\n" + json.dumps({"finding_id": "d" * 40,
                                                                  "present": False}) + "\n")
    res = CliRunner().invoke(cli, ["review", "import", str(path)],
                             env={"CHATMON_DATABASE_URL": url})
    assert res.exit_code == 1
    assert "1 stored" in res.output and "2 bad" in res.output
    assert "line 2: not JSON" in res.output and "line 4: unknown finding id" in res.output


def test_agreement_numbers_match_sklearn_and_the_dashboard_sql(store) -> None:
    from sklearn.metrics import cohen_kappa_score

    _, engine = store
    for label in ("empathy.missed", "pii.leak", "toxicity.insult"):
        lines = _lines(engine, label, 1000)
        store_reviews(engine, [parse(rate(x), i, False) for i, x in enumerate(lines)], "t")
    got = ag.agreement(engine)["labels"]
    sql = {r["label"]: r for r in sqlrun.run(engine, queries.AGREEMENT.sql, START, END).records()}
    assert set(got) == set(sql)
    for label, s in got.items():
        reviewed = ag.load(engine)
        mine = [r for r in reviewed if r.label == label]
        flags, people = [r.flagged for r in mine], [r.present for r in mine]
        assert s["n"] == sql[label]["n"] == len(mine)
        assert s["agreement"] == pytest.approx(sql[label]["agreement"], abs=1e-4)
        on_flagged = [p for f, p in zip(flags, people, strict=True) if f]
        assert s["precision"] == pytest.approx(sum(on_flagged) / len(on_flagged), abs=1e-4)
        if s["kappa"] is None:
            assert sql[label]["kappa"] is None
        else:
            assert s["kappa"] == pytest.approx(cohen_kappa_score(flags, people), abs=1e-4)
            assert s["kappa"] == pytest.approx(sql[label]["kappa"], abs=1e-4)


def test_the_seeded_reviews_on_postgres_give_the_same_sql_numbers(postgres_url) -> None:
    engine = db.make_engine(postgres_url)
    seed_store(engine)
    pg = {r["label"]: r for r in sqlrun.run(engine, queries.AGREEMENT.sql, START, END).records()}
    py = ag.agreement(engine)["labels"]
    assert pg and set(pg) == set(py)
    for label, s in py.items():
        assert float(pg[label]["agreement"]) == pytest.approx(s["agreement"], abs=1e-4)
    engine.dispose()


def test_inter_rater_alpha_with_two_reviewers(store) -> None:
    import krippendorff
    import numpy as np

    _, engine = store
    lines = _lines(engine, "empathy.score", 60)
    items = [parse(rate(x, "ann"), i, False) for i, x in enumerate(lines)]
    items += [parse(rate(x, "bob"), i, False) for i, x in enumerate(lines[:40])]
    store_reviews(engine, items, "t")
    s = ag.agreement(engine)["labels"]["empathy.score"]
    assert (s["n"], s["findings"], s["reviewers"]) == (100, 60, 2)
    ir = s["inter_rater"]
    assert ir["findings"] == 40 and ir["reviewers"] == 2
    data = np.array([[rate(x, who)["present"] for x in lines[:40]] for who in ("ann", "bob")],
                    dtype=float)
    want = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert ir["alpha_present"] == pytest.approx(want, abs=1e-4)
    assert ir["alpha_rating"] is None
    one = ag.agreement(engine, tenant="no-such-tenant")
    assert one["labels"] == {} and one["reviews"] == 0


@pytest.mark.parametrize(("k", "n", "low", "high"), [
    (8, 10, 0.4902, 0.9433), (0, 10, 0.0, 0.2775), (50, 50, 0.9287, 1.0)])
def test_wilson_interval(k, n, low, high) -> None:
    assert wilson(k, n) == (pytest.approx(low, abs=1e-4), pytest.approx(high, abs=1e-4))


def test_suggestion_picks_the_lowest_threshold_that_reaches_the_target() -> None:
    # 40 findings: scores 0.01..0.40; present exactly when the score is above 0.2.
    scores = [i / 100 for i in range(1, 41)]
    present = [1.0 if s > 0.2 else 0.0 for s in scores]
    got = suggest_threshold(scores, present, target=0.9)
    assert got.status == "ok" and got.threshold == 0.19  # 20 present of 22 = 0.909
    assert got.above == 22 and got.precision == pytest.approx(20 / 22)
    assert got.ci95 == (pytest.approx(wilson(20, 22)[0]), pytest.approx(wilson(20, 22)[1]))
    assert got.meets_target_at_95 is False
    strict = suggest_threshold(scores, present, target=1.0)
    assert strict.threshold == 0.21 and strict.precision == 1.0


@pytest.mark.parametrize(("n", "present", "status"), [
    (29, 1.0, "too_few_reviews"), (30, 1.0, "ok"), (40, 0.5, "unreachable")])
def test_suggestion_says_when_it_cannot(n, present, status) -> None:
    scores = [i / n for i in range(n)]
    shares = [1.0 if present == 1.0 or i % 2 else 0.0 for i in range(n)]  # or every other one
    got = suggest_threshold(scores, shares, target=0.9)
    assert got.status == status, got.reason
    if status != "ok":
        assert got.threshold is None and got.reason


def test_ties_are_decided_together() -> None:
    scores = [0.5] * 20 + [0.9] * 15
    present = [0.0] * 20 + [1.0] * 15
    got = suggest_threshold(scores, present, target=0.9)
    assert got.threshold == 0.9 and got.above == 15
