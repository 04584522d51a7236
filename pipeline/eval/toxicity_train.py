"""Trains the offline toxicity heads and measures them out-of-fold.

    python -m pipeline.eval.toxicity_train --evaldata ../shared/evaldata --cache /tmp/tox

Training data (all licences allow shipping trained weights; see docs/models/toxicity.md):
Davidson et al. dev half (MIT), ToxiGen seed statements dev half (MIT), the Jigsaw sample
dev half (CC0) and the sentences we wrote ourselves
(``detectors/data/toxicity/written_examples.jsonl``).
Because the heads are trained on the same dev halves that ``chatmon eval`` reads, the numbers we
report for them are the out-of-fold ones this script prints (5-fold, grouped by text), not the
in-sample numbers ``chatmon eval`` gives for the shipped weights.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from detectors.features import SentenceEncoder, split_sentences
from detectors.toxicity_offline import HEADS, WEIGHTS, OfflineToxicity, SlurLexicon
from pipeline.eval import toxicity_sets as ts

WRITTEN = WEIGHTS.parent / "written_examples.jsonl"
# Per-source weight multipliers: Davidson has 12k tweets, the others a few hundred rows.
SOURCE_WEIGHT = {"davidson": 1.0, "toxigen": 20.0, "jigsaw": 2.0, "written": 8.0}
IGNORE = -1


@dataclass
class Corpus:
    texts: list[str]
    source: np.ndarray
    y: dict[str, np.ndarray]  # head -> 0/1, or IGNORE where the source says nothing
    group: list[str]  # ToxiGen target group, else ""
    extra: dict[str, np.ndarray]  # source-specific labels (davidson hate) for metrics


def _rows(evaldata: Path) -> list[tuple[str, str, dict[str, int], str]]:
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
    return out


def load_corpus(evaldata: Path) -> Corpus:
    rows = _rows(evaldata)
    return Corpus(
        texts=[r[1] for r in rows],
        source=np.array([r[0] for r in rows]),
        y={h: np.array([r[2][h] for r in rows]) for h in HEADS},
        group=[r[3] for r in rows],
        extra={},
    )


def features(corpus: Corpus, cache: Path) -> np.ndarray:
    """[MiniLM embedding, profanity logit, log1p(slurs)] per text, as the detector has them."""
    lexicon = SlurLexicon()
    lexicon.load()
    slurs = np.array([[SlurLexicon.feature(lexicon.find(t)[0])] for t in corpus.texts])
    return np.hstack([_cached_features(corpus, cache), slurs])


def _cached_features(corpus: Corpus, cache: Path) -> np.ndarray:
    key = hashlib.sha256("\n".join(corpus.texts).encode()).hexdigest()[:16]
    file = cache / f"toxicity_features_{key}.npy"
    if file.is_file():
        return np.load(file)
    emb = SentenceEncoder().encode(corpus.texts)
    model = OfflineToxicity()
    model.profanity.load()
    prof = model.profanity_features(corpus.texts, [split_sentences(t) for t in corpus.texts])
    logits = np.array([np.log(max(p, 1e-4) / max(1 - p, 1e-4)) for p, _ in prof])
    x = np.hstack([emb, logits[:, None]])
    cache.mkdir(parents=True, exist_ok=True)
    np.save(file, x)
    return x


def fit_head(x: np.ndarray, y: np.ndarray, w: np.ndarray, c: float) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    keep = y != IGNORE
    lr = LogisticRegression(C=c, max_iter=3000)
    lr.fit(x[keep], y[keep], sample_weight=w[keep])
    return lr.coef_[0], float(lr.intercept_[0])


def sample_weights(corpus: Corpus) -> np.ndarray:
    return np.array([SOURCE_WEIGHT[s] for s in corpus.source])


def out_of_fold(x: np.ndarray, corpus: Corpus, c: float, k: int = 5) -> dict[str, np.ndarray]:
    """Probabilities for every text from models that never saw that text (grouped by text)."""
    folds = np.array([int(hashlib.sha256(t.encode()).hexdigest()[:8], 16) % k
                      for t in corpus.texts])
    w = sample_weights(corpus)
    oof = {h: np.zeros(len(corpus.texts)) for h in HEADS}
    for f in range(k):
        test = folds == f
        for h in HEADS:
            coef, b = fit_head(x[~test], corpus.y[h][~test], w[~test], c)
            oof[h][test] = 1 / (1 + np.exp(-(x[test] @ coef + b)))
    return oof


def write_weights(x: np.ndarray, corpus: Corpus, c: float, metrics: dict[str, object]) -> None:
    w = sample_weights(corpus)
    heads = {}
    for h in HEADS:
        coef, b = fit_head(x, corpus.y[h], w, c)
        heads[h] = {"coef": [round(float(v), 6) for v in coef], "intercept": round(b, 6)}
    digest = hashlib.sha256(json.dumps(heads, sort_keys=True).encode()).hexdigest()[:12]
    data = {
        "about": "Logistic-regression heads on [all-MiniLM-L6-v2 embedding (384), profanity-check "
                 "logit, log1p(identity slurs)]; trained by pipeline/eval/toxicity_train.py. "
                 "See docs/models/toxicity.md.",
        "revision": f"lr-{digest}",
        "embedding_dim": 384,
        "trained_on": {s: int((corpus.source == s).sum()) for s in SOURCE_WEIGHT},
        "C": c,
        "out_of_fold": metrics,
        "heads": heads,
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
    """The eval metrics of each dev set, computed on out-of-fold scores."""
    from pipeline.eval.core import auprc, auroc

    out: dict[str, Any] = {}
    d = corpus.source == "davidson"
    hate = corpus.y["identity_attack"][d]
    out["davidson"] = {"auroc_toxic": auroc(corpus.y["toxicity"][d], oof["toxicity"][d]),
                       "auprc_hate": auprc(hate, oof["identity_attack"][d]),
                       "auroc_hate": auroc(hate, oof["identity_attack"][d])}
    t = corpus.source == "toxigen"
    y, p = corpus.y["toxicity"][t], oof["toxicity"][t]
    groups = [g for g, keep in zip(corpus.group, t, strict=True) if keep]
    cut = pick_threshold(y, p, groups) if cut is None else cut
    rates = ts.group_rates(list(y), list(p >= cut), groups)
    out["toxigen_groups"] = {g: {k: round(v, 3) for k, v in r.items()} for g, r in rates.items()}
    out["toxigen"] = {"auroc": auroc(y, p), "threshold": cut,
                      "worst_group_bal_acc": min(g["bal_acc"] for g in rates.values()),
                      "max_group_fpr": max(g["fpr"] for g in rates.values() if g["n_neutral"])}
    j = corpus.source == "jigsaw"
    out["jigsaw"] = {"auroc_toxic": auroc(corpus.y["toxicity"][j], oof["toxicity"][j])}
    groups_detail = out.pop("toxigen_groups")
    rounded = {k: {m: round(float(v), 4) for m, v in d_.items()} for k, d_ in out.items()}
    return {**rounded, "toxigen_groups": groups_detail}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--evaldata", type=Path, default=Path("../shared/evaldata"))
    ap.add_argument("--cache", type=Path, default=Path("/tmp/chatmon-toxicity"))
    ap.add_argument("--C", type=float, default=1.0)
    ap.add_argument("--write", action="store_true", help="write the shipped weights file")
    args = ap.parse_args(argv)
    corpus = load_corpus(args.evaldata)
    x = features(corpus, args.cache)
    oof = out_of_fold(x, corpus, args.C)
    np.save(args.cache / "toxicity_oof.npy", np.stack([oof[h] for h in HEADS]))
    metrics = report(corpus, oof)
    print(json.dumps(metrics, indent=1))
    if args.write:
        write_weights(x, corpus, args.C, metrics)


if __name__ == "__main__":
    main()
