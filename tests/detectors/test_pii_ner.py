"""The PII detector's named entities from the shared encoder (model="encoder", the default):
token states from the very pass that makes the vector, the head's spans, and Presidio taking
them as its NER; spaCy still selectable with ``model=``."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import regex as re

from detectors.base import Context, ScoringInput, Turn
from detectors.features import TOKEN_STATES, SentenceEncoder, shared_encoder
from detectors.pii.detector import SPACY_MODEL, PiiDetector
from detectors.pii.ner import N_LEXICAL, TAGS, NerHead, decode
from pipeline.scoring.suite import DetectorSuite

TS = datetime(2026, 1, 1, tzinfo=UTC)
# Written for this test (not from any training template or evaluation set).
TEXTS = (
    "Hello, this is Wiremu Tane calling about my broadband in Rotorua.",
    "my grandmother ewa kowalczyk can't read the small print on the bill",
    "The Premium plan is 14.99 a month and Netflix is included.",
    "Go to Settings, then Billing, and tap Update card.",
    "We flew from Cusco to Lima and the app stopped syncing.",
    "Thanks Ilona, the replacement arrives Thursday between 9 and 11.",
)


def _named(pii: PiiDetector, text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in pii.analyze([text], 0.5)[0]:
        if r.entity_type in ("PERSON", "LOCATION"):
            out.setdefault(r.entity_type, []).append(text[r.start:r.end])
    return {k: sorted(v) for k, v in out.items()}


def test_names_and_places_on_hand_written_turns(pii: PiiDetector) -> None:
    found = [_named(pii, t) for t in TEXTS]
    assert found[0] == {"PERSON": ["Wiremu Tane"], "LOCATION": ["Rotorua"]}
    assert found[1] == {"PERSON": ["ewa kowalczyk"]}  # lower case: the words, not capitals
    assert found[2] == {} and found[3] == {}  # prices, plans, menus: no name
    assert found[4] == {"LOCATION": ["Cusco", "Lima"]}  # sorted
    assert found[5] == {"PERSON": ["Ilona"]}


def test_head_spans_reach_presidio_with_their_scores(pii: PiiDetector) -> None:
    text = TEXTS[0]
    spans = pii.entity_spans([text])[0]
    assert {(text[s:e], ent) for s, e, ent, _ in spans} >= {("Wiremu Tane", "PERSON"),
                                                           ("Rotorua", "LOCATION")}
    results = pii.analyze([text], 0.05)[0]
    ner = [r for r in results if r.recognition_metadata.get("recognizer_name") == "SpacyRecognizer"]
    head = {(s, e): sc for s, e, _, sc in spans}
    assert ner and all((r.start, r.end) in head for r in ner)
    # Presidio's context words may raise a score, never lower it
    assert all(r.score >= head[(r.start, r.end)] - 1e-9 for r in ner)


def test_token_states_come_from_the_vector_pass_and_do_not_depend_on_the_batch() -> None:
    enc = SentenceEncoder(backend="onnx-int8", cache_size=0)
    long = "The parcel for Ayesha went to Karachi instead. " * 60  # past one window
    texts = [TEXTS[0], long, "", TEXTS[4]]
    alone = [enc.encode([t])[0] for t in texts]
    vecs, states = enc.encode_with_states(texts, texts)
    assert all(np.array_equal(v, a) for v, a in zip(vecs, alone, strict=True))
    again = enc.token_states([TEXTS[4], "other text", TEXTS[0]])
    assert np.array_equal(again[2].states, states[0].states)
    assert np.array_equal(again[0].states, states[3].states)
    st = states[1]
    assert st.states.shape[0] == st.offsets.shape[0] == st.words.shape[0] > 254
    assert np.all(np.diff(st.offsets[:, 0]) >= 0) and st.offsets[-1, 1] <= len(long)
    assert states[2].states.shape == (0, SentenceEncoder.dim)


def test_pipeline_features_carry_the_states_the_detector_would_compute(pii: PiiDetector) -> None:
    suite = DetectorSuite([pii], encoder=shared_encoder("onnx-int8"))
    turn = Turn("c", 0, "user", TEXTS[1], TS, lang="en")
    featured = suite.features.add([ScoringInput(turn, Context())])[0]
    st = featured.context.features[TOKEN_STATES]
    own = SentenceEncoder(backend="onnx-int8", cache_size=0).token_states([TEXTS[1]])[0]
    assert np.array_equal(st.states, own.states)
    with_states = pii.score([featured])[0]
    without = pii.score([ScoringInput(turn, Context())])[0]
    assert [(f.label, f.span, f.score) for f in with_states] == \
        [(f.label, f.span, f.score) for f in without]


def test_decode_runs_and_punctuation() -> None:
    text = "Ana Lima , Porto"
    words = [(0, 3), (4, 8), (9, 10), (11, 16)]
    p = np.zeros((4, len(TAGS)))
    p[0, 1] = p[1, 2] = 0.9  # B-PERSON, I-PERSON
    p[2, 2] = 0.5  # a comma inside the run: trimmed, never a span end
    p[3, 3] = 0.8  # B-LOCATION
    p[:, 0] = 1 - p[:, 1:].sum(1)
    assert decode(text, words, p) == [(0, 8, "PERSON", 0.9), (11, 16, "LOCATION", 0.8)]
    p2 = p.copy()
    p2[1] = [0.1, 0.9, 0, 0, 0]  # a second B- starts a second name
    assert [s[:2] for s in decode(text, words, p2)] == [(0, 3), (4, 8), (11, 16)]


def test_head_file_matches_the_encoder() -> None:
    head = NerHead()
    assert head.w1.shape[0] == 3 * SentenceEncoder.dim + N_LEXICAL and head.w2.shape[1] == len(TAGS)


def test_spacy_stays_selectable() -> None:
    det = PiiDetector(model=SPACY_MODEL, cache_size=0)
    det.load()
    assert det.features == frozenset() and not det.runs_apart
    found = det.analyze(["My name is Maria Gonzalez."], 0.5)[0]
    assert [r.entity_type for r in found] == ["PERSON"]


def test_other_language_turns_keep_head_spans_redacted_but_unflagged(pii: PiiDetector) -> None:
    text = "Vielen Dank, Frau Schneider, wir melden uns morgen aus Hamburg."
    found = {}
    for lang in ("de", "en", None):
        turn = Turn("c", 0, "assistant", text, TS, lang=lang)
        found[lang] = [f for f in pii.score([ScoringInput(turn, Context())])[0]
                       if f.label in ("pii.person", "pii.location")]
    assert found["de"] and all(f.score < 0.5 for f in found["de"])  # still stored redacted
    assert [f.span for f in found["de"]] == [f.span for f in found["en"]]
    assert any(f.score >= 0.5 for f in found["en"])  # English (or unknown): as scored
    assert [(f.span, f.score) for f in found[None]] == [(f.span, f.score) for f in found["en"]]


def test_a_lone_place_keeps_its_score_only_when_the_head_is_sure_of_it_or_the_list_holds_it(
) -> None:
    """A one-word place with no cue before it drops below the flagging cut (spaCy's fixed 0.85
    tagged surnames and companies as places), unless the NER scored it CONFIDENT_PLACE or more,
    as the encoder head does for a place it reads from context, or the place list holds it; a
    cued place is never demoted."""
    from presidio_analyzer import RecognizerResult

    from detectors.pii.postprocess import CONFIDENT_PLACE, DEMOTED_SCORE, demote_lone_places

    def place(text: str, word: str, score: float) -> RecognizerResult:
        start = text.index(word)
        return RecognizerResult("LOCATION", start, start + len(word), score,
                                recognition_metadata={"recognizer_name": "SpacyRecognizer"})

    text = "does the rail pass cover Brackenfold as well"  # a made-up town, in no list
    sure, spacy, doubtful = (place(text, "Brackenfold", s) for s in (0.97, 0.85, 0.6))
    assert demote_lone_places(text, [sure])[0].score == 0.97 >= CONFIDENT_PLACE
    assert demote_lone_places(text, [spacy])[0].score == DEMOTED_SCORE
    assert demote_lone_places(text, [doubtful])[0].score == DEMOTED_SCORE
    listed = "does the rail pass cover Stavanger as well"
    assert demote_lone_places(listed, [place(listed, "Stavanger", 0.6)])[0].score == 0.6
    cued = "the parcel is stuck in Brackenfold"
    assert demote_lone_places(cued, [place(cued, "Brackenfold", 0.6)])[0].score == 0.6


def test_place_list_marks_whole_place_names_whatever_their_case() -> None:
    """The head's place feature: every word of a listed name of up to PLACE_WORDS tokenizer
    words, case ignored, the longest name first; words of no listed name stay unmarked."""
    from detectors.pii.ner import in_place_list, places

    def marked(text: str) -> list[str]:
        words = [(m.start(), m.end()) for m in re.finditer(r"\w+|[^\w\s]", text)]
        return [text[s:e] for (s, e), hit in zip(words, in_place_list(text, words), strict=True)
                if hit]

    assert len(places()) > 50_000
    assert marked("we're a small team out of Wagga Wagga") == ["Wagga", "Wagga"]
    assert marked("i moved to sligo in june") == ["sligo"]
    assert marked("invoice from Cluj-Napoca please") == ["Cluj", "-", "Napoca"]
    assert marked("the Brackenfold depot shut on Friday") == []


def test_merged_head_gives_the_mean_of_its_members_logits() -> None:
    """pipeline/training/pii_ner.merge: one head whose logits are the members' mean, each
    member's input scaling folded in (random members, so no shipped number is assumed)."""
    from pipeline.training.pii_ner import merge

    rng = np.random.default_rng(3)

    def member() -> dict[str, np.ndarray]:
        return {"w1": rng.normal(size=(7, 4)).astype(np.float32),
                "b1": rng.normal(size=4).astype(np.float32),
                "w2": rng.normal(size=(4, 5)).astype(np.float32),
                "b2": rng.normal(size=5).astype(np.float32),
                "mean": rng.normal(size=7).astype(np.float32),
                "scale": rng.uniform(0.5, 2.0, size=7).astype(np.float32)}

    def logits(h: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
        z = np.maximum((x - h["mean"]) / h["scale"] @ h["w1"] + h["b1"], 0.0)
        return np.asarray(z @ h["w2"] + h["b2"])

    heads = [member() for _ in range(3)]
    x = rng.normal(size=(6, 7)).astype(np.float32)
    want = np.mean([logits(h, x) for h in heads], axis=0)
    assert np.allclose(logits(merge(heads), x), want, atol=1e-4)
    assert not np.allclose(logits(heads[0], x), want, atol=1e-2)


def test_a_full_name_that_is_a_listed_place_is_a_place() -> None:
    """Two words or more that the place list holds whole ("Milton Keynes") are a place, even
    where the given-name recognizer read a name and a surname; one word alone ("Adams") is left
    to the NER, since surnames are towns too."""
    from presidio_analyzer import RecognizerResult

    from detectors.pii.postprocess import listed_places

    def found(text: str, words: str, entity: str, recognizer: str) -> RecognizerResult:
        start = text.index(words)
        return RecognizerResult(entity, start, start + len(words), 0.6,
                                recognition_metadata={"recognizer_name": recognizer})

    text = "is the gym in Milton Keynes open on Sunday"
    out = listed_places(text, [found(text, "Milton Keynes", "PERSON", "GivenNameRecognizer")])
    assert [(r.entity_type, text[r.start:r.end]) for r in out] == [("LOCATION", "Milton Keynes")]
    both = [found(text, "Milton Keynes", "LOCATION", "SpacyRecognizer"),
            found(text, "Milton Keynes", "PERSON", "GivenNameRecognizer")]
    assert [r.entity_type for r in listed_places(text, both)] == ["LOCATION"]
    alone = "ask Adams in billing"
    assert listed_places(alone, [found(alone, "Adams", "PERSON", "SpacyRecognizer")]
                         )[0].entity_type == "PERSON"
    person = "ask Maria Gonzalez in billing"
    assert listed_places(person, [found(person, "Maria Gonzalez", "PERSON", "SpacyRecognizer")]
                         )[0].entity_type == "PERSON"


def test_surface_features_per_word() -> None:
    """The head's per-word surface features, column by column, on a text written for this test:
    capitalised, all caps, digit, letters only, sentence start, given name, capitalised
    neighbours, a line break before it, listed place."""
    from detectors.pii.ner import _lexical

    text = "ok. ANNA lives in\n  Sligo , flat 3B!  zorblat"
    words = [(m.start(), m.end()) for m in re.finditer(r"\w+|[^\w\s]", text)]
    got = {text[s:e]: row for (s, e), row in zip(words, _lexical(text, words), strict=True)}
    assert _lexical(text, []).shape == (0, N_LEXICAL)
    assert got["ok"].tolist() == [0, 0, 0, 1, 1, 0, 0, 0, 0, 0]  # the text's start
    # after "." and a space; Anna is a town too (the place list)
    assert got["ANNA"].tolist() == [1, 1, 0, 1, 1, 1, 0, 0, 0, 1]
    assert got["lives"].tolist() == [0, 0, 0, 1, 0, 0, 1, 0, 0, 0]
    assert got["Sligo"].tolist() == [1, 0, 0, 1, 0, 0, 0, 0, 1, 1]  # after "in", a line break
    assert got["3B"].tolist() == [0, 1, 1, 0, 0, 0, 0, 0, 0, 0]  # no capital first, all caps
    assert got["zorblat"].tolist() == [0, 0, 0, 1, 1, 0, 0, 0, 0, 0]  # after "!" and spaces


def test_presidio_gets_lower_case_forms_as_lemmas_and_its_own_keywords(pii: PiiDetector) -> None:
    """The engine hands Presidio each token's lower-case form as its lemma (its context words
    are matched against lemmas), the tokens' offsets, and the keywords Presidio derives from
    those lemmas (stop words and punctuation left out), asked twice: the second time from the
    engine's memory of each word."""
    engine = pii._engine.analyzer.nlp_engine
    text = "Please CALL me at Home, my Address is 12 Rowan Way: thanks!"
    doc = engine.nlp["en"](text)
    vocab = doc.vocab
    lower = [t.lower_ for t in doc]
    keywords = [w for w in lower if not vocab[w].is_stop and not vocab[w].is_punct
                and w not in ("-PRON-", "be")]
    assert keywords == ["home", "address", "12", "rowan", "way", "thanks"]
    for _ in range(2):
        art = engine.process_text(text, "en")
        assert art.lemmas == lower
        assert art.tokens_indices == [t.idx for t in doc]
        assert art.keywords == keywords


def test_a_head_file_with_input_scaling_is_scaled_and_the_shipped_one_is_folded(
        tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A head saved with its own feature mean and scale applies them; the shipped head has
    them folded into its weights (mean 0, scale 1), so it reads the features as they are."""
    rng = np.random.default_rng(5)
    h = {"w1": rng.normal(size=(6, 3)).astype(np.float32),
         "b1": rng.normal(size=3).astype(np.float32),
         "w2": rng.normal(size=(3, len(TAGS))).astype(np.float32),
         "b2": rng.normal(size=len(TAGS)).astype(np.float32),
         "mean": rng.normal(size=6).astype(np.float32),
         "scale": rng.uniform(0.5, 2.0, size=6).astype(np.float32)}
    np.savez(tmp_path / "head.npz", **h)
    x = rng.normal(size=(4, 6)).astype(np.float32)
    z = np.maximum((x - h["mean"]) / h["scale"] @ h["w1"] + h["b1"], 0.0) @ h["w2"] + h["b2"]
    want = np.exp(z - z.max(axis=1, keepdims=True))
    want /= want.sum(axis=1, keepdims=True)
    assert np.allclose(NerHead(tmp_path / "head.npz").probabilities(x), want, atol=1e-6)
    shipped = NerHead()
    assert not shipped.mean.any() and (shipped.scale == 1).all()
