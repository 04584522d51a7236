"""Stereotype-content model: how strongly a sentence ties an attribute to the group that the
attribute is stereotyped about, on the shared MiniLM sentence embeddings.

Built only from statements we wrote ourselves (``data/bias/stereotypes.json``). For every trait
stereotyped about one side of an axis (e.g. "old people / young people": "be bad with technology")
the builder writes the statement twice: with the group that carries the stereotype ("Old people
are bad with technology", "The grandfather is bad with technology") and with the contrast group
swapped in ("Young people are bad with technology"...). It keeps, per trait, two vectors:

- ``rel``: the mean of both versions, i.e. the *attribute* regardless of group, used to find
  which traits a sentence talks about (softmax attention over the closest ``top_k`` traits);
- ``diff``: stereotyped version minus swapped version, i.e. the *group direction for that trait*.

The ``diff`` vectors are centred per axis, so that merely naming a group scores nothing on
average; what raises a sentence's raw score (the attention-weighted projection of its embedding on
the ``diff`` vectors of the traits it talks about) is the pairing of an attribute with the group
it is stereotyped about, which separates the sentences of a stereotype minimal pair in either
direction (stereotype and anti-stereotype). ``LexicalAssociation`` adds the same idea at word
level (group words of one side x trait words of either side), and ``score`` also returns the
plain similarity to the nearest trait ("does this read like a stereotype at all").

``python -m pipeline.training.bias [--backend torch|onnx-int8]`` re-encodes the statements
with the packaged MiniLM on the given encoder backend and writes
``data/bias/stereotype_vectors.npz`` (float16, tagged with the statements' sha256 and the
encoder backend). The shipped vectors are built with ``torch`` (the default here) even though
the pipeline encodes live turns with ``onnx-int8``: vectors built with int8 measured slightly
worse on CrowS-Pairs and BBQ dev (docs/models/bias.md).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

DATA_DIR = Path(__file__).parent / "data"
STATEMENTS = DATA_DIR / "stereotypes.json"
VECTORS = DATA_DIR / "stereotype_vectors.npz"

FORMS_PER_TRAIT = 8  # surface forms (pairs of group phrases) each trait is written with
_MODALS = {"can", "can't", "cannot", "will", "won't", "would", "should", "could", "must", "may",
           "shouldn't", "couldn't", "wouldn't", "mustn't"}
_ADVERBS = {"always", "never", "often", "usually", "rarely", "all", "naturally", "really"}
_IRREGULAR = {"be": "is", "have": "has", "do": "does", "go": "goes", "don't": "doesn't"}


def conjugate(vp: str, plural: bool) -> str:
    """Third-person present of a base-form verb phrase: 'be lazy' -> 'are lazy' / 'is lazy'."""
    words = vp.split()
    for i, w in enumerate(words):
        if w in _ADVERBS:
            continue
        if plural:
            words[i] = "are" if w == "be" else w
        elif w in _IRREGULAR:
            words[i] = _IRREGULAR[w]
        elif w in _MODALS or w == "not":
            pass
        elif re.search(r"(s|sh|ch|x|z|o)$", w):
            words[i] = w + "es"
        elif re.search(r"[^aeiou]y$", w):
            words[i] = w[:-1] + "ies"
        else:
            words[i] = w + "s"
        break
    return " ".join(words)


def _sentence(group: str, vp: str, plural: bool) -> str:
    text = f"{group} {conjugate(vp, plural)}."
    return text[0].upper() + text[1:]


@dataclass(frozen=True, slots=True)
class TraitSpec:
    """One stereotyped trait of one axis with every surface version of it."""

    axis: str
    category: str
    trait: str
    stereo: tuple[str, ...]  # the trait said of the group it is stereotyped about
    swapped: tuple[str, ...]  # the same sentences with the contrast group swapped in


def trait_specs(data: dict[str, Any] | None = None) -> list[TraitSpec]:
    """Every (axis, trait) with its stereotyped and swapped statements, in file order."""
    data = data if data is not None else json.loads(STATEMENTS.read_text())
    out: list[TraitSpec] = []
    for axis in data["axes"]:
        for side, other, key in (("a", "b", "a_traits"), ("b", "a", "b_traits")):
            forms = [(mine, theirs, number == "plural") for number in ("plural", "singular")
                     for mine, theirs in zip(axis[side][number], axis[other][number],
                                             strict=False)]
            for i, trait in enumerate(axis[key]):
                # Each trait is written with FORMS_PER_TRAIT of the axis's surface forms,
                # rotating through the list so that every form is used across the traits.
                k = min(FORMS_PER_TRAIT, len(forms))
                chosen = [forms[(i * k + j) % len(forms)] for j in range(k)]
                stereo = tuple(_sentence(mine, trait, plural) for mine, _, plural in chosen)
                swapped = tuple(_sentence(theirs, trait, plural) for _, theirs, plural in chosen)
                out.append(TraitSpec(axis["name"], axis["category"], trait, stereo, swapped))
    return out


@cache
def axis_categories() -> dict[str, str]:
    """Axis name -> bias category, from the statements file."""
    return {a["name"]: a["category"] for a in json.loads(STATEMENTS.read_text())["axes"]}


def statements_digest() -> str:
    return hashlib.sha256(STATEMENTS.read_bytes()).hexdigest()


_WORD = re.compile(r"[a-z][a-z'\-]+")
_STOP = frozenset(re.findall(r"\S+", (
    "a an the be is are was were to of and or in on at for with from by as their them they it its "
    "that this not no can can't cannot do does don't never always all too very more less than "
    "into out up down about have has get gets just like who what his her he she our your my me "
    "we us any some")))


# Words of the surface forms that do not name a group by themselves ("Middle Eastern", "people
# born in America"); left out of the group-word sets.
_NOT_GROUP = frozenset(re.findall(r"\S+", (
    "east eastern middle born america europe town suburbs projects country club members trailer "
    "park residents families family people person friend neighbor coworker student students "
    "customer customers teacher worker engineer waiter tourist without good other new single "
    "food public housing working school high college lazy eye eyes face uses users "
    "physical third clear skin blue normal well nice suit dress hair money trust funds "
    "construction south little")))


# Third-person pronouns: the gender axis lists them so that the lexical association can tell
# "she" from "he", but a pronoun points at one person ("I hope she recovers soon", "your care is
# making a difference in her life"), not a group, so it does not make a sentence name one.
PRONOUNS = frozenset({"he", "she", "him", "her", "his", "hers", "himself", "herself"})

_AGE = re.compile(r"\b(\d{1,3})[- ]years?[- ]old\b")


def _words(text: str) -> list[str]:
    """Lower-cased words; "a 78-year-old" reads as "elderly", "a 22-year-old" as "young"."""
    text = _AGE.sub(lambda m: "elderly" if int(m.group(1)) >= 60 else
                    "young" if int(m.group(1)) <= 30 else "", text.lower())
    return _WORD.findall(text)


def _stem(word: str) -> str:
    return word[:5]  # crude, but enough to tie "crime"/"crimes"/"criminal" together


class LexicalAssociation:
    """Word-level version of the same idea, from the same statements: which side of an axis the
    sentence names (group words that appear on one side only) times which side its attribute words
    are stereotyped about. Zero when the sentence names no group or uses no trait word."""

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        data = data if data is not None else json.loads(STATEMENTS.read_text())
        self.axes: list[tuple[frozenset[str], frozenset[str], dict[str, float]]] = []
        for axis in data["axes"]:
            words: dict[str, set[str]] = {"a": set(axis.get("a_words", [])),
                                          "b": set(axis.get("b_words", []))}
            for side in ("a", "b"):
                for form in axis[side]["plural"] + axis[side]["singular"]:
                    words[side].update(w for w in _WORD.findall(form.lower()) if w not in _STOP)
            counts: dict[str, list[int]] = {}
            for i, key in enumerate(("a_traits", "b_traits")):
                for trait in axis[key]:
                    for w in set(_WORD.findall(trait.lower())):
                        if w not in _STOP and len(w) > 2:
                            counts.setdefault(_stem(w), [0, 0])[i] += 1
            assoc = {s: (a - b) / (a + b + 1) for s, (a, b) in counts.items() if a != b}
            self.axes.append((frozenset(words["a"] - words["b"] - _NOT_GROUP),
                              frozenset(words["b"] - words["a"] - _NOT_GROUP), assoc))

    def names_group(self, text: str) -> bool:
        """Whether the text uses a group word of any axis (names included; a pronoun alone
        names no group: ``PRONOUNS``)."""
        names = set(_words(text)) - PRONOUNS
        return any(names & a or names & b for a, b, _ in self.axes)

    def score(self, text: str) -> float:
        tokens = _words(text)
        names, stems = set(tokens), {_stem(t) for t in tokens}
        total = 0.0
        for a_words, b_words, assoc in self.axes:
            side = len(names & a_words) - len(names & b_words)
            if side:
                total += max(-1, min(1, side)) * sum(assoc.get(s, 0.0) for s in stems)
        return total


class StereotypeContentModel:
    """Attention over trait vectors plus the lexical association; see the module docstring.

    ``group_prior`` (0 by default) adds back the per-axis mean of the trait directions, i.e. a
    bonus for merely naming the group that has more listed stereotypes; kept as an option for
    the ablation in the model card, off because it flags neutral mentions of groups.
    """

    def __init__(self, top_k: int = 8, temperature: float = 0.06, lexical_weight: float = 0.015,
                 group_prior: float = 0.0, path: Path = VECTORS) -> None:
        self.top_k = top_k
        self.temperature = temperature
        self.lexical_weight = lexical_weight
        self.group_prior = group_prior
        self.path = path
        self.rel: np.ndarray | None = None
        self.diff: np.ndarray | None = None
        self.traits: tuple[str, ...] = ()
        self.lexical: LexicalAssociation | None = None

    def load(self) -> None:
        if self.rel is not None:
            return
        with np.load(self.path, allow_pickle=False) as z:
            rel = z["rel"].astype(np.float32)
            diff = z["diff"].astype(np.float32)
            axes = z["axes"]
            self.traits = tuple(str(t) for t in z["traits"])
        centred = diff.copy()
        for axis in set(axes.tolist()):
            rows = axes == axis
            centred[rows] -= diff[rows].mean(axis=0)
        self.diff = centred + self.group_prior * (diff - centred)
        self.rel = rel
        self.lexical = LexicalAssociation()

    def names_group(self, text: str) -> bool:
        self.load()
        return self.lexical is not None and self.lexical.names_group(text)

    def score(self, vectors: np.ndarray, texts: list[str]
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per sentence: the raw stereotype-content score (0 = neutral; about -0.1..0.3), the
        index of the trait that weighs most in it (a row of ``traits``), and the cosine similarity
        to the closest trait whatever the group (how much it talks like a stereotype at all)."""
        self.load()
        if self.rel is None or self.diff is None or self.lexical is None:
            raise RuntimeError("stereotype vectors did not load")
        if len(vectors) == 0:
            empty = np.zeros(0, dtype=np.float32)
            return empty, np.zeros(0, dtype=np.int64), empty
        x = np.asarray(vectors, dtype=np.float32)
        sim = x @ self.rel.T
        k = min(self.top_k, sim.shape[1])
        top = np.argpartition(-sim, k - 1, axis=1)[:, :k]
        top_sim = np.take_along_axis(sim, top, axis=1)
        w = np.exp((top_sim - top_sim.max(axis=1, keepdims=True)) / self.temperature)
        w /= w.sum(axis=1, keepdims=True)
        proj = np.einsum("nd,nkd->nk", x, self.diff[top])
        raw = (w * proj).sum(axis=1)
        raw += self.lexical_weight * np.array([self.lexical.score(t) for t in texts])
        best = top[np.arange(len(top)), np.argmax(w, axis=1)]
        return raw, best, top_sim.max(axis=1)
