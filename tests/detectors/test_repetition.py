"""Repetition detector: stock phrases, near-duplicates, templates, window metrics, state."""

from __future__ import annotations

import json
import random
import zlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from detectors.base import Context, DictStateStore, Example, Finding, ScoringInput, Turn
from detectors.repetition.detector import EXAMPLES, RepetitionDetector, state_key
from detectors.repetition.text import analyse

STOCK_LABELS = ("repetition.stock_phrase", "repetition.stock_empathy")
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
Step = tuple[str, int, str]  # (conversation, turn, text)
MakeInput = Callable[..., ScoringInput]


@pytest.fixture
def make_input() -> MakeInput:
    def make(conv: str, turn: int, text: str, store: DictStateStore | None = None,
             bot: str | None = "shopbot", tenant: str | None = None,
             seconds: float = 0.0) -> ScoringInput:
        t = Turn(conv, turn, "assistant", text, T0 + timedelta(seconds=seconds), bot_id=bot,
                 tenant=tenant)
        return ScoringInput(t, Context(state=store))
    return make


def run(steps: Sequence[Step], make_input: MakeInput, batch: int = 1,
        detector: RepetitionDetector | None = None,
        store: DictStateStore | None = None, bots: int = 1) -> list[list[Finding]]:
    det = detector or RepetitionDetector()
    store = store if store is not None else DictStateStore()
    items = [make_input(c, t, x, store, seconds=i,
                        bot="shopbot" if bots == 1 else f"bot{i % bots}")
             for i, (c, t, x) in enumerate(steps)]
    out: list[list[Finding]] = []
    for i in range(0, len(items), batch):
        out.extend(det.score(items[i: i + batch]))
    return out


def labelled(found: list[Finding], label: str) -> list[Finding]:
    return [f for f in found if f.label == f"repetition.{label}"]


def stock(found: list[Finding]) -> list[Finding]:
    """Stock phrases of either kind: empathy formulas and procedure are counted alike
    (tests/detectors/test_repetition_formulas.py tells them apart)."""
    return [f for f in found if f.label in STOCK_LABELS]


SORRY = "I'm sorry to hear that."
ELSE = "Is there anything else I can help you with today?"

# (name, steps, expected stock phrases per step: list of phrase sets)
STOCK_CASES: list[tuple[str, list[Step], list[set[str]]]] = [
    ("flagged from the second conversation on",
     [("c1", 1, f"{SORRY} Your parcel is with the courier."),
      ("c2", 1, f"{SORRY} The blender warranty covers the motor."),
      ("c3", 1, f"{SORRY} We can reset the password by e-mail.")],
     [set(), {"i'm sorry to hear that"}, {"i'm sorry to hear that"}]),
    ("repeats inside one conversation are not stock",
     [("c1", 1, f"{SORRY} Your parcel is with the courier."),
      ("c1", 3, f"{SORRY} The courier lost the tracking label."),
      ("c1", 5, f"{SORRY} A new parcel goes out tomorrow morning.")],
     [set(), set(), set()]),
    ("a conversation that used it before is flagged once it is stock",
     [("c1", 1, f"{SORRY} Your parcel is with the courier."),
      ("c2", 1, f"{SORRY} The blender warranty covers the motor."),
      ("c1", 3, f"{SORRY} A new parcel goes out tomorrow morning.")],
     [set(), {"i'm sorry to hear that"}, {"i'm sorry to hear that"}]),
    ("two stock phrases in one reply give two findings",
     [("c1", 1, f"{SORRY} Your parcel is with the courier. {ELSE}"),
      ("c2", 1, f"{SORRY} The blender warranty covers the motor. {ELSE}")],
     [set(), {"i'm sorry to hear that", ELSE.lower().rstrip("?")}]),
    ("unique replies give nothing",
     [("c1", 1, "Your parcel is with the courier and arrives on time."),
      ("c2", 1, "The blender warranty covers the motor for two years."),
      ("c3", 1, "Resetting the password sends a link to your inbox.")],
     [set(), set(), set()]),
    ("names, digits and e-mail addresses never enter a phrase",
     [("c1", 1, "Hi Anna, thanks for waiting so patiently today. Code 4471 works until noon."),
      ("c2", 1, "Hi Anna, thanks for waiting so patiently today. Code 9902 works until noon."),
      ("c3", 1, "Write to help@shop.example and we answer within a single day.")],
     [set(), {"thanks for waiting so patiently today"}, set()]),
]


