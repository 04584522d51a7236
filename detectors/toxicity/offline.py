"""The offline toxicity backend: no download, everything ships in PyPI packages or in this repo.

Two components, stacked:
- ``profanity-check`` (PyPI ``alt-profanity-check``): a TF-IDF + linear SVM model trained on
  profane text. It runs on every sentence of the turn (so long turns are fully covered) and the
  maximum is pooled; its top-weighted word in that sentence is the cue recorded as evidence.
- a logistic-regression head per label on the shared all-MiniLM-L6-v2 ``embedding`` feature plus
  the profanity logit, trained by ``pipeline/training/toxicity.py``; weights ship as
  ``detectors/toxicity/data/offline_heads.json`` (see docs/models/toxicity.md for the data).
  This is what catches implicit hate with no profane word in it.
- an identity-slur lexicon we wrote (``data/toxicity/identity_slurs.txt``), in two tiers (strong
  slurs; ambiguous or reclaimed ones), matched through plurals, stretched letters, leetspeak and
  masked vowels: log1p(count) per tier are inputs of the heads, the first slur's offsets the cue.
- hashed word (1-2) and character (2-5, within words) n-gram logistic regressions for
  ``toxicity`` and ``identity_attack`` (``data/toxicity/lexical_ngrams.npz``, same training
  script): their two logits are the last inputs of every head. They see the exact words the
  sentence embedding blurs (which slur, aimed at whom) and separate hate from mere offence better;
  the cue is the word with the largest unigram weight.

``obscene`` is the profanity-check probability of the most profane sentence that holds a word of
our vulgar-word list (``data/obscene_words.txt``) or of the slur lexicon; a sentence without one
counts at ``UNLISTED_OBSCENE`` times its probability, so it still ranks but cannot reach the
0.5 cut alone: the SVM alone called "mom", "grow", "shame", "butt of the joke" or a song named
"Sick Love" obscene (0.5-0.8) in benign replies. ``severe_toxicity`` is derived:
toxic *and* (threat, identity attack, or an obscene insult), as a product of probabilities.
The shared embedding covers the first 256 word pieces of a turn; the evidence says so
(``embedding_truncated``) when a turn is longer, instead of hiding it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from detectors.base import DetectorError

WEIGHTS = Path(__file__).parent / "data" / "offline_heads.json"
SLURS = WEIGHTS.parent / "identity_slurs.txt"
OBSCENE_WORDS = WEIGHTS.parent / "obscene_words.txt"
IDENTITY_TERMS = WEIGHTS.parent / "identity_terms.txt"
LEXICAL = WEIGHTS.parent / "lexical_ngrams.npz"
HEADS = ("toxicity", "insult", "threat", "identity_attack")
LEXICAL_HEADS = ("toxicity", "identity_attack")
SLUR_TIERS = ("strong", "ambiguous")
# Inputs of each head after the embedding: profanity logit, log1p(slurs) per tier, lexical logits.
N_EXTRA = 1 + len(SLUR_TIERS) + len(LEXICAL_HEADS)
SLUR_COLS = slice(385, 385 + len(SLUR_TIERS))
_LEX_COLS = slice(385 + len(SLUR_TIERS), 384 + N_EXTRA)
# The profanity model's own tokeniser (scikit-learn's default token pattern), for cue offsets.
_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_EMBEDDING_WORDPIECES = 256
_EPS = 1e-4
# The share of its profanity-check probability a sentence without a listed vulgar word or slur
# keeps as its obscene score: under 0.5, so such a sentence can rank but never flag alone.
UNLISTED_OBSCENE = 0.4


@dataclass(frozen=True, slots=True)
class LabelScore:
    """One label's score for one turn, with where it came from."""

    score: float
    span: tuple[int, int] | None
    evidence: dict[str, Any] = field(default_factory=dict)


def _logit(p: float) -> float:
    p = min(max(p, _EPS), 1 - _EPS)
    return math.log(p / (1 - p))


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _word_list(path: Path) -> list[str]:
    return [w.strip() for w in path.read_text().splitlines() if w.strip() and not w.startswith("#")]


