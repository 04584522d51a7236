"""Trains the offline toxicity heads and measures them out-of-fold.

    python -m pipeline.training.toxicity --evaldata ../shared/evaldata --cache /tmp/tox [--write]

Two stages. (1) Hashed word + character n-gram logistic regressions for ``toxicity`` and
``identity_attack`` on the text (``LexicalNgrams``). (2) One logistic regression per head on
[MiniLM embedding, profanity logit, log1p(slurs) per tier (strong, ambiguous), the two lexical
logits]. Stage 2 is fitted on *out-of-fold* lexical logits (inner 5-fold), so it learns how far
to trust the n-grams on text they did not see; the shipped n-gram weights are then refitted on
everything.

Training data (all licences allow shipping trained weights; see docs/models/toxicity.md):
Davidson et al. dev half (MIT), ToxiGen seed statements dev half (MIT), the Jigsaw sample
dev half (CC0), the sentences we wrote ourselves
(``detectors/toxicity/data/written_examples.jsonl``), and benign support replies as negatives
(support-benign dev, CC BY 4.0; cs-transcripts' SGD replies, CC BY-SA 4.0;
``toxicity_benign``).
Because the heads are trained on the same dev halves that ``chatmon eval`` reads, the numbers we
report for them are the out-of-fold ones this script prints (5-fold, grouped by text), not the
in-sample numbers ``chatmon eval`` gives for the shipped weights. The benign flag rates are
measured on a set left out of training: support-benign by a model trained without it, and
cs-transcripts by one trained without the SGD replies (``held_out_benign``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from detectors.features import BACKENDS, SentenceEncoder, split_sentences
from detectors.toxicity.offline import (
    HEADS,
    LEXICAL,
    LEXICAL_HEADS,
    N_EXTRA,
    SLUR_COLS,
    WEIGHTS,
    OfflineToxicity,
    SlurLexicon,
    ngram_vectorizers,
)
from pipeline.eval import toxicity_sets as ts
from pipeline.training import toxicity_benign as tb

WRITTEN = WEIGHTS.parent / "written_examples.jsonl"
# Per-source weight multipliers: Davidson has 12k tweets, the others a few hundred rows.
SOURCE_WEIGHT = {"davidson": 1.0, "toxigen": 20.0, "jigsaw": 2.0, "written": 8.0,
                 "support": 1.0, "sgd": 1.0}
# identity_attack (lexical and stacked): ToxiGen's implicit hate is the toxicity head's job
# (its eval reads toxicity); here Davidson's hate-vs-offensive gets the say.
HATE_SOURCE_WEIGHT = {**SOURCE_WEIGHT, "toxigen": 1.0}
# Davidson hate tweets (6% of its rows) weigh this much more in the identity_attack *head* (not
# the n-grams): out-of-fold auprc_hate 1: 0.386, 2: 0.394, 4: 0.394 (n-grams too, 2: 0.394).
HATE_POSITIVE_WEIGHT = 2.0
# Stronger regularisation of the identity_attack head (out-of-fold Davidson auprc_hate: C 1 0.383,
# 0.3 0.387, 3 0.372, 10 0.358); the other heads use --C.
HEAD_C = {"identity_attack": 0.3}
IGNORE = -1
# Lexical n-grams: hashed space per analyzer, n-gram ranges, C, and the minimum number of
# training texts a bucket must occur in to get a weight (keeps the shipped file small).
NGRAMS = {"n_features": 2**18, "word": (1, 2), "char": (2, 5)}
LEX_C = 16.0
LEX_MIN_DF = 2


@dataclass
class Corpus:
    texts: list[str]
    source: np.ndarray
    y: dict[str, np.ndarray]  # head -> 0/1, or IGNORE where the source says nothing
    group: list[str]  # ToxiGen target group, else ""
    extra: dict[str, np.ndarray]  # source-specific labels (davidson hate) for metrics


def _rows(evaldata: Path, benign: bool = True) -> list[tuple[str, str, dict[str, int], str]]:
    out: list[tuple[str, str, dict[str, int], str]] = []
    for r in ts.load_davidson(evaldata / "davidson-hate-offensive" / "dev"):
        neither = 1 - r.labels["toxic"]
        out.append(("davidson", r.text, {"toxicity": r.labels["toxic"],
                    "identity_attack": r.labels["hate"], "insult": 0 if neither else IGNORE,
                    "threat": 0 if neither else IGNORE}, ""))
    for r in ts.load_toxigen(evaldata / "toxigen-seeds" / "dev"):
        hate = r.labels["hate"]
        out.append(("toxigen", r.text, {"toxicity": hate, "identity_attack": hate,
                    "insult": IGNORE if hate else 0, "threat": IGNORE if hate else 0}, r.group))
    for r in ts.load_jigsaw(evaldata / "jigsaw-toxic-sample" / "dev"):
        out.append(("jigsaw", r.text, {"toxicity": r.labels["toxic"], "identity_attack":
                    r.labels["identity_hate"], "insult": r.labels["insult"],
                    "threat": r.labels["threat"]}, ""))
    for line in WRITTEN.read_text().splitlines():
        item = json.loads(line)
        out.append(("written", item["text"], {h: int(h in item["labels"]) for h in HEADS}, ""))
    negative = {h: 0 for h in HEADS}
    for source, replies in (("support", tb.support_replies(evaldata)),
                            ("sgd", tb.cs_replies(evaldata, "sgd"))):
        out += [(source, text, negative, "") for text, _ in tb.unique(replies) if benign]
    return out


def load_corpus(evaldata: Path, benign: bool = True) -> Corpus:
    rows = _rows(evaldata, benign)
    return Corpus(
        texts=[r[1] for r in rows],
        source=np.array([r[0] for r in rows]),
        y={h: np.array([r[2][h] for r in rows]) for h in HEADS},
        group=[r[3] for r in rows],
        extra={},
    )


def features(texts: list[str], cache: Path, backend: str) -> np.ndarray:
    """[MiniLM embedding, profanity logit, log1p(slurs) per tier] per text, as the detector has
    them."""
    lexicon = SlurLexicon()
    lexicon.load()
    slurs = np.array([SlurLexicon.features(lexicon.find_tiers(t)[0]) for t in texts])
    return np.hstack([_cached_features(texts, cache, backend), slurs])


def _cached_features(texts: list[str], cache: Path, backend: str) -> np.ndarray:
    """[embedding, profanity logit] per text, from one store per encoder version in ``cache``
    keyed by each text's hash: adding rows (or scoring another benign set) encodes only the
    texts not seen before."""
    version = f"{backend}:{SentenceEncoder.vectors_version}"
    file = cache / f"toxicity_features_{hashlib.sha256(version.encode()).hexdigest()[:12]}.npz"
    keys = [hashlib.sha256(t.encode()).hexdigest()[:20] for t in texts]
    store: dict[str, np.ndarray] = {}
    if file.is_file():
        with np.load(file) as z:
            store = dict(zip((str(k) for k in z["keys"]), z["x"], strict=True))
    missing = sorted({t for t, k in zip(texts, keys, strict=True) if k not in store})
    if missing:
        emb = SentenceEncoder(backend=backend).encode(missing)
        model = OfflineToxicity()
        model.profanity.load()
        model.vulgar.load()  # profanity_features reads the obscene gate too (unused here)
        prof = model.profanity_features(missing, [split_sentences(t) for t in missing])
        logits = np.array([np.log(max(p, 1e-4) / max(1 - p, 1e-4)) for p, _ in prof])
        x = np.hstack([emb, logits[:, None]])
        store.update(zip((hashlib.sha256(t.encode()).hexdigest()[:20] for t in missing), x,
                         strict=True))
        cache.mkdir(parents=True, exist_ok=True)
        np.savez(file, keys=np.array(list(store)), x=np.stack(list(store.values())))
    return np.stack([store[k] for k in keys])


def fit_head(x: np.ndarray, y: np.ndarray, w: np.ndarray, c: float) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    keep = y != IGNORE
    lr = LogisticRegression(C=c, max_iter=3000)
    lr.fit(x[keep], y[keep], sample_weight=w[keep])
    return lr.coef_[0], float(lr.intercept_[0])


def sample_weights(corpus: Corpus, head: str = "toxicity", stage: str = "lexical") -> np.ndarray:
    """Per-row weights of ``head``'s regression; ``stage`` "head" adds the Davidson hate weight
    to the stacked identity_attack head."""
    table = HATE_SOURCE_WEIGHT if head == "identity_attack" else SOURCE_WEIGHT
    w = np.array([table[s] for s in corpus.source])
    if head == "identity_attack" and stage == "head":
        w = w * np.where((corpus.source == "davidson") & (corpus.y[head] == 1),
                         HATE_POSITIVE_WEIGHT, 1.0)
    return w


def ngram_matrix(texts: list[str]) -> Any:
    from scipy import sparse

    vecs = ngram_vectorizers(NGRAMS["n_features"], NGRAMS["word"], NGRAMS["char"])
    return sparse.hstack([v.transform(texts) for v in vecs], format="csr")


@dataclass
class Lexical:
    """Fitted n-gram regressions: dense (n_buckets, n_lexical_heads) weights and intercepts."""

    coef: np.ndarray
    intercept: np.ndarray

    def logits(self, xs: Any) -> np.ndarray:
        return np.asarray(xs @ self.coef) + self.intercept


def fit_lexical(xs: Any, corpus: Corpus, rows: np.ndarray) -> Lexical:
    """The n-gram regressions on ``rows``; buckets seen in fewer than LEX_MIN_DF texts get 0."""
    from scipy import sparse
    from sklearn.linear_model import LogisticRegression

    sub = xs[rows]
    seen = np.asarray((sub > 0).sum(axis=0)).ravel() >= LEX_MIN_DF
    sub = sub @ sparse.diags(seen.astype(np.float64))
    coefs, bs = [], []
    for h in LEXICAL_HEADS:
        y, w = corpus.y[h][rows], sample_weights(corpus, h)[rows]
        keep = y != IGNORE
        lr = LogisticRegression(C=LEX_C, solver="liblinear", max_iter=2000)
        lr.fit(sub[keep], y[keep], sample_weight=w[keep])
        coefs.append(lr.coef_[0] * seen)
        bs.append(float(lr.intercept_[0]))
    return Lexical(np.stack(coefs, axis=1), np.array(bs))


def _folds(texts: list[str], k: int, salt: str = "") -> np.ndarray:
    """Fold of each text by hash, so repeated texts stay in one fold."""
    return np.array([int(hashlib.sha256((salt + t).encode()).hexdigest()[:8], 16) % k
                     for t in texts])


def inner_lexical(xs: Any, corpus: Corpus, rows: np.ndarray, k: int = 5) -> np.ndarray:
    """Out-of-fold lexical logits for ``rows`` (inner folds), the inputs stage 2 trains on."""
    folds = _folds([corpus.texts[i] for i in rows], k, salt="inner")
    out = np.zeros((len(rows), len(LEXICAL_HEADS)))
    for f in range(k):
        out[folds == f] = fit_lexical(xs, corpus, rows[folds != f]).logits(xs[rows[folds == f]])
    return out


# Heads that also get the slur-gated embedding (the embedding again, times 1 when the turn has
# a lexicon slur of either tier, else 0): a second embedding direction that only speaks when a
# slur is present, so the head can learn in which contexts a slur is hate rather than offence.
GATED_HEADS = ("identity_attack",)


def slur_gated(x: np.ndarray) -> np.ndarray:
    """(n, 384): the embedding where the row has a slur (either tier), zeros elsewhere."""
    gate = (x[:, SLUR_COLS].sum(axis=1) > 0).astype(x.dtype)[:, None]
    return x[:, :384] * gate


def fit_heads(x_rows: np.ndarray, corpus: Corpus, rows: np.ndarray, c: float
              ) -> dict[str, tuple[np.ndarray, float]]:
    """One LR per head on ``x_rows`` (the inputs of ``rows``, in that order); C is ``c`` except
    where ``HEAD_C`` says otherwise. Heads in GATED_HEADS get 384 more inputs at the end."""
    gated = np.hstack([x_rows, slur_gated(x_rows)])
    return {h: fit_head(gated if h in GATED_HEADS else x_rows, corpus.y[h][rows],
                        sample_weights(corpus, h, "head")[rows], HEAD_C.get(h, c))
            for h in HEADS}


def head_probs(heads: dict[str, tuple[np.ndarray, float]], x: np.ndarray
               ) -> dict[str, np.ndarray]:
    gated = np.hstack([x, slur_gated(x)])
    return {h: 1 / (1 + np.exp(-((gated if h in GATED_HEADS else x) @ coef + b)))
            for h, (coef, b) in heads.items()}


def out_of_fold(x: np.ndarray, xs: Any | None, corpus: Corpus, c: float, k: int = 5
                ) -> dict[str, np.ndarray]:
    """Probabilities for every text from models that never saw that text (grouped by text).
    ``xs`` None: without the lexical n-grams (the previous model, for comparison)."""
    folds = _folds(corpus.texts, k)
    oof = {h: np.zeros(len(corpus.texts)) for h in HEADS}
    for f in range(k):
        train, test = np.flatnonzero(folds != f), np.flatnonzero(folds == f)
        xtr, xte = x[train], x[test]
        if xs is not None:
            lex_test = fit_lexical(xs, corpus, train).logits(xs[test])
            xtr = np.hstack([xtr, inner_lexical(xs, corpus, train, k)])
            xte = np.hstack([xte, lex_test])
        for h, p in head_probs(fit_heads(xtr, corpus, train, c), xte).items():
            oof[h][test] = p
    return oof


def fit_rows(x: np.ndarray, xs: Any, corpus: Corpus, rows: np.ndarray, c: float
             ) -> tuple[dict[str, tuple[np.ndarray, float]], Lexical]:
    """A model on ``rows``: heads on inner out-of-fold lexical logits, n-grams on all ``rows``."""
    heads = fit_heads(np.hstack([x[rows], inner_lexical(xs, corpus, rows)]), corpus, rows, c)
    return heads, fit_lexical(xs, corpus, rows)


def fit_all(x: np.ndarray, xs: Any, corpus: Corpus, c: float
            ) -> tuple[dict[str, tuple[np.ndarray, float]], Lexical]:
    """The shipped model: heads on inner out-of-fold lexical logits, n-grams on everything."""
    return fit_rows(x, xs, corpus, np.arange(len(corpus.texts)), c)


def write_weights(heads: dict[str, tuple[np.ndarray, float]], lexical: Lexical,
                  corpus: Corpus, c: float, backend: str, metrics: dict[str, object]) -> None:
    used = np.flatnonzero(np.any(lexical.coef != 0, axis=1)).astype(np.int32)
    coef16 = lexical.coef[used].astype(np.float16)
    lex_rev = "ngram-" + hashlib.sha256(used.tobytes() + coef16.tobytes()).hexdigest()[:12]
    np.savez_compressed(
        LEXICAL, heads=np.array(LEXICAL_HEADS), n_features=NGRAMS["n_features"],
        word_ngrams=np.array(NGRAMS["word"]), char_ngrams=np.array(NGRAMS["char"]),
        index=used, coef=coef16, intercept=lexical.intercept, revision=np.array(lex_rev))
    n_in = 384 + N_EXTRA
    out = {h: {"coef": [round(float(v), 6) for v in coef[:n_in]], "intercept": round(b, 6),
               **({"slur_gated_coef": [round(float(v), 6) for v in coef[n_in:]]}
                  if h in GATED_HEADS else {})}
           for h, (coef, b) in heads.items()}
    digest = hashlib.sha256((json.dumps(out, sort_keys=True) + lex_rev).encode()).hexdigest()[:12]
    data = {
        "about": "Logistic-regression heads on [all-MiniLM-L6-v2 embedding (384), profanity-check "
                 "logit, log1p(identity slurs: strong, ambiguous), lexical n-gram logits "
                 "(toxicity, identity_attack; lexical_ngrams.npz)]; identity_attack also has "
                 "slur_gated_coef, 384 embedding weights used only when the turn has a slur; "
                 "trained by "
                 "pipeline/training/toxicity.py. See docs/models/toxicity.md.",
        "revision": f"lr-{digest}",
        "lexical_revision": lex_rev,
        "embedding_dim": 384,
        "encoder_backend": backend,
        "trained_on": {s: int((corpus.source == s).sum()) for s in SOURCE_WEIGHT},
        "C": {h: HEAD_C.get(h, c) for h in HEADS},
        "hate_positive_weight": HATE_POSITIVE_WEIGHT,
        "lexical": {"C": LEX_C, "min_df": LEX_MIN_DF, "buckets": int(len(used)),
                    **{k: v for k, v in NGRAMS.items()}},
        "out_of_fold": metrics,
        "heads": out,
    }
    WEIGHTS.write_text(json.dumps(data, indent=1) + "\n")


def pick_threshold(y: np.ndarray, p: np.ndarray, groups: list[str]) -> float:
    """On out-of-fold ToxiGen scores: the cut with the best worst-group balanced accuracy (ties:
    the lower maximum group false positive rate, then the better mean balanced accuracy)."""
    candidates = []
    for t in np.arange(0.2, 0.91, 0.02):
        rates = ts.group_rates(list(y), list(p >= t), groups)
        worst_fpr = max(g["fpr"] for g in rates.values() if g["n_neutral"])
        bal = [g["bal_acc"] for g in rates.values()]
        candidates.append(((round(min(bal), 6), -worst_fpr, float(np.mean(bal))), -t))
    return float(round(-max(candidates)[1], 2))


def report(
    corpus: Corpus, oof: dict[str, np.ndarray], cut: float | None = None
) -> dict[str, Any]:
    """The eval metrics of each dev set, computed on out-of-fold scores; the ``*_at_cut`` ones
    at the shipped thresholds (toxicity's, and identity_attack's for Davidson hate)."""
    from pipeline.eval.core import at_cut, auprc, auroc
    from pipeline.policy import threshold

    out: dict[str, Any] = {}
    d = corpus.source == "davidson"
    hate = corpus.y["identity_attack"][d]
    t = corpus.source == "toxigen"
    y, p = corpus.y["toxicity"][t], oof["toxicity"][t]
    groups = [g for g, keep in zip(corpus.group, t, strict=True) if keep]
    cut = pick_threshold(y, p, groups) if cut is None else cut
    hate_cut = threshold("toxicity.identity_attack")
    out["davidson"] = {"auroc_toxic": auroc(corpus.y["toxicity"][d], oof["toxicity"][d]),
                       "auprc_hate": auprc(hate, oof["identity_attack"][d]),
                       "auroc_hate": auroc(hate, oof["identity_attack"][d]),
                       **at_cut(corpus.y["toxicity"][d], oof["toxicity"][d], cut),
                       **{f"hate_{k}": v for k, v in
                          at_cut(hate, oof["identity_attack"][d], hate_cut).items()}}
    rates = ts.group_rates(list(y), list(p >= cut), groups)
    out["toxigen_groups"] = {g: {k: round(v, 3) for k, v in r.items()} for g, r in rates.items()}
    out["toxigen"] = {"auroc": auroc(y, p), "threshold": cut,
                      "worst_group_bal_acc": min(g["bal_acc"] for g in rates.values()),
                      "max_group_fpr": max(g["fpr"] for g in rates.values() if g["n_neutral"]),
                      **at_cut(y, p, cut)}
    j = corpus.source == "jigsaw"
    out["jigsaw"] = {"auroc_toxic": auroc(corpus.y["toxicity"][j], oof["toxicity"][j]),
                     **at_cut(corpus.y["toxicity"][j], oof["toxicity"][j], cut)}
    groups_detail = out.pop("toxigen_groups")
    rounded = {k: {m: round(float(v), 4) for m, v in d_.items()} for k, d_ in out.items()}
    return {**rounded, "toxigen_groups": groups_detail}


def score_benign(model: tuple[dict[str, tuple[np.ndarray, float]], Lexical], texts: list[str],
                 cache: Path, backend: str) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Head probabilities and the obscene (profanity-check) probability of every text. This
    obscene is the ungated maximum over sentences (the detector's ``VulgarWords`` gate lowers
    it where the sentence holds no listed word), so the obscene rate here is an upper bound."""
    uniq = sorted(set(texts))
    xb = features(uniq, cache, backend)
    obscene = 1 / (1 + np.exp(-xb[:, 384]))
    probs = head_probs(model[0], np.hstack([xb, model[1].logits(ngram_matrix(uniq))]))
    index = np.array([{t: i for i, t in enumerate(uniq)}[t] for t in texts])
    return {h: p[index] for h, p in probs.items()}, obscene[index]


