"""Trains the empathy detector's user-emotion model on GoEmotions and writes
``detectors/empathy/data/emotion.npz``.

    python -m pipeline.training.empathy_emotions --data ../shared/evaldata/goemotions-ekman/dev \
        [--cache /tmp/chatmon-emotion] [--encoder onnx-int8] [--no-write]

Data: GoEmotions (Demszky et al. 2020; Apache-2.0, so shipping weights trained on it is
allowed), Ekman labels, the official **train** split only (``train.tsv``); ``dev.tsv`` is for
``chatmon eval goemotions`` and the test split is never read. Comments with one label after
folding disgust into anger are kept, surprise left out (``single_label``). Beside them, the
``user`` sentences of ``detectors/empathy/data/emotions.txt`` (192 messages the chatmon authors
wrote, mostly to support, many with the feeling implied; frustration counts as anger), each
weighing ``WRITTEN_WEIGHT`` comments: Reddit comments describing a problem read as neutral, and
without them the model called a quarter of our upset support users neutral (5-fold on the
written sentences, upset recall 0.64 -> 0.81 at weight 20, GoEmotions dev macro-F1 0.620 ->
0.619).

Model: [shared MiniLM vector of the text (the encoder the pipeline runs), VADER neg/neu/pos/
compound] -> 256 ReLU units -> 5 classes, trained with AdamW and class weights
(max count / count) ** 0.5; then one bias per class, chosen on 5-fold out-of-fold
probabilities of the GoEmotions training comments for macro-F1 (a prior correction; the written
sentences stay in every fold's training part). Seeded, one thread: the same command writes the
same weights.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import numpy as np

from detectors.empathy.emotion import CLASSES, EMOTION_PATH, sentiment_analyzer, vader_features
from detectors.features import BACKENDS, SentenceEncoder
from pipeline.eval.empathy_emotions import read_goemotions, single_label

HIDDEN = 256
EPOCHS = 20
WEIGHT_DECAY = 1e-2
DROPOUT = 0.2
LEARNING_RATE = 2e-3
CLASS_WEIGHT_POWER = 0.5
FOLDS = 5
SEED = 0
WRITTEN = EMOTION_PATH.parent / "emotions.txt"
WRITTEN_WEIGHT = 20.0


def features(texts: list[str], cache: Path, backend: str) -> np.ndarray:
    """[MiniLM vector, VADER scores] per text; the vectors are cached by text and encoder."""
    version = f"{backend}:{SentenceEncoder.vectors_version}"
    key = hashlib.sha256("\n".join([version, *texts]).encode()).hexdigest()[:16]
    file = cache / f"emotion_vectors_{key}.npy"
    if file.is_file():
        emb = np.load(file)
    else:
        emb = SentenceEncoder(backend=backend, cache_size=0).encode(texts)
        cache.mkdir(parents=True, exist_ok=True)
        np.save(file, emb)
    vader = sentiment_analyzer()
    return np.hstack([emb, np.stack([vader_features(vader, t) for t in texts])])


def written(path: Path = WRITTEN) -> tuple[list[str], np.ndarray]:
    """The user sentences we wrote, with their class (frustration -> anger)."""
    texts, labels = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0] == "user":
            texts.append(parts[2])
            labels.append(CLASSES.index("anger" if parts[1] == "frustration" else parts[1]))
    return texts, np.array(labels)


def train_mlp(x: np.ndarray, y: np.ndarray, w: np.ndarray, seed: int = SEED
              ) -> dict[str, np.ndarray]:
    """The MLP on rows ``x`` with classes ``y`` and sample weights ``w``."""
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    xt, yt = torch.tensor(x, dtype=torch.float32), torch.tensor(y)
    wt = torch.tensor(w, dtype=torch.float32)
    counts = np.bincount(y, minlength=len(CLASSES))
    weight = torch.tensor((counts.max() / counts) ** CLASS_WEIGHT_POWER, dtype=torch.float32)
    hidden, out = torch.nn.Linear(x.shape[1], HIDDEN), torch.nn.Linear(HIDDEN, len(CLASSES))
    net = torch.nn.Sequential(torch.nn.Dropout(DROPOUT), hidden, torch.nn.ReLU(),
                              torch.nn.Dropout(DROPOUT), out)
    opt = torch.optim.AdamW(net.parameters(), lr=LEARNING_RATE, weight_decay=WEIGHT_DECAY)
    loss = torch.nn.CrossEntropyLoss(weight=weight, reduction="none")
    gen = torch.Generator().manual_seed(seed)
    for _ in range(EPOCHS):
        order = torch.randperm(len(yt), generator=gen)
        for i in range(0, len(yt), 256):
            idx = order[i:i + 256]
            opt.zero_grad()
            (loss(net(xt[idx]), yt[idx]) * wt[idx]).sum().div(wt[idx].sum()).backward()
            opt.step()
    arrays = {"w1": hidden.weight, "b1": hidden.bias, "w2": out.weight, "b2": out.bias}
    return {k: v.detach().numpy().astype(np.float32) for k, v in arrays.items()}


def probs(arrays: dict[str, np.ndarray], x: np.ndarray, bias: np.ndarray | None = None
          ) -> np.ndarray:
    h = np.maximum(x @ arrays["w1"].T + arrays["b1"], 0.0)
    z = h @ arrays["w2"].T + arrays["b2"] + (0.0 if bias is None else bias)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def macro_f1(y: np.ndarray, pred: np.ndarray) -> float:
    from sklearn.metrics import f1_score

    return float(f1_score(y, pred, average="macro", labels=list(range(len(CLASSES)))))


def tune_bias(p: np.ndarray, y: np.ndarray, rounds: int = 3) -> np.ndarray:
    """Per-class log-prior shifts for macro-F1, by coordinate search on out-of-fold
    probabilities."""
    grid = np.round(np.linspace(-1.5, 1.5, 31), 2)
    logp, bias = np.log(p + 1e-9), np.zeros(p.shape[1])
    for _ in range(rounds):
        for k in range(p.shape[1]):
            scores = []
            for v in grid:
                trial = bias.copy()
                trial[k] = v
                scores.append(macro_f1(y, (logp + trial).argmax(1)))
            bias[k] = grid[int(np.argmax(scores))]
    return bias


def out_of_fold(x: np.ndarray, y: np.ndarray, xw: np.ndarray, yw: np.ndarray) -> np.ndarray:
    """Out-of-fold probabilities of the GoEmotions rows ``x``; the written rows ``xw`` are in
    every fold's training part."""
    from sklearn.model_selection import StratifiedKFold

    p = np.zeros((len(y), len(CLASSES)))
    for k, (tr, te) in enumerate(StratifiedKFold(FOLDS, shuffle=True,
                                                 random_state=SEED).split(x, y)):
        xs, ys, ws = stack(x[tr], y[tr], xw, yw)
        p[te] = probs(train_mlp(xs, ys, ws, SEED + k), x[te])
    return p