class ProfanityComponent:
    """alt-profanity-check, per sentence, with the top-weighted word as the cue. Neutral identity
    terms (``identity_terms.txt``) are zeroed before scoring: naming a group is not profanity."""

    def __init__(self) -> None:
        self._vectorizer: Any = None
        self._model: Any = None
        self._weights: np.ndarray | None = None
        self._keep: Any = None  # sparse diagonal: 0 for identity-term columns, 1 elsewhere
        self._fold_coef = self._fold_intercept = self._fold_a = self._fold_b = np.zeros(0)

    def load(self) -> None:
        try:
            from profanity_check import profanity_check as pc
        except ImportError as exc:
            raise DetectorError(
                "the offline toxicity backend needs alt-profanity-check: pip install 'chatmon[nlp]'"
            ) from exc
        self._vectorizer, self._model = pc.vectorizer, pc.model
        # Mean linear-SVM weight over the calibration folds: which word pushes hardest.
        coefs = [c.estimator.coef_[0] for c in self._model.calibrated_classifiers_]
        self._weights = np.mean(coefs, axis=0)
        from scipy import sparse

        keep = np.ones(len(self._weights))
        vocab = self._vectorizer.vocabulary_
        for word in _word_list(IDENTITY_TERMS):
            if word in vocab:
                keep[vocab[word]] = 0.0
        self._keep = sparse.diags(keep, format="csr")
        self._weights = self._weights * keep
        # The calibrated ensemble as arrays (columns: folds), for sentence_probs.
        folds = self._model.calibrated_classifiers_
        self._fold_coef = np.stack([np.ravel(c.estimator.coef_) for c in folds], axis=1)
        self._fold_intercept = np.array([float(np.ravel(c.estimator.intercept_)[0]) for c in folds])
        self._fold_a = np.array([float(c.calibrators[0].a_) for c in folds])
        self._fold_b = np.array([float(c.calibrators[0].b_) for c in folds])

    def sentence_probs(self, sentences: Sequence[str]) -> np.ndarray:
        if not sentences:
            return np.zeros(0)
        x = self._vectorizer.transform(sentences) @ self._keep
        return self._calibrated(x)

    def _calibrated(self, x: Any) -> np.ndarray:
        """``CalibratedClassifierCV.predict_proba(x)[:, 1]`` of the shipped model (linear SVMs,
        sigmoid calibration, mean over folds) as one product: the same numbers without
        scikit-learn's per-call checks, a third of the toxicity detector's time per batch."""
        from scipy.special import expit

        decision = np.asarray(x @ self._fold_coef) + self._fold_intercept
        probs = expit(-(self._fold_a * decision + self._fold_b))
        probs[(probs > 1.0) & (probs <= 1.0 + 1e-5)] = 1.0
        out = np.zeros(probs.shape[0])
        for k in range(probs.shape[1]):  # fold by fold, in sklearn's order
            out += probs[:, k]
        return out / probs.shape[1]

    def top_cue(self, text: str, offset: int) -> tuple[int, int] | None:
        """Offsets (into the turn) of the word with the largest positive profanity weight."""
        assert self._weights is not None  # load() ran; internal invariant, not control flow
        vocab = self._vectorizer.vocabulary_
        best, best_w = None, 0.0
        for m in _TOKEN.finditer(text):
            idx = vocab.get(m.group().lower())
            if idx is not None and self._weights[idx] > best_w:
                best, best_w = (offset + m.start(), offset + m.end()), float(self._weights[idx])
        return best


# Leetspeak and masking characters each letter may be written as (vowels may also be "*").
_LEET = {"a": "a@4*", "e": "e3*", "i": "i1!|*", "o": "o0*", "u": "u*", "s": "s$5", "l": "l1|"}


def _slur_regex(word: str) -> str:
    """One slur as a pattern: each letter may repeat ("faaag") or be a leet/masked character;
    a space may be a space, "-", "_" or nothing."""
    parts = []
    for ch in word.lower():
        if ch.isspace() or ch == "-":
            parts.append(r"[\s_\-]*")
        elif ch.isalpha():
            parts.append(f"[{re.escape(_LEET.get(ch, ch))}]+")
        else:
            parts.append(re.escape(ch))
    return "".join(parts)


