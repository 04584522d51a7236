"""The offline toxicity backend (profanity-check + LR heads on the shared MiniLM embedding).

Table-driven: positives, near misses (identity terms and violent words in helpful replies) and
turns with several hits. Flags use the shipped policy thresholds, as the pipeline does.
"""

from __future__ import annotations

import pytest

from detectors.base import DetectorError
from detectors.toxicity.detector import EXAMPLES, LABELS, ToxicityDetector
from pipeline.policy import threshold
from pipeline.scoring.suite import DetectorSuite, simple_input


@pytest.fixture(scope="module")
def suite() -> DetectorSuite:
    s = DetectorSuite([ToxicityDetector(min_score=0.0)])
    s.load()
    return s


def scores_of(suite: DetectorSuite, text: str, role: str = "assistant") -> dict[str, float]:
    result = suite.score([simple_input(text, role=role)])
    assert not result.failures, result.failures
    return {f.label.split(".", 1)[1]: f.score for f in result.findings[0]}


def flagged(scores: dict[str, float]) -> set[str]:
    return {lab for lab, s in scores.items() if s >= threshold(f"toxicity.{lab}")}


POSITIVES = [
    ("You are a worthless idiot and nobody wants to help you.", {"toxicity", "insult"}),
    ("Shut up, you brainless moron.", {"toxicity", "insult"}),
    ("I know where you live and I will hurt you.", {"toxicity", "threat"}),
    ("This fucking update is total shit.", {"toxicity", "obscene"}),
    ("Immigrants are criminals and should be thrown out of the country.",
     {"toxicity", "identity_attack"}),
    ("Women are too emotional to be trusted with important decisions.", {"toxicity"}),
    # An implicit threat with no violent verb aimed at "you": a known miss until the n-gram
    # stage (the embedding and profanity inputs alone scored it under 0.5).
    ("Keep complaining and you'll end up in a hospital.", {"threat"}),
]

NEAR_MISSES = [
    "I am a gay man looking for a refund.",
    "As a Muslim traveller you can pre-order a halal meal.",
    "Our Black-owned partner bakery delivers on Sundays.",
    "Trans and non-binary customers can update their name on the account page.",
    "The Jewish holiday schedule is shown on the delivery calendar.",
    "Wheelchair users can ask for assistance at gate B12.",
    "You can kill the process in the task manager and restart the app.",
    "The thriller is about a detective hunting a killer.",
    "I'm sorry, I was wrong about the delivery date; here is the correct one.",
    "Many immigrants open accounts with us using only a passport.",
]

MULTIPLE = [
    ("You stupid fucking idiot, I hope you choke.", {"toxicity", "insult", "obscene"}),
    ("Shut up, you filthy idiot; people like you are a disease.", {"toxicity", "insult"}),
]


@pytest.mark.parametrize(("text", "expected"), POSITIVES + MULTIPLE)
def test_positives_fire_their_labels(suite: DetectorSuite, text: str, expected: set[str]) -> None:
    got = flagged(scores_of(suite, text))
    assert expected <= got, f"missing {expected - got}"


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_do_not_fire(suite: DetectorSuite, text: str) -> None:
    got = flagged(scores_of(suite, text))
    assert not got, f"false positive {got}"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.text[:30])
def test_examples(suite: DetectorSuite, example) -> None:  # type: ignore[no-untyped-def]
    got = {f"toxicity.{lab}" for lab in flagged(scores_of(suite, example.text))}
    assert example.expect <= got and not (example.absent & got)


def test_all_labels_scored_in_range_with_explained_evidence(suite: DetectorSuite) -> None:
    text = "Thanks for waiting. This fucking printer jammed again, sorry."
    result = suite.score([simple_input(text)])
    found = {f.label: f for f in result.findings[0]}
    assert set(found) == {f"toxicity.{lab}" for lab in LABELS}
    for f in found.values():
        assert 0.0 <= f.score <= 1.0
        assert f.evidence["backend"] == "offline" and "component" in f.evidence
        assert "chunk" in f.evidence or f.evidence["component"] == "derived"
        assert not any(isinstance(v, str) and "fucking" in v for v in f.evidence.values())
    obscene = found["toxicity.obscene"]
    s, e = obscene.evidence["cue_span"]
    assert text[s:e].lower() == "fucking"  # offsets point at the cue; the word is not stored
    assert obscene.evidence["chunk"] == 1  # the second sentence


def test_long_turn_cue_found_in_late_sentence(suite: DetectorSuite) -> None:
    filler = " ".join(f"Step {i}: open the settings page and check the option." for i in range(40))
    text = filler + " This is complete bullshit."
    scores = scores_of(suite, text)
    assert scores["obscene"] >= threshold("toxicity.obscene")
    result = suite.score([simple_input(text)])
    ev = {f.label: f.evidence for f in result.findings[0]}["toxicity.obscene"]
    assert ev["chunk"] == 40  # the 41st sentence, past the embedding's 256 word pieces
    s, e = ev["cue_span"]
    assert text[s:e] == "bullshit"


