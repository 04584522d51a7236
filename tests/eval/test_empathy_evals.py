"""The empathy eval harnesses (epitome, welivita-pu, kumar) on tiny hand-written fixtures in each
set's original layout: they read the layout, score through the registered detector, and report
the fixed metric names with values that follow from the fixture."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pipeline.errors import EvalDataError
from pipeline.eval import BENCHES, run_benchmark
from pipeline.eval.empathy_kumar import conversation_inputs, expert_median
from pipeline.eval.empathy_sets import load_epitome, pairwise_accuracy
from pipeline.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings()


def test_benches_registered() -> None:
    for name in ("epitome", "welivita-pu", "kumar", "contrast", "goemotions"):
        assert name in BENCHES


def test_epitome_joins_the_three_files() -> None:
    rows = load_epitome(FIXTURES / "epitome")
    assert len(rows) == 8
    first = rows[0]
    assert (first["er"], first["ip"], first["ex"]) == (2, 0, 2)


def test_epitome_metrics(settings) -> None:
    res = run_benchmark("epitome", FIXTURES / "epitome", settings).as_dict()
    assert res["n"] == 8
    keys = {
        "auroc_er",
        "auroc_ip",
        "auroc_ex",
        "macro_f1_er",
        "macro_f1_ip",
        "macro_f1_ex",
        "spearman_total",
    }
    assert set(res["metrics"]) == keys
    # The fixture's empathic replies are unambiguous: each mechanism separates them.
    for mech in ("er", "ip", "ex"):
        assert res["metrics"][f"auroc_{mech}"] >= 0.75, res["metrics"]
    assert res["metrics"]["spearman_total"] > 0.5


def test_epitome_missing_file(tmp_path, settings) -> None:
    with pytest.raises(EvalDataError):
        run_benchmark("epitome", tmp_path, settings)


@pytest.mark.parametrize(
    ("groups", "want"),
    [
        ([[(3, 0.9), (1, 0.1), (2, 0.5)]], 1.0),
        ([[(3, 0.1), (1, 0.9)]], 0.0),
        ([[(3, 0.5), (1, 0.5)]], 0.5),
        ([[(2, 0.1), (2, 0.9)]], math.nan),  # equal ratings make no pair
    ],
)
def test_pairwise_accuracy(groups, want) -> None:
    got, _ = pairwise_accuracy(groups)
    assert (math.isnan(got) and math.isnan(want)) or got == want


def test_welivita_metrics(settings) -> None:
    res = run_benchmark("welivita-pu", FIXTURES / "welivita-pu", settings).as_dict()
    assert res["n"] == 3 and set(res["metrics"]) == {"pairwise_acc", "spearman"}
    assert res["detail"]["pairs"] == 7
    assert res["metrics"]["pairwise_acc"] >= 0.75, res


def test_kumar_conversation_parsing() -> None:
    items = conversation_inputs(
        "c", "Seeker: hi_comma_ there\n Supporter: hello\n Seeker: a\n Supporter: b\n"
    )
    assert [i.turn.text for i in items] == ["hello", "b"]
    assert items[1].context.prompt_text == "a" and len(items[1].context.history) == 3
    assert items[0].context.history[0].text == "hi, there"


def test_kumar_expert_median() -> None:
    gold = expert_median(FIXTURES / "kumar", "empatheticdialogues", "conv_id")
    assert gold["c1"]["empathy"] == 5 and gold["c2"]["empathy"] == 1


def test_kumar_metrics(settings) -> None:
    res = run_benchmark("kumar", FIXTURES / "kumar", settings).as_dict()
    assert set(res["metrics"]) == {"spearman_expert", "kappa_er", "kappa_ip", "kappa_ex"}
    assert res["detail"]["kappa"]["published"]["gemini_2_5_pro"] == {"er": 0.64, "ip": 0.59,
                                                                      "ex": 0.76}
    assert res["detail"]["kappa"]["published"]["expert_pair_median"] == 0.58
    assert set(res["detail"]["epitome"]) == {
        "level_emotional_reactions",
        "level_interpretations",
        "level_explorations",
    }
    assert set(res["detail"]["lend_an_ear"]) >= {"advice_giving", "encouraging_elaboration"}
    assert res["n"] == 5 + 3 + 3
    # Clear-cut fixture: the warm, questioning conversation ranks first for elaboration, the
    # advice-only one first for advice.
    assert res["detail"]["lend_an_ear"]["encouraging_elaboration"] > 0
    assert res["detail"]["lend_an_ear"]["advice_giving"] > 0
    assert res["metrics"]["spearman_expert"] > 0


KAPPA_CASES = [
    # rater a, rater b, expected quadratic-weighted kappa
    ([0, 1, 2, 0, 1, 2], [0, 1, 2, 0, 1, 2], 1.0),
    ([0, 0, 2, 2], [2, 2, 0, 0], -1.0),
    # one step off on one item of four: a small loss under quadratic weights
    ([0, 1, 2, 2], [0, 1, 2, 1], 0.8),
]


@pytest.mark.parametrize(("a", "b", "want"), KAPPA_CASES)
def test_weighted_kappa(a, b, want) -> None:
    from pipeline.eval.core import weighted_kappa

    assert weighted_kappa(a, b) == pytest.approx(want, abs=1e-9)


def test_weighted_kappa_without_variation_is_nan() -> None:
    from pipeline.eval.core import weighted_kappa

    assert math.isnan(weighted_kappa([1, 1], [1, 1])) and math.isnan(weighted_kappa([], []))


def test_level_kappas_use_the_detectors_levels() -> None:
    from detectors.base import Finding
    from pipeline.eval.empathy_kumar import level_kappas

    def found(er: int, ip: int, ex: int) -> dict[str, Finding]:
        return {f"empathy.{m}": Finding("empathy", "t", f"empathy.{m}", 0.5, None,
                                        {"level": lvl}) for m, lvl in (("er", er), ("ip", ip),
                                                                       ("ex", ex))}

    gold = {"a": {"level_emotional_reactions": 2.0, "level_interpretations": 0.0,
                  "level_explorations": 1.0},
            "b": {"level_emotional_reactions": 0.0, "level_interpretations": 2.0,
                  "level_explorations": 1.0}}
    kappas, n = level_kappas(gold, {"a": [found(2, 2, 1)], "b": [found(0, 0, 2)]})
    assert n == 2 and kappas["er"] == pytest.approx(1.0) and kappas["ip"] == pytest.approx(-1.0)
    assert kappas["ex"] == pytest.approx(0.0)  # the experts do not vary: no agreement beyond chance


def _contrast_fixture(path: Path) -> Path:
    import json

    rows = [
        {"id": "a", "domain": "delivery", "split": "tune",
         "user": "My parcel with my son's birthday present is lost and the party is tomorrow. "
                 "I'm so upset.",
         "replies": {
             "tailored": "Losing your son's birthday present the day before his party is "
                         "really upsetting. I've sent a replacement that arrives tomorrow "
                         "morning, before the party.",
             "stock": "I understand your frustration. We apologize for any inconvenience. "
                      "Please allow 10 working days for the investigation.",
             "cold": "The parcel is lost. A replacement has been sent."}},
        {"id": "b", "domain": "billing", "split": "heldout",
         "user": "You charged me twice for my rent payment and now I can't buy groceries. "
                 "I'm furious.",
         "replies": {
             "tailored": "Being charged twice for your rent and left unable to buy groceries "
                         "is infuriating. I've refunded the second payment today.",
             "stock": "I'm sorry for the trouble. Refunds take 5-7 business days.",
             "cold": "The duplicate payment has been refunded."}},
    ]
    path.mkdir(parents=True, exist_ok=True)
    (path / "scenarios.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_contrast_metrics(tmp_path, settings) -> None:
    res = run_benchmark("contrast", _contrast_fixture(tmp_path / "c"), settings).as_dict()
    m = res["metrics"]
    assert res["n"] == 2 and res["detail"]["domains"] == 2
    assert m["pairwise_tailored_stock"] == 1.0 and m["pairwise_tailored_cold"] == 1.0
    assert m["stock_level_le1"] == 1.0 and m["formulaic_stock"] == 1.0
    assert m["formulaic_tailored"] == 0.0 and m["missed_tailored"] == 0.0
    assert m["missed_cold"] == 1.0
    assert set(res["detail"]["by_split"]) == {"tune", "heldout"}
    assert m["heldout_pairwise_tailored_stock"] == 1.0
    by_kind = res["detail"]["by_kind"]
    assert by_kind["tailored"]["cause_addressed"] == 1.0
    assert by_kind["stock"]["cause_addressed"] == 0


def test_contrast_bad_rows_are_named(tmp_path, settings) -> None:
    (tmp_path / "scenarios.jsonl").write_text('{"id": "a", "user": "hi", "replies": {}}\n')
    with pytest.raises(EvalDataError, match=":1: needs user and replies"):
        run_benchmark("contrast", tmp_path, settings)


def test_our_contrast_set_is_what_its_readme_says() -> None:
    from pipeline.eval.empathy_contrast import load_scenarios

    rows = load_scenarios(Path(__file__).parent / "contrast")
    domains = {r["domain"] for r in rows}
    assert len(rows) >= 60 and len(domains) >= 10
    assert {r["split"] for r in rows} == {"tune", "heldout"}
    for split in ("tune", "heldout"):  # split by domain: no domain on both sides
        assert {r["domain"] for r in rows if r["split"] == split}.isdisjoint(
            {r["domain"] for r in rows if r["split"] != split})
    words = [(len(r["replies"]["tailored"].split()), len(r["replies"]["stock"].split()))
             for r in rows]
    assert 0.3 < sum(t > s for t, s in words) / len(words) < 0.7  # length alone cannot rank


def test_goemotions_reads_every_tsv_but_train(tmp_path, settings) -> None:
    (tmp_path / "labels.txt").write_text(
        "anger\ndisgust\nfear\njoy\nneutral\nsadness\nsurprise\n")
    rows = ["I'm so happy for you, this is wonderful news!\t3\ta",
            "This is disgusting, I'm furious with them.\t1\tb",  # disgust counts as anger
            "What time does the store open?\t4\tc",
            "My dog died this morning and I can't stop crying.\t5\td",
            "I'm terrified of the surgery tomorrow.\t2\te",
            "Wow, I did not see that coming!\t6\tf",  # surprise: left out
            "I'm happy but also angry.\t0,3\tg"]  # two labels: left out
    (tmp_path / "dev.tsv").write_text("\n".join(rows) + "\n")
    (tmp_path / "train.tsv").write_text("Never read.\t3\tz\n")
    res = run_benchmark("goemotions", tmp_path, settings).as_dict()
    assert res["n"] == 5 and res["detail"]["files"] == ["dev.tsv"]
    assert res["detail"]["skipped"] == ["train.tsv"]
    assert res["detail"]["support"] == [1, 1, 1, 1, 1]
    assert res["metrics"]["accuracy"] >= 0.8, res["detail"]["confusion"]
    assert set(res["metrics"]) == {"macro_f1", "accuracy", "f1_anger", "f1_fear", "f1_joy",
                                   "f1_neutral", "f1_sadness"}


def test_goemotions_needs_an_evaluation_file(tmp_path, settings) -> None:
    (tmp_path / "labels.txt").write_text("anger\n")
    (tmp_path / "train.tsv").write_text("x\t0\ta\n")
    with pytest.raises(EvalDataError, match="besides train.tsv"):
        run_benchmark("goemotions", tmp_path, settings)