@pytest.mark.parametrize("name,steps,expected", STOCK_CASES, ids=[c[0] for c in STOCK_CASES])
def test_stock_phrases(name: str, steps: list[Step], expected: list[set[str]],
                       make_input: MakeInput) -> None:
    out = run(steps, make_input)
    for found, want in zip(out, expected, strict=True):
        got = {f.evidence["phrase"] for f in stock(found)}
        assert got == want
        for f in stock(found):
            assert f.evidence["conversations"] >= 2 and f.score >= 0.5
            assert not any(ch.isdigit() for ch in f.evidence["phrase"])
            assert "@" not in f.evidence["phrase"] and "anna" not in f.evidence["phrase"]


def test_stock_phrase_span_and_late_counts(make_input: MakeInput) -> None:
    steps = [("c1", 1, f"{SORRY} Your parcel is with the courier."),
             ("c1", 3, f"{SORRY} The courier lost the tracking label."),
             ("c2", 1, f"Well. {SORRY} The blender warranty covers the motor.")]
    found = stock(run(steps, make_input)[2])
    assert len(found) == 1
    text = steps[2][2]
    assert found[0].span == (text.index("I'm"), text.index("that") + len("that"))
    # both earlier uses in c1 are counted once the phrase is known to be stock
    assert found[0].evidence["replies"] == 3 and found[0].evidence["share"] == 1.0


NEAR_BASE = ("Your replacement card was ordered today and should arrive by post within a few "
             "working days, please activate it in the app")
# (name, earlier reply and its conversation, new reply, min score or None for no finding)
NEAR_CASES: list[tuple[str, str, str, float | None]] = [
    ("exact copy in another conversation", "c1", NEAR_BASE, 0.9),
    ("one word changed", "c1", NEAR_BASE.replace("today", "yesterday"), 0.6),
    ("same conversation is not compared", "c2", NEAR_BASE, None),
    ("paraphrase with different content", "c1",
     "We approved the exchange of the jacket, and a larger size leaves our warehouse soon", None),
    ("too short to compare", "c1", "Thanks a lot!", None),
]


@pytest.mark.parametrize("name,conv,text,min_score", NEAR_CASES, ids=[c[0] for c in NEAR_CASES])
def test_near_duplicates(name: str, conv: str, text: str, min_score: float | None,
                         make_input: MakeInput) -> None:
    first = "Thanks a lot!" if text == "Thanks a lot!" else NEAR_BASE
    out = run([(conv, 1, first), ("c2", 2, text)], make_input)
    found = labelled(out[1], "near_duplicate")
    if min_score is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].score >= min_score
        assert found[0].evidence["conversation_id"] == "c1" and found[0].evidence["turn"] == 1


def _steps(n: int) -> list[Step]:
    opener = ["I'm sorry to hear that.", "Thank you for reaching out to us today.", ""]
    bodies = ["Your parcel is with the courier.", "The blender warranty covers the motor.",
              "We can reset the password by e-mail.", "Refunds reach the card in a week."]
    return [(f"c{i % 7}", i, f"{opener[i % 3]} {bodies[i % 4]} Item {i} ships soon.".strip())
            for i in range(n)]


@pytest.mark.parametrize("batch,bots", [(4, 1), (16, 1), (60, 1), (16, 2), (60, 3)])
def test_batch_equals_one_by_one(batch: int, bots: int, make_input: MakeInput) -> None:
    steps = _steps(60)
    one = run(steps, make_input, batch=1, detector=RepetitionDetector(min_window=5), bots=bots)
    many = run(steps, make_input, batch=batch, detector=RepetitionDetector(min_window=5),
               bots=bots)
    assert one == many
    assert sum(len(stock(f)) for f in one) > 10