def stack(x: np.ndarray, y: np.ndarray, xw: np.ndarray, yw: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    weights = np.concatenate([np.ones(len(y)), np.full(len(yw), WRITTEN_WEIGHT)])
    return np.vstack([x, xw]), np.concatenate([y, yw]), weights


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/evaldata/goemotions-ekman/dev"))
    ap.add_argument("--cache", type=Path, default=Path("/tmp/chatmon-emotion"))
    ap.add_argument("--encoder", choices=BACKENDS, default="onnx-int8")
    ap.add_argument("--out", type=Path, default=EMOTION_PATH)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    names = (args.data / "labels.txt").read_text(encoding="utf-8").split()
    texts, labels = read_goemotions(args.data / "train.tsv", names)
    keep = [(t, single_label(lab)) for t, lab in zip(texts, labels, strict=True)]
    keep = [(t, lab) for t, lab in keep if lab is not None]
    x = features([t for t, _ in keep], args.cache, args.encoder)
    y = np.array([CLASSES.index(lab) for _, lab in keep])  # type: ignore[arg-type]
    texts_w, yw = written()
    xw = features(texts_w, args.cache, args.encoder)
    oof = out_of_fold(x, y, xw, yw)
    bias = tune_bias(oof, y)
    print(f"train: {len(y)} single-label comments, counts {np.bincount(y).tolist()}; "
          f"{len(yw)} written sentences x {WRITTEN_WEIGHT:g}")
    print(f"out-of-fold macro-F1 {macro_f1(y, oof.argmax(1)):.4f}, with the bias "
          f"{macro_f1(y, (np.log(oof + 1e-9) + bias).argmax(1)):.4f}; bias {bias.tolist()}")
    arrays = train_mlp(*stack(x, y, xw, yw))
    if not args.no_write:
        np.savez_compressed(args.out, **{k: v.astype(np.float16) for k, v in arrays.items()},
                            bias=bias.astype(np.float32), classes=np.array(CLASSES))
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
