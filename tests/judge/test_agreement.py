"""``chatmon review agreement --json`` judge rows: judge vs classifier and judge vs people,
checked against kappa and alpha computed directly on the same pairs."""

from __future__ import annotations

import json
from datetime import datetime

import krippendorff
import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score
from sqlalchemy import create_engine

from dashboards import queries, sqlrun
from pipeline.cli import cli
from pipeline.judge.agreement import agrees, on_scale
from pipeline.review.importer import store_reviews
from pipeline.review.lines import Review
from pipeline.store.sink import stable_id, turn_id
from tests.judge.conftest import add_findings, conversation, judge_all

# (judge rating 0-2, classifier level 0-2, classifier flagged, reviewer present, rating)
CASES = [(2, 2, True, True, 2), (2, 1, True, True, 1), (1, 1, True, True, 1),
         (1, 0, False, False, 0), (0, 0, False, False, 0), (0, 1, True, True, 1),
         (2, 0, False, True, 2), (1, 2, True, True, 2), (0, 0, False, False, 0),
         (1, 1, True, False, 0)]


def test_judge_rows_against_classifier_and_people(store, judge_server, monkeypatch):
    events = []
    for i, (rating, *_rest) in enumerate(CASES):
        events += conversation(f"c{i}", "My parcel is late again.",
                               f"Reply number {i}. [rate={rating}]", minute=i)
    url = store(events)
    add_findings(url, [(f"c{i}", 1, "empathy.er", [0.1, 0.5, 0.9][level], flagged,
                        {"level": level}) for i, (_, level, flagged, _, _) in enumerate(CASES)])
    judge_all(url, judge_server.url)  # epitome_er, compared with empathy.er
    engine = create_engine(url)
    reviews = [Review(i + 1, stable_id("finding", turn_id(f"c{i}", 1), "empathy", "t",
                                       "empathy.er", None), present, rate, "ann", "", None)
               for i, (_, _, _, present, rate) in enumerate(CASES)]
    assert store_reviews(engine, reviews, "test").stored == len(CASES)

    monkeypatch.setenv("CHATMON_DATABASE_URL", url)
    out = CliRunner().invoke(cli, ["review", "agreement", "--json"])
    assert out.exit_code == 0, out.output
    judge = json.loads(out.output)["judge"]
    (vc,) = judge["vs_classifier"]
    (vp,) = judge["vs_people"]
    j_rating = [c[0] for c in CASES]
    j_flag = [c[0] >= 1 for c in CASES]  # judge.* flagged at 0.5 of the scale
    c_level, c_flag = [c[1] for c in CASES], [c[2] for c in CASES]
    p_present, p_rating = [c[3] for c in CASES], [c[4] for c in CASES]
    assert (vc["judge_label"], vc["model"], vc["compared_with"], vc["n"], vc["scale"]) == (
        "judge.epitome_er", "judge-1", "empathy.er", 10, "0-2")
    assert vc["kappa"] == round(cohen_kappa_score(j_flag, c_flag), 4)
    assert vc["kappa_quadratic"] == round(cohen_kappa_score(j_rating, c_level,
                                                            weights="quadratic"), 4)
    assert vc["alpha"] == round(krippendorff.alpha(np.array([j_rating, c_level], float),
                                                   level_of_measurement="ordinal"), 4)
    # agreement on the 0-2 scale: the same level
    assert vc["agreement"] == sum(a == b for a, b in zip(j_rating, c_level, strict=True)) / 10
    assert (vp["compared_with"], vp["n"], vp["rated"]) == ("people on empathy.er", 10, 10)
    assert vp["kappa"] == round(cohen_kappa_score(j_flag, p_present), 4)
    assert vp["agreement"] == sum(a == b for a, b in zip(j_rating, p_rating, strict=True)) / 10
    assert vp["kappa_quadratic"] == round(cohen_kappa_score(j_rating, p_rating,
                                                            weights="quadratic"), 4)
    text = CliRunner().invoke(cli, ["review", "agreement"]).output
    assert "judge.epitome_er / judge-1" in text and "people on empathy.er" in text
    # The weekly panel's SQL says the same as the rows (all ten replies are in one week).
    (week,) = sqlrun.run(engine, queries.JUDGE_AGREEMENT_WEEKLY.sql, datetime(2026, 1, 1),
                         datetime(2027, 1, 1)).records()
    assert (week["n"], week["agreement"]) == (10, vc["agreement"])
    assert round(week["kappa"], 4) == vc["kappa_quadratic"]


@pytest.mark.parametrize(("scale", "a", "b", "agree"), [
    ((0, 2), 1, 1, True), ((0, 2), 2, 1, False), ((0, 1), 1, 0, False),
    ((1, 5), 4, 5, True), ((1, 5), 2, 4, False), ((1, 5), 3, 3, True)])
def test_ratings_agree_on_the_same_level_or_a_neighbour_on_five_levels(scale, a, b, agree):
    assert agrees(scale, a, b) is agree


def test_a_score_is_placed_on_the_rubric_scale_unless_it_has_a_level_there():
    assert on_scale((1, 5), 0.62, None) == 3  # 1 + round(0.62 * 4)
    assert on_scale((0, 2), 0.9, 1) == 1  # empathy.er's own level
    assert on_scale((1, 5), 0.9, 0) == 5  # a level off this scale: the score decides


def test_no_judge_findings_no_judge_rows(store, monkeypatch):
    url = store(conversation("c1", "Hi", "Hello"))
    monkeypatch.setenv("CHATMON_DATABASE_URL", url)
    out = CliRunner().invoke(cli, ["review", "agreement", "--json"])
    assert json.loads(out.output)["judge"] == {"vs_classifier": [], "vs_people": []}