def read_slurs(path: Path) -> dict[str, list[str]]:
    """The lexicon file: ``[tier]`` section lines, then one slur per line."""
    tiers: dict[str, list[str]] = {t: [] for t in SLUR_TIERS}
    tier = None
    for line in _word_list(path):
        if line.startswith("[") and line.endswith("]"):
            tier = line[1:-1]
            if tier not in tiers:
                raise DetectorError(f"{path}: unknown slur tier {tier!r}")
        elif tier is None:
            raise DetectorError(f"{path}: slur {line!r} before any [tier] line")
        else:
            tiers[tier].append(line.lower())
    return tiers


class SlurLexicon:
    """Whole-word, case-insensitive identity slurs in two tiers (``SLUR_TIERS``), robust to
    plurals, stretched letters, leetspeak and masked vowels; counts per tier and first offsets."""

    def __init__(self, path: Path = SLURS) -> None:
        self._path = path
        self._pattern: re.Pattern[str] | None = None

    def load(self) -> None:
        tiers = read_slurs(self._path)
        groups = []
        for k, tier in enumerate(SLUR_TIERS):
            alts = "|".join(_slur_regex(w) for w in sorted(tiers[tier], key=len, reverse=True))
            alts = alts or "(?!)"  # an empty tier matches nothing, not the empty string
            groups.append(f"(?P<t{k}>{alts})")
        # Not inside a longer word (letters, digits or masking characters around it).
        self._pattern = re.compile(
            rf"(?<![\w*@$|!])(?:{'|'.join(groups)})(?:e?[sz])?(?![\w*@$|])", re.IGNORECASE)

    def find_tiers(self, text: str) -> tuple[tuple[int, ...], tuple[int, int] | None]:
        """Slur count per tier, and the offsets of the first slur (strong tier first)."""
        assert self._pattern is not None  # load() ran
        counts = [0] * len(SLUR_TIERS)
        first: list[tuple[int, int] | None] = [None] * len(SLUR_TIERS)
        for m in self._pattern.finditer(text):
            k = 0 if m.group("t0") is not None else 1
            counts[k] += 1
            first[k] = first[k] or m.span()
        return tuple(counts), first[0] or first[1]

    def find(self, text: str) -> tuple[int, tuple[int, int] | None]:
        counts, span = self.find_tiers(text)
        return sum(counts), span

    @staticmethod
    def features(counts: Sequence[int]) -> list[float]:
        """The head inputs: log1p(count) per tier."""
        return [math.log1p(c) for c in counts]


class VulgarWords:
    """Whether a sentence holds a vulgar word of ours (``obscene_words.txt``) or a lexicon slur,
    whole-word, through the slur lexicon's spelling variants and a few inflections."""

    def __init__(self, path: Path = OBSCENE_WORDS, slurs: Path = SLURS) -> None:
        self._paths = (path, slurs)
        self._pattern: re.Pattern[str] | None = None

    def load(self) -> None:
        words = set(_word_list(self._paths[0]))
        words.update(w for tier in read_slurs(self._paths[1]).values() for w in tier)
        alts = "|".join(_slur_regex(w) for w in sorted(words, key=len, reverse=True))
        self._pattern = re.compile(rf"(?<![\w*@$|!])(?:{alts})(?:e?[sz]|ed|er|ers|ing|in|y)?"
                                   rf"(?![\w*@$|])", re.IGNORECASE)

    def has(self, text: str) -> bool:
        assert self._pattern is not None  # load() ran
        return self._pattern.search(text) is not None


def ngram_vectorizers(
    n_features: int, word: tuple[int, int], char: tuple[int, int]
) -> tuple[Any, Any]:
    """The hashed word and character n-gram vectorizers (stateless; shared with training)."""
    from sklearn.feature_extraction.text import HashingVectorizer

    common = {"n_features": n_features, "alternate_sign": False, "norm": "l2"}
    return (HashingVectorizer(analyzer="word", ngram_range=word, **common),
            HashingVectorizer(analyzer="char_wb", ngram_range=char, **common))


_MAX_CUE_WORDS = 50_000