def benign_report(x: np.ndarray, xs: Any, corpus: Corpus, c: float, full: Any,
                  args: argparse.Namespace) -> dict[str, Any]:
    """Flagged replies per 1,000 on each benign set, from a model that never saw the set (see
    ``toxicity_benign.HELD_OUT``). The flagged texts go to stderr to be read, never into the
    weights file (they are rows of data sets)."""
    import sys

    from pipeline.policy import threshold

    cuts = {label: threshold(f"toxicity.{label}") for label in ts.LABELS}
    out: dict[str, Any] = {}
    for name, texts in tb.benign_sets(args.evaldata).items():
        held = tb.HELD_OUT.get(name)
        model = full if held is None else fit_rows(
            x, xs, corpus, np.flatnonzero(corpus.source != held), c)
        probs, obscene = score_benign(model, texts, args.cache, args.encoder)
        # kept beside the out-of-fold scores, to read other cuts without refitting
        np.savez(args.cache / f"toxicity_benign_{name}.npz", obscene=obscene, **probs)
        flagged = tb.flags(probs, obscene, cuts)
        out[name] = {"n": len(texts), "trained_without": held or "never trained on",
                     **tb.per_1000(flagged)}
        hit = np.stack(list(flagged.values())).any(axis=0)
        for i in np.flatnonzero(hit)[:12]:
            labels = {k: round(float(v[i]), 2) for k, v in {**probs, "obscene": obscene}.items()
                      if k in flagged and flagged[k][i]}
            print(f"[{name}] {texts[i][:100]!r} {labels}", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> None:
    from pipeline.policy import threshold

    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--evaldata", type=Path, default=Path("../shared/evaldata"))
    ap.add_argument("--cache", type=Path, default=Path("/tmp/chatmon-toxicity"))
    ap.add_argument("--encoder", choices=BACKENDS, default="onnx-int8",
                    help="encoder backend of the embedding inputs (the pipeline's default)")
    ap.add_argument("--C", type=float, default=1.0)
    ap.add_argument("--no-lexical", action="store_true",
                    help="out-of-fold numbers without the n-gram stage (comparison only)")
    ap.add_argument("--no-benign", action="store_true",
                    help="without the benign support replies (the model before them)")
    ap.add_argument("--write", action="store_true", help="write the shipped weights files")
    args = ap.parse_args(argv)
    corpus = load_corpus(args.evaldata, benign=not args.no_benign)
    x = features(corpus.texts, args.cache, args.encoder)
    xs = None if args.no_lexical else ngram_matrix(corpus.texts)
    oof = out_of_fold(x, xs, corpus, args.C)
    np.save(args.cache / "toxicity_oof.npy", np.stack([oof[h] for h in HEADS]))
    cut = threshold("toxicity.toxicity")
    metrics = report(corpus, oof, cut)
    metrics["toxigen_best_cut"] = pick_threshold(
        corpus.y["toxicity"][corpus.source == "toxigen"],
        oof["toxicity"][corpus.source == "toxigen"],
        [g for g, s in zip(corpus.group, corpus.source, strict=True) if s == "toxigen"])
    rows = np.arange(len(corpus.texts))
    if xs is None:
        heads = fit_heads(x, corpus, rows, args.C)
    else:
        heads, lexical = fit_all(x, xs, corpus, args.C)
        metrics["benign_per_1000"] = benign_report(x, xs, corpus, args.C, (heads, lexical), args)
    print(json.dumps(metrics, indent=1))
    if args.write:
        if xs is None:
            raise SystemExit("--write ships the model with its n-gram stage; drop --no-lexical")
        write_weights(heads, lexical, corpus, args.C, args.encoder, metrics)

if __name__ == "__main__":
    main()