def test_min_score_drops_negligible_findings() -> None:
    s = DetectorSuite([ToxicityDetector(min_score=0.5)])
    out = s.score([simple_input("Your parcel arrives tomorrow morning.")])
    assert out.findings == [[]]


def test_user_turns_only_when_asked() -> None:
    assert ToxicityDetector().roles == frozenset({"assistant"})
    assert ToxicityDetector(include_user=True).roles == frozenset({"assistant", "user"})


def test_without_shared_embedding_is_a_clear_error() -> None:
    det = ToxicityDetector()
    with pytest.raises(DetectorError, match="embedding"):
        det.score([simple_input("hello")])


def test_bad_options_rejected() -> None:
    with pytest.raises(DetectorError):
        ToxicityDetector(min_score=2.0)


def test_lexical_ngrams_drive_and_point_at_their_cue(suite: DetectorSuite) -> None:
    text = "Honestly, you are a pathetic moron."
    result = suite.score([simple_input(text)])
    ev = {f.label: f.evidence for f in result.findings[0]}["toxicity.insult"]
    assert {"logit_embedding", "logit_profanity", "logit_slur", "logit_lexical"} <= set(ev)
    from detectors.toxicity.offline import OfflineToxicity

    model = OfflineToxicity()
    model.load()
    s, e = model.lexical.top_cue(text, 0)  # toxicity n-grams: the worst word
    assert text[s:e].lower() in {"moron", "pathetic"}
    logits = model.lexical.logits([text, "Your refund has been issued today."])
    assert logits.shape == (2, 2) and logits[0, 0] > logits[1, 0]


def test_cue_words_looked_up_for_a_batch_point_at_the_same_word() -> None:
    """Words looked up for a whole batch at once (``remember``) give each turn the cue it gets
    looked up alone: a word's weights do not depend on the words that came with it."""
    from detectors.toxicity.offline import LexicalNgrams

    texts = ["Honestly, you are a pathetic moron.", "what an idiot move, clown",
             "Your refund has been issued today.", "ok"]
    alone, batched = LexicalNgrams(), LexicalNgrams()
    alone.load()
    batched.load()
    batched.remember(texts)
    assert len(batched._words) >= 12  # every word of the batch, at once
    for text in texts:
        for head in (0, 1):
            assert batched.top_cue(text, head) == alone.top_cue(text, head)
    assert batched.top_cue("you pathetic moron", 0) is not None