def test_a_failing_batch_leaves_no_half_state(make_input: MakeInput,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """If a batch raises midway, the next batch starts from the last stored state, not from
    the half-updated working copy."""
    steps = _steps(12)
    ref_store = DictStateStore()
    ref = run(steps[:4] + steps[8:], make_input, store=ref_store)
    store = DictStateStore()
    det = RepetitionDetector()
    items = [make_input(c, t, x, store, seconds=i) for i, (c, t, x) in enumerate(steps)]
    det.score(items[:4])
    real = det._score_one

    def flaky(item: ScoringInput, st: object) -> list[Finding]:
        if item.turn.turn == 6:
            raise RuntimeError("boom")
        return real(item, st)  # type: ignore[arg-type]

    monkeypatch.setattr(det, "_score_one", flaky)
    with pytest.raises(RuntimeError):
        det.score(items[4:8])
    monkeypatch.undo()
    later = det.score(items[8:])
    assert later == ref[4:]


def test_state_json_round_trip_like_a_faust_table(make_input: MakeInput) -> None:
    """A worker restarts from the table's changelog: JSON text in, same findings out."""
    steps = _steps(60)
    ref = run(steps, make_input, detector=RepetitionDetector(min_window=5))
    store = DictStateStore()
    first = run(steps[:30], make_input, detector=RepetitionDetector(min_window=5), store=store)
    key = state_key(make_input("c", 0, "x", bot="shopbot").turn)
    text = json.dumps(store.get(key))
    restored = DictStateStore()
    restored.set(key, json.loads(text))
    rest = RepetitionDetector(min_window=5)  # a fresh worker: nothing cached
    items = [make_input(c, t, x, restored, seconds=30 + i)
             for i, (c, t, x) in enumerate(steps[30:])]
    second = [rest.score([it])[0] for it in items]
    assert first + second == ref
    assert json.loads(json.dumps(restored.get(key))) == restored.get(key)


def test_redelivered_turn_is_not_counted_twice(make_input: MakeInput) -> None:
    store = DictStateStore()
    det = RepetitionDetector()
    det.score([make_input("c1", 1, f"{SORRY} Your parcel is with the courier.", store)])
    again = det.score([make_input("c1", 1, f"{SORRY} Your parcel is with the courier.", store)])
    window = labelled(again[0], "window")[0]
    assert window.evidence["replies"] == 1
    assert stock(again[0]) == []


def test_bots_and_tenants_are_separate(make_input: MakeInput) -> None:
    store = DictStateStore()
    det = RepetitionDetector()
    det.score([make_input("c1", 1, f"{SORRY} Parcel one.", store, bot="a")])
    other_bot = det.score([make_input("c2", 1, f"{SORRY} Parcel two.", store, bot="b")])
    other_tenant = det.score([make_input("c3", 1, f"{SORRY} Parcel 3.", store, bot="a",
                                         tenant="t2")])
    same = det.score([make_input("c4", 1, f"{SORRY} Parcel four.", store, bot="a")])
    assert stock(other_bot[0]) == []
    assert stock(other_tenant[0]) == []
    assert len(stock(same[0])) == 1


def test_without_a_state_store_a_private_store_is_used(make_input: MakeInput) -> None:
    det = RepetitionDetector()
    det.score([make_input("c1", 1, f"{SORRY} Parcel one.", None)])
    out = det.score([make_input("c2", 1, f"{SORRY} Parcel two.", None)])
    assert len(stock(out[0])) == 1


def test_window_metrics_on_a_hand_computed_case(make_input: MakeInput) -> None:
    steps = [("c1", 1, "hello there my friend"), ("c2", 1, "hello there my buddy"),
             ("c3", 1, "good morning my friend"), ("c4", 1, "hello there my friend")]
    ev = labelled(run(steps, make_input)[-1], "window")[0].evidence
    assert ev["replies"] == 4
    assert ev["distinct_1"] == pytest.approx(7 / 16, abs=0.01)  # 7 words of 16
    assert ev["distinct_2"] == pytest.approx(6 / 12, abs=0.01)  # 6 bigrams of 12
    assert ev["top_opener_share"] == pytest.approx(3 / 4)  # "hello there my" x3
    assert ev["near_duplicate_share"] == pytest.approx(2 / 4)  # c4 and, retroactively, c1
    assert ev["template_share"] == 0.0  # one-sentence replies have no sequence
    ratio = ev["compression_ratio"]
    score = labelled(run(steps, make_input)[-1], "window")[0].score
    want = 1 - (0.5 + min(1.0, 1 / ratio) + 0.25 + 0.5) / 4
    assert score == pytest.approx(want, abs=1e-3)


def test_compression_ratio_rises_with_repetition(make_input: MakeInput) -> None:
    same = [(f"c{i}", 1, "Thanks for your patience while we check the order status.")
            for i in range(30)]
    varied = [(f"c{i}", 1, " ".join(w for w in WORDS[i * 7: i * 7 + 7])) for i in range(30)]
    r_same = labelled(run(same, make_input)[-1], "window")[0].evidence["compression_ratio"]
    r_varied = labelled(run(varied, make_input)[-1], "window")[0].evidence["compression_ratio"]
    assert r_same > 3.0 and r_varied < 1.3


def test_window_expires_by_count_and_by_time(make_input: MakeInput) -> None:
    det = RepetitionDetector(max_replies=5, window_days=1.0)
    store = DictStateStore()
    for i in range(8):
        det.score([make_input(f"c{i}", 1, f"Reply number {i} here.", store, seconds=i)])
    out = det.score([make_input("c9", 1, "Later reply.", store, seconds=3 * 86400)])
    assert labelled(out[0], "window")[0].evidence["replies"] == 1
    out = det.score([make_input("c10", 1, "Another one.", store, seconds=3 * 86400 + 1)])
    assert labelled(out[0], "window")[0].evidence["replies"] == 2


def test_template_sequence_flags_the_dominant_sequence(make_input: MakeInput) -> None:
    steps = [(f"c{i}", 1, f"{SORRY} Item {WORDS[i]} is out of stock. Anything else?")
             for i in range(25)]
    steps.append(("c99", 1, "The item is out of stock."))  # one sentence: no sequence
    out = run(steps, make_input, detector=RepetitionDetector(min_window=20))
    assert labelled(out[10], "template_sequence") == []  # window too small yet
    hit = labelled(out[24], "template_sequence")
    assert len(hit) == 1 and hit[0].evidence["sequence"] == "apology>info>closing"
    assert hit[0].score == pytest.approx(1.0)
    assert labelled(out[25], "template_sequence") == []


@pytest.mark.parametrize("text,sequence", [
    ("I'm so sorry. You should restart the router. Does that work?",
     ("apology", "advice", "question")),
    ("That sounds frustrating. The fee is waived. Hope this helps!",
     ("acknowledgement", "info", "closing")),
    ("Let me look into it. I'll check the order.", ("offer",)),
])
def test_sentence_functions(text: str, sequence: tuple[str, ...]) -> None:
    assert analyse(text).sequence == sequence


def test_state_stays_bounded(make_input: MakeInput) -> None:
    """20,000 replies at the default options, each with random words (filling the candidate
    LRU) and half with one of 1,500 recurring sentences (filling the stock phrase table): the
    JSON state a faust Table would hold stays under 1 MB (Kafka's default message size) and
    stops growing once the window is full."""
    rng = random.Random(5)
    recurring = [" ".join(rng.choices(WORDS, k=6)).capitalize() + "." for _ in range(1500)]
    det = RepetitionDetector()
    store = DictStateStore()
    sizes = []
    for start in range(0, 20_000, 1000):
        items = []
        for i in range(start, start + 1000):
            text = " ".join(rng.choices(WORDS, k=9)).capitalize() + "."
            if rng.random() < 0.5:
                text = f"{rng.choice(recurring)} {text}"
            items.append(make_input(f"conversation-{i % 977:06d}", i, text, store, seconds=i))
        det.score(items)
        sizes.append(len(json.dumps(store.get(state_key(items[0].turn)))))
    assert max(sizes) < 1_000_000
    assert sizes[-1] <= 1.1 * sizes[4]  # 5,000 replies in: the window is long full


def test_bad_options_are_rejected() -> None:
    with pytest.raises(ValueError):
        RepetitionDetector(num_perm=30, bands=16)


def test_stable_across_processes() -> None:
    """Keys must not depend on Python's per-process hash salt (state outlives a worker)."""
    a = analyse("Thank you for reaching out to us today.")
    assert a.opener == analyse("Thank you for reaching out to us today.").opener
    assert int(a.tokens[0]) == zlib.crc32(b"thank")


_WORD_LIST = ("parcel courier blender warranty motor password inbox refund card jacket size "
         "warehouse router modem invoice receipt balance account login browser laptop screen "
         "battery charger cable socket kettle toaster oven fridge freezer drawer shelf sofa "
         "mattress pillow blanket curtain lamp bulb switch socket plug heater boiler radiator "
         "valve pipe tap sink shower towel mirror brush comb razor blade scissors needle thread "
         "button zipper collar sleeve pocket hood scarf glove sock shoe boot sandal heel lace "
         "sole buckle strap wallet purse backpack suitcase trolley ticket seat aisle window "
         "platform station journey route timetable delay transfer voucher coupon discount "
         "bundle plan tariff upgrade contract notice deposit mortgage loan savings pension "
         "premium claim policy quote excess cover renewal garden hedge fence gate path lawn "
         "mower rake spade hose sprinkler pond pump filter gravel brick tile grout plaster "
         "paint roller ladder drill screw nail hammer wrench clamp glue tape sander varnish"
              )
WORDS = tuple(_WORD_LIST.split())


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.text[:40])
def test_examples_hold(example: Example) -> None:
    from pipeline.policy import threshold
    from pipeline.scoring.suite import simple_input

    det = RepetitionDetector()  # no state store: the detector keeps its own, across calls
    det.score([simple_input(t, conversation_id=f"earlier-{j}")
               for j, t in enumerate(example.preceded_by)])
    (found,) = det.score([simple_input(example.text, prompt=example.prompt)])
    # a label the shipped policy never flags (threshold above 1) is a measurement: "fires"
    # means the finding is there, as in tests/test_registry.py
    got = {f.label for f in found if f.score >= threshold(f.label) or threshold(f.label) > 1}
    assert example.expect <= got and not example.absent & got
    assert {f.label for f in found} >= {"repetition.window"}