class LexicalNgrams:
    """Hashed word + character n-gram logistic regressions (one per ``LEXICAL_HEADS``)."""

    def __init__(self, path: Path = LEXICAL) -> None:
        self._path = path
        self._vecs: tuple[Any, Any] | None = None
        # (2 * n_features, n_lexical_heads), dense, float64 like the vectorizers' rows: a float32
        # matrix was converted on every product (3.2 ms per batch of 32 on a 2-core AVX2 EPYC,
        # against 0.06), and its values are float32 weights, so the products are unchanged
        self._w: np.ndarray | None = None
        self._b: np.ndarray | None = None
        self.revision = ""
        # lower-cased word -> its unigram's weights per head (cue look-ups repeat words a lot)
        self._words: dict[str, np.ndarray] = {}

    def load(self) -> None:
        try:
            with np.load(self._path, allow_pickle=False) as z:
                heads = tuple(str(h) for h in z["heads"])
                nf = int(z["n_features"])
                word, char = tuple(int(v) for v in z["word_ngrams"]), tuple(
                    int(v) for v in z["char_ngrams"])
                index, coef, self._b = z["index"], z["coef"].astype(np.float32), z["intercept"]
                self.revision = str(z["revision"])
        except (OSError, KeyError, ValueError) as exc:
            raise DetectorError(f"cannot read n-gram weights {self._path}: {exc}") from exc
        if heads != LEXICAL_HEADS or coef.shape != (len(index), len(heads)):
            raise DetectorError(f"{self._path}: bad lexical weights (heads {heads})")
        self._vecs = ngram_vectorizers(nf, word, char)  # type: ignore[arg-type]
        self._w = np.zeros((2 * nf, len(heads)), dtype=np.float64)
        self._w[index] = coef

    def matrix(self, texts: Sequence[str]) -> Any:
        from scipy import sparse

        assert self._vecs is not None  # load() ran
        return sparse.hstack([v.transform(texts) for v in self._vecs], format="csr")

    def logits(self, texts: Sequence[str]) -> np.ndarray:
        """(n_texts, n_lexical_heads) logits."""
        assert self._w is not None and self._b is not None
        if not texts:
            return np.zeros((0, len(LEXICAL_HEADS)))
        return np.asarray(self.matrix(texts) @ self._w, dtype=np.float64) + self._b

    def top_cue(self, text: str, head: int) -> tuple[int, int] | None:
        """Offsets of the word whose unigram weighs most toward ``LEXICAL_HEADS[head]``."""
        words = list(_TOKEN.finditer(text))
        if not words:
            return None
        keys = [m.group().lower() for m in words]
        self._learn(keys)
        weights = np.array([self._words[w][head] for w in keys])
        k = int(np.argmax(weights))
        return words[k].span() if weights[k] > 0 else None

    def remember(self, texts: Sequence[str]) -> None:
        """Look up the unigram weights of every new word of ``texts`` at once, for the
        ``top_cue`` calls that follow: one vectorizer call per batch instead of one per turn
        (each cost about 0.5 ms on a 2-core AVX2 EPYC, whatever its few words). A word's
        weights do not depend on the words looked up with it."""
        self._learn([m.group().lower() for t in texts for m in _TOKEN.finditer(t)])

    def _learn(self, keys: Sequence[str]) -> None:
        assert self._vecs is not None and self._w is not None
        new = [w for w in dict.fromkeys(keys) if w not in self._words]
        if not new:
            return
        if len(self._words) + len(new) > _MAX_CUE_WORDS:
            self._words.clear()
        x = self._vecs[0].transform(new)  # one unigram per row
        rows = np.asarray(x.sign() @ self._w[: x.shape[1]])
        self._words.update(zip(new, rows, strict=True))


def load_heads(path: Path = WEIGHTS) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DetectorError(f"cannot read toxicity weights {path}: {exc}") from exc
    missing = [h for h in HEADS if h not in data.get("heads", {})]
    if missing or data.get("embedding_dim") != 384 or any(
            len(data["heads"][h]["coef"]) != 384 + N_EXTRA for h in HEADS) or any(
            len(data["heads"][h].get("slur_gated_coef", [0.0] * 384)) != 384 for h in HEADS):
        raise DetectorError(f"{path}: bad toxicity weights (missing heads {missing}, or not "
                            f"{384 + N_EXTRA} inputs per head, or a slur_gated_coef not 384)")
    return data


