"""Benign support and warm replies for the toxicity heads: negatives to train on, and the
flags-per-1,000 check on replies a model never saw.

The offline heads first learnt "toxic" from tweets, Wikipedia comments and statements about
groups; none of them is a support reply, and short second-person questions ("Where are you?",
"What time would you like?") sat close to short hostile tweets in both the embedding and the
n-grams. Support replies as negatives, from several bots and domains, are the fix at the cause.

Trained on (licences allow shipping weights trained on them; see docs/models/toxicity.md):
- ``support``: support-benign dev assistant replies (Taskmaster-4 coffee bot, CC BY 4.0);
- ``sgd``: the SGD assistant replies of cs-transcripts (Schema-Guided Dialogue, Rastogi et al.
  2020, CC BY-SA 4.0);
- our own support and warm replies are in ``written_examples.jsonl`` (source ``written``).
Measured only, never trained on: the Welivita-Pu ChatGPT replies (no licence, built on
EmpatheticDialogues, CC BY-NC), and the ABCD/Taskmaster-1 replies of cs-transcripts.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from pipeline.bench.corpus import read_source

# Benign training sources, and the conversation each reply came from (for grouped folds).
TRAINED = ("support", "sgd")


def support_replies(evaldata: Path) -> list[tuple[str, str]]:
    """(text, conversation id) of every assistant reply of support-benign dev."""
    out = []
    with (evaldata / "support-benign" / "dev" / "turns.jsonl").open() as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                if row["role"] == "assistant" and row["text"].strip():
                    out.append((row["text"], str(row["conversation_id"])))
    return out


def cs_replies(evaldata: Path, bot: str | None = None) -> list[tuple[str, str]]:
    """(text, conversation id) of the cs-transcripts assistant replies, as ``chatmon run`` reads
    them; ``bot`` "sgd" keeps the SGD ones (the only part we train on)."""
    events = read_source(evaldata / "cs-transcripts" / "replay_turns.jsonl")
    return [(e["text"], str(e["conversation_id"])) for e in events
            if e["role"] == "assistant" and (bot is None or e["bot_id"] == f"replay-{bot}")]


def welivita_replies(evaldata: Path, column: str) -> list[str]:
    """One of the Welivita-Pu ChatGPT reply columns (measure only: no licence to train on)."""
    file = evaldata / "empathy-welivita-pu" / "dev" / "dataset_and_ratings.csv"
    with file.open(newline="", encoding="utf-8") as f:
        return [r[column].strip() for r in csv.DictReader(f)]


def unique(replies: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Each text once (the first conversation it came in): boilerplate repeated in hundreds of
    conversations would otherwise outweigh the rest of the set."""
    seen: dict[str, str] = {}
    for text, conv in replies:
        seen.setdefault(text, conv)
    return list(seen.items())


def benign_sets(evaldata: Path) -> dict[str, list[str]]:
    """Every benign reply set the flag rate is reported on, one entry per reply (repeats kept:
    a rate per 1,000 replies counts what a team would see)."""
    return {
        "support-benign": [t for t, _ in support_replies(evaldata)],
        "cs-transcripts": [t for t, _ in cs_replies(evaldata)],
        "welivita-plain": welivita_replies(evaldata, "response_chatgpt"),
        "welivita-empathy": welivita_replies(evaldata, "response_chatgpt_empathy"),
    }


# Which benign training source each set must be left out of training to be measured unseen.
HELD_OUT = {"support-benign": "support", "cs-transcripts": "sgd"}


def flags(probs: dict[str, np.ndarray], obscene: np.ndarray,
          cuts: dict[str, float]) -> dict[str, np.ndarray]:
    """Per label, which replies reach the shipped cut; ``severe_toxicity`` derived as the
    detector derives it (``detectors.toxicity.offline.severe``)."""
    severe = probs["toxicity"] * np.maximum.reduce(
        [probs["threat"], probs["identity_attack"], obscene * probs["insult"]])
    scores = {**probs, "obscene": obscene, "severe_toxicity": severe}
    return {label: scores[label] >= cuts[label] for label in scores}


def per_1000(flagged: dict[str, np.ndarray]) -> dict[str, float]:
    """Replies flagged per 1,000 (a reply counts once whatever labels it has), and per label."""
    stack = np.stack(list(flagged.values()))
    out = {"any": round(1000 * float(stack.any(axis=0).mean()), 2)}
    out.update({k: round(1000 * float(v.mean()), 2) for k, v in flagged.items() if v.any()})
    return out