def test_state_from_other_sketch_options_starts_afresh(make_input: MakeInput) -> None:
    store = DictStateStore()
    RepetitionDetector(num_perm=32).score([make_input("c1", 1, f"{SORRY} Parcel one.", store)])
    out = RepetitionDetector(num_perm=64).score([make_input("c2", 1, f"{SORRY} Two.", store)])
    assert labelled(out[0], "window")[0].evidence["replies"] == 1
    out = RepetitionDetector(num_perm=64).score([make_input("c3", 1, f"{SORRY} Three.", store)])
    assert labelled(out[0], "window")[0].evidence["replies"] == 2
    assert len(stock(out[0])) == 1


def test_incremental_state_snapshots_match_a_full_encoding(make_input: MakeInput) -> None:
    """The stored state is re-encoded only where phrases changed: each snapshot equals the
    state decoded and encoded afresh, and a snapshot already handed out never changes."""
    from detectors.repetition.state import BotState

    steps = _steps(90)
    store = DictStateStore()
    det = RepetitionDetector(min_window=5, max_phrases=12)  # small cap: phrases get dropped
    key = state_key(make_input("c", 0, "x").turn)
    snapshots = []
    for i in range(0, len(steps), 10):
        run(steps[i: i + 10], make_input, detector=det, store=store)
        value = store.get(key)
        snapshots.append((value, json.dumps(value, sort_keys=True)))
        live = det._cache[(id(store), key)][1].phrases.stock
        full = {str(k): {"b": [[b, c[0], c[1]] for b, c in v["b"].items()], "rc": v["rc"]}
                for k, v in live.items()}
        assert value["phrases"]["stock"] == full and full
        fresh = BotState.from_json(det.cfg, json.loads(json.dumps(value))).to_json()
        assert fresh["phrases"]["stock"] == full
    for value, text in snapshots:
        assert json.dumps(value, sort_keys=True) == text