def test_lexical_weights_must_match_the_heads(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    from detectors.toxicity.offline import LEXICAL, LexicalNgrams, OfflineToxicity

    with np.load(LEXICAL) as z:
        data = {k: z[k] for k in z.files}
    data["revision"] = np.array("ngram-other")
    other = tmp_path / "lexical.npz"
    np.savez(other, **data)
    model = OfflineToxicity()
    model.lexical = LexicalNgrams(other)
    with pytest.raises(DetectorError, match="not the one"):
        model.load()
    data["coef"] = data["coef"][:, :1]
    np.savez(other, **data)
    with pytest.raises(DetectorError, match="bad lexical weights"):
        LexicalNgrams(other).load()


def test_profanity_probabilities_match_the_shipped_calibrated_model() -> None:
    """The calibrated SVM ensemble computed as one product gives scikit-learn's own
    ``predict_proba`` numbers, bit for bit (it is only faster)."""
    import numpy as np

    from detectors.toxicity.offline import ProfanityComponent

    comp = ProfanityComponent()
    comp.load()
    sentences = ["What the hell is wrong with this damn router?", "Thanks, that fixed it.",
                 "You absolute idiot, read my message.", "", "Order 1234 ships Friday.",
                 "shit shit shit", "I'm sorry, that must be frustrating."]
    x = comp._vectorizer.transform(sentences) @ comp._keep
    expected = comp._model.predict_proba(x)[:, 1]
    got = comp.sentence_probs(sentences)
    assert np.array_equal(got, expected)
    assert got[5] > 0.9 > 0.1 > got[1]  # and they still say something


def test_lexical_cue_word_cache_gives_the_same_cue() -> None:
    """Cue look-ups keep each word's weights: a warm cache points at the same word as a cold
    one, and it is bounded."""
    from detectors.toxicity import offline as to

    texts = ["You are a pathetic idiot and everyone knows it.",
             "Those people are vermin, go back where you came from.",
             "Thanks, your refund is on its way."]
    warm, cold = to.LexicalNgrams(), to.LexicalNgrams()
    warm.load()
    cold.load()
    for head in range(len(to.LEXICAL_HEADS)):
        got = [warm.top_cue(t, head) for t in texts]
        again = [warm.top_cue(t, head) for t in texts]
        fresh = []
        for t in texts:
            cold._words.clear()
            fresh.append(cold.top_cue(t, head))
        assert got == again == fresh
    assert got[0] is not None or got[1] is not None
    assert 0 < len(warm._words) <= to._MAX_CUE_WORDS


SLUR_VARIANTS = [  # (text, strong count, ambiguous count)
    ("you f*ggot", 1, 0),
    ("FAAAGGOTS everywhere", 1, 0),
    ("go away k!kes and sp1cs", 2, 0),
    ("the fagg0t!", 1, 0),
    ("a camel-jockey, a cameljockey", 2, 0),
    ("my niggaz", 0, 1),
    ("white   trash", 0, 1),
]
SLUR_NEAR_MISSES = ["Niger is a country in West Africa.", "the spicy food", "a raccoon in a cocoon",
                    "homosexual couples are welcome", "Scunthorpe", "Pakistan", "tardy",
                    "@coon123 hi", "f a g", "he she or they"]


@pytest.mark.parametrize(("text", "strong", "ambiguous"), SLUR_VARIANTS)
def test_slur_lexicon_catches_spelling_variants(text: str, strong: int, ambiguous: int) -> None:
    from detectors.toxicity.offline import SlurLexicon

    lexicon = SlurLexicon()
    lexicon.load()
    counts, span = lexicon.find_tiers(text)
    assert counts == (strong, ambiguous)
    assert span is not None and span[1] > span[0] and not text[span[0]].isspace()


def test_slur_cue_prefers_the_strong_tier() -> None:
    from detectors.toxicity.offline import SlurLexicon

    lexicon = SlurLexicon()
    lexicon.load()
    text = "my nigga said you are a f*gg0t"
    counts, span = lexicon.find_tiers(text)
    assert counts == (1, 1) and span is not None and text[span[0] : span[1]] == "f*gg0t"
    assert lexicon.find(text) == (2, span)


@pytest.mark.parametrize("text", SLUR_NEAR_MISSES)
def test_slur_lexicon_leaves_near_misses_alone(text: str) -> None:
    from detectors.toxicity.offline import SlurLexicon

    lexicon = SlurLexicon()
    lexicon.load()
    assert lexicon.find_tiers(text) == ((0, 0), None)


def test_slur_lexicon_file_needs_known_tiers(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from detectors.toxicity.offline import SlurLexicon

    bad = tmp_path / "slurs.txt"
    bad.write_text("# comment\nword\n")
    with pytest.raises(DetectorError, match="before any"):
        SlurLexicon(bad).load()
    bad.write_text("[mild]\nword\n")
    with pytest.raises(DetectorError, match="unknown slur tier"):
        SlurLexicon(bad).load()
    bad.write_text("[strong]\nzorg\n")  # no [ambiguous] words: that tier never matches
    only = SlurLexicon(bad)
    only.load()
    assert only.find_tiers("a zorgs and a dog") == ((1, 0), (2, 7))


def test_slur_gated_embedding_term_speaks_only_with_a_slur() -> None:
    """identity_attack's second embedding direction adds to the slur part of the logit when
    the turn has a lexicon slur, and is exactly zero when it has none."""
    import numpy as np

    from detectors.toxicity.offline import HEADS, OfflineToxicity

    model = OfflineToxicity()
    model.load()
    assert model._gated is not None
    ia = HEADS.index("identity_attack")
    assert np.abs(model._gated[ia]).sum() > 0  # the shipped head has one
    emb = np.random.default_rng(0).normal(size=(2, 384)) / 20
    no_lex = np.zeros((2, 2))
    without = model.head_logits(emb, [0.5, 0.5], [(0, 0), (0, 0)], no_lex)
    with_slur = model.head_logits(emb, [0.5, 0.5], [(1, 0), (1, 0)], no_lex)
    assert np.all(without[:, :, 2] == 0.0)  # no slur: no slur part at all
    ungated = with_slur[:, ia, 2] - emb @ model._gated[ia]
    assert np.allclose(ungated, ungated[0])  # the rest of the slur part is the same for both
    assert not np.allclose(with_slur[0, ia, 2], with_slur[1, ia, 2])  # the gated term moved it


def test_slur_gated_weights_must_have_384_values(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from detectors.toxicity.offline import WEIGHTS, load_heads

    data = json.loads(WEIGHTS.read_text())
    data["heads"]["identity_attack"]["slur_gated_coef"] = [0.0] * 10
    bad = tmp_path / "heads.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(DetectorError, match="slur_gated_coef not 384"):
        load_heads(bad)
    del data["heads"]["identity_attack"]["slur_gated_coef"]  # older files: no gated term
    bad.write_text(json.dumps(data))
    assert "slur_gated_coef" not in load_heads(bad)["heads"]["identity_attack"]
