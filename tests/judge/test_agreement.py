"""``chatmon review agreement --json`` judge rows: judge vs classifier and judge vs people,
checked against kappa and alpha computed directly on the same pairs."""

from __future__ import annotations

import json

import krippendorff
import numpy as np
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score
from sqlalchemy import create_engine

from pipeline.cli import cli
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
    assert vc["agreement"] == sum(a == b for a, b in zip(j_flag, c_flag, strict=True)) / 10
    assert (vp["compared_with"], vp["n"], vp["rated"]) == ("people on empathy.er", 10, 10)
    assert vp["kappa"] == round(cohen_kappa_score(j_flag, p_present), 4)
    assert vp["kappa_quadratic"] == round(cohen_kappa_score(j_rating, p_rating,
                                                            weights="quadratic"), 4)
    text = CliRunner().invoke(cli, ["review", "agreement"]).output
    assert "judge.epitome_er / judge-1" in text and "people on empathy.er" in text


def test_no_judge_findings_no_judge_rows(store, monkeypatch):
    url = store(conversation("c1", "Hi", "Hello"))
    monkeypatch.setenv("CHATMON_DATABASE_URL", url)
    out = CliRunner().invoke(cli, ["review", "agreement", "--json"])
    assert json.loads(out.output)["judge"] == {"vs_classifier": [], "vs_people": []}