class OfflineToxicity:
    """Scores turns from their text, sentence spans and shared embedding."""

    def __init__(self, weights: Path = WEIGHTS) -> None:
        self._weights_path = weights
        self.profanity = ProfanityComponent()
        self.slurs = SlurLexicon()
        self.vulgar = VulgarWords()
        self.lexical = LexicalNgrams()
        self._coef: np.ndarray | None = None
        self._gated: np.ndarray | None = None  # (n_heads, 384): embedding weights when a slur
        self._intercept: np.ndarray | None = None
        self.revision = ""

    def load(self) -> None:
        data = load_heads(self._weights_path)
        self._coef = np.array([data["heads"][h]["coef"] for h in HEADS], dtype=np.float64)
        self._gated = np.array([data["heads"][h].get("slur_gated_coef", [0.0] * 384)
                                for h in HEADS], dtype=np.float64)
        self._intercept = np.array([data["heads"][h]["intercept"] for h in HEADS])
        self.revision = str(data.get("revision", "unknown"))
        self.profanity.load()
        self.slurs.load()
        self.vulgar.load()
        self.lexical.load()
        if self.lexical.revision != data.get("lexical_revision"):
            raise DetectorError(f"{LEXICAL.name} revision {self.lexical.revision!r} is not the one "
                                f"the heads were trained with ({data.get('lexical_revision')!r})")

    def profanity_features(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> list[tuple[float, int]]:
        """Per turn: (max sentence profanity probability, index of that sentence)."""
        return [(p, k) for p, k, _, _ in self._profanity(texts, spans)]

    def _profanity(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> list[tuple[float, int, float, int]]:
        """Per turn: the head input (max sentence profanity probability, its sentence) and the
        obscene score (the same with unlisted sentences at ``UNLISTED_OBSCENE``, its sentence)."""
        flat = [t[s:e] for t, sp in zip(texts, spans, strict=True)
                for s, e in (sp or [(0, len(t))])]
        probs = self.profanity.sentence_probs(flat)
        listed = np.array([self.vulgar.has(x) for x in flat], dtype=bool)
        gated = iter(probs * np.where(listed, 1.0, UNLISTED_OBSCENE))
        raw = iter(probs)
        out = []
        for sp in spans:
            n = len(sp or [(0, 0)])
            vals = [float(next(raw)) for _ in range(n)]
            obs = [float(next(gated)) for _ in range(n)]
            best, ob = int(np.argmax(vals)), int(np.argmax(obs))
            out.append((vals[best], best, obs[ob], ob))
        return out

    def head_logits(
        self, embeddings: np.ndarray, prof_probs: Sequence[float],
        slur_counts: Sequence[Sequence[int]], lexical: np.ndarray,
    ) -> np.ndarray:
        """(n_turns, n_heads, 4) logit parts: embedding (+ intercept), profanity, slurs (both
        tiers together, plus the slur-gated embedding term: the embedding's second set of
        weights, used only when the turn has a slur), lexical n-grams (both lexical logits
        together)."""
        assert self._coef is not None and self._intercept is not None
        assert self._gated is not None
        prof = np.array([_logit(p) for p in prof_probs])[:, None]
        slur = np.array([SlurLexicon.features(c) for c in slur_counts]).reshape(
            len(slur_counts), len(SLUR_TIERS))
        emb_part = embeddings @ self._coef[:, :384].T + self._intercept
        gate = (slur.sum(axis=1) > 0)[:, None]
        slur_part = slur @ self._coef[:, SLUR_COLS].T + gate * (embeddings @ self._gated.T)
        lex_part = lexical @ self._coef[:, _LEX_COLS].T
        return np.stack([emb_part, prof * self._coef[:, 384][None, :], slur_part, lex_part],
                        axis=-1)

    def score(
        self,
        texts: Sequence[str],
        spans: Sequence[Sequence[tuple[int, int]]],
        embeddings: np.ndarray,
    ) -> list[dict[str, LabelScore]]:
        prof = self._profanity(texts, spans)
        slurs = [self.slurs.find_tiers(t) for t in texts]
        parts = self.head_logits(embeddings, [p[0] for p in prof], [c for c, _ in slurs],
                                 self.lexical.logits(texts))
        probs = _sigmoid(parts.sum(axis=-1))
        # the turns where the n-grams drive a head look up their top word (``_turn_scores``)
        lexical_led = (parts.argmax(axis=-1) == _LEXICAL_COMPONENT).any(axis=1)
        self.lexical.remember([t for t, led in zip(texts, lexical_led, strict=True) if led])
        out = []
        for i, text in enumerate(texts):
            sents = spans[i] or [(0, len(text))]
            sent = sents[prof[i][1]]
            cues = (self.profanity.top_cue(text[sent[0] : sent[1]], sent[0]), slurs[i][1])
            out.append(self._turn_scores(text, (sent, sents[prof[i][3]]), prof[i], cues,
                                         parts[i], probs[i]))
        return out

    def _lexical_cue(self, text: str, head: str) -> tuple[int, int] | None:
        k = LEXICAL_HEADS.index("identity_attack" if head == "identity_attack" else "toxicity")
        return self.lexical.top_cue(text, k)

    def _turn_scores(
        self,
        text: str,
        sentences: tuple[tuple[int, int], tuple[int, int]],  # the most profane; the obscene one
        prof: tuple[float, int, float, int],
        cues: tuple[tuple[int, int] | None, tuple[int, int] | None],
        parts: np.ndarray,
        probs: np.ndarray,
    ) -> dict[str, LabelScore]:
        sent, obscene_sent = sentences
        truncated = len(text.split()) > _EMBEDDING_WORDPIECES * 0.6
        base = {"backend": "offline", "revision": self.revision}
        scores: dict[str, LabelScore] = {}
        for k, head in enumerate(HEADS):
            lex_cue = (self._lexical_cue(text, head)
                       if int(np.argmax(parts[k])) == _LEXICAL_COMPONENT
                       else None)  # only looked up when the n-grams drive this head
            ev, span = _explain(parts[k], (*cues, lex_cue), prof[1], len(text))
            ev.update(base, embedding_truncated=truncated)
            scores[head] = LabelScore(float(probs[k]), span, ev)
        cue = cues[0]
        if obscene_sent != sent:  # the most profane sentence has no listed word, another won
            cue = self.profanity.top_cue(text[obscene_sent[0] : obscene_sent[1]], obscene_sent[0])
        obscene_ev = {**base, "component": "profanity-check", "chunk": prof[3],
                      "chunking": "sentence", **({"cue_span": list(cue)} if cue else {})}
        scores["obscene"] = LabelScore(prof[2], cue or obscene_sent, obscene_ev)
        scores["severe_toxicity"] = severe(scores)
        return scores


_COMPONENTS = ("embedding-lr", "profanity-check", "slur-lexicon", "lexical-ngrams")
_LEXICAL_COMPONENT = _COMPONENTS.index("lexical-ngrams")  # the n-grams drive a head's logit


def _explain(
    parts: np.ndarray, cues: tuple[tuple[int, int] | None, ...], chunk: int, length: int
) -> tuple[dict[str, Any], tuple[int, int]]:
    """Which component pushed this head's logit up most, and its cue offsets where it has one."""
    k = int(np.argmax(parts))
    component = _COMPONENTS[k]
    ev: dict[str, Any] = {"component": component,
                          **{f"logit_{c.split('-')[0]}": round(float(v), 3)
                             for c, v in zip(_COMPONENTS, parts, strict=True)}}
    cue = cues[k - 1] if k > 0 else None
    if component == "profanity-check":
        ev.update(chunk=chunk, chunking="sentence")
    else:
        ev.update(chunk=0, chunking="turn")
    if cue:
        ev["cue_span"] = list(cue)
    return ev, cue or (0, length)


def severe(scores: dict[str, LabelScore]) -> LabelScore:
    """Toxic and (threat, identity attack, or obscene insult): P(a) * max(P(b), ...)."""
    parts = {
        "threat": scores["threat"].score,
        "identity_attack": scores["identity_attack"].score,
        "obscene_insult": scores["obscene"].score * scores["insult"].score,
    }
    driver = max(parts, key=lambda k: parts[k])
    value = scores["toxicity"].score * parts[driver]
    source = scores["threat" if driver == "threat" else "identity_attack" if driver ==
                    "identity_attack" else "insult"]
    ev = {**scores["toxicity"].evidence, "component": "derived", "driver": driver}
    return LabelScore(float(min(max(value, 0.0), 1.0)), source.span, ev)
