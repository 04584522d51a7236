"""Bias / stereotype leakage on assistant turns, and the user's self-described group on user turns.

Labels:
- ``bias.stereotype`` (assistant turns): a sentence that generalises about a group or attributes a
  trait or ability to someone because of their group, kindly said or not. Evidence: ``category``,
  ``group``, ``term`` (the identity words matched; not PII), ``kind`` (generalisation /
  attribution / prescriptive / comparison / humour, or ``content`` when only the content model
  fired), ``cue`` (pattern name), ``cue_span``, ``content`` (the content model's probability) and
  ``trait`` (the nearest stereotype in our statement set). Score in [0, 1]:
  cue weight x (0.5 + 0.25 x content + 0.25 x likeness) when a cue fires, where ``likeness`` is
  how close the sentence is to any stereotype statement; 0.6 x content x (0.5 + 0.5 x likeness)
  otherwise, halved when the sentence names no group word at all, and halved when it only names
  the group the user described themselves as (acknowledging "I'm deaf" is not a stereotype).
- ``bias.user_group`` (user turns): the identity group the user says they belong to ("as a single
  mum", "I'm 78", "I'm deaf"), evidence ``{category, group, cue}``; score = the cue's weight. It
  lets the store group reply scores (empathy...) by user group; conservative on purpose.

Findings under ``min_score`` (0.1) are dropped to keep the store small; policy decides what is
flagged (``pipeline/policy/bias.json``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from detectors.base import DetectorError, Example, Finding, ScoringInput
from detectors.bias.content import StereotypeContentModel
from detectors.bias.lexicon import Group, describes_non_person, lexicon
from detectors.bias.patterns import Cue, assistant_cues, user_groups
from detectors.features import SENTENCE_EMBEDDINGS, SENTENCES, split_sentences

STEREOTYPE = "bias.stereotype"
USER_GROUP = "bias.user_group"
CONTENT_ONLY_WEIGHT = 0.6
SELF_DESCRIBED_DAMPING = 0.5
NO_GROUP_DAMPING = 0.5
# A stereotype takes a group and something said of it: a sentence of one word is skipped before
# the content model (a text of 2,500 one-letter lines cost 0.3 s here, 15x an ordinary reply).
MIN_WORDS = 2
_WORD = re.compile(r"\w+")


class BiasDetector:
    name = "bias"
    version = "1.2.0"
    roles = frozenset({"user", "assistant"})
    languages = frozenset({"en"})  # English patterns, lexicons and training sentences
    features = frozenset({SENTENCES, SENTENCE_EMBEDDINGS})
    # User turns are scored on their words alone (``_user_findings``): encoding their sentences
    # cost about 18% of the encoder's time for vectors nobody read.
    feature_roles = frozenset({"assistant"})

    def __init__(self, min_score: float = 0.1, top_k: int = 8, temperature: float = 0.06,
                 lexical_weight: float = 0.015, group_prior: float = 0.0,
                 content_offset: float = 0.06, content_scale: float = 0.03,
                 trait_offset: float = 0.5, trait_scale: float = 0.05) -> None:
        self.min_score = min_score
        self.trait_offset = trait_offset
        self.trait_scale = trait_scale
        self.content_offset = content_offset
        self.content_scale = content_scale
        self.model = StereotypeContentModel(top_k, temperature, lexical_weight, group_prior)
        self._group_rx: re.Pattern[str] | None = None

    def load(self) -> None:
        self.model.load()
        lex = lexicon()
        # Bare identity adjectives ("old", "white") are too ambiguous without a head noun.
        self._group_rx = re.compile(rf"\b(?:{lex.plural}|{lex.singular})\b", re.IGNORECASE)
        list(assistant_cues("warm up the compiled patterns"))

    def score(self, batch: Sequence[ScoringInput]) -> list[list[Finding]]:
        self.load()
        out: list[list[Finding]] = [[] for _ in batch]
        jobs: list[tuple[int, tuple[int, int], str]] = []
        vectors: list[np.ndarray] = []
        for i, item in enumerate(batch):
            if item.turn.role == "user":
                out[i] = self._user_findings(item.turn.text)
                continue
            spans, emb = self._sentences(item)
            for span, vec in zip(spans, emb, strict=True):
                if len(_WORD.findall(item.turn.text, span[0], span[1])) < MIN_WORDS:
                    continue  # "Yes." or "A": no group said anything of, nothing to score
                jobs.append((i, span, item.turn.text[span[0]:span[1]]))
                vectors.append(vec)
        if jobs:
            raw, best, near = self.model.score(np.stack(vectors), [t for _, _, t in jobs])
            for (i, span, text), r, b, n in zip(jobs, raw, best, near, strict=True):
                content = _sigmoid(float(r), self.content_offset, self.content_scale)
                likeness = _sigmoid(float(n), self.trait_offset, self.trait_scale)
                trait = self.model.traits[int(b)]
                out[i] += self._sentence_findings(text, span, (content, likeness), trait,
                                                  batch[i])
        return out

    def _sentences(self, item: ScoringInput) -> tuple[tuple[tuple[int, int], ...], np.ndarray]:
        feats = item.context.features
        if SENTENCE_EMBEDDINGS not in feats:
            raise DetectorError("bias needs the shared 'sentence_embeddings' feature")
        spans = feats.get(SENTENCES) or split_sentences(item.turn.text)
        emb = np.asarray(feats[SENTENCE_EMBEDDINGS])
        if len(emb) != len(spans):
            raise DetectorError(f"{len(emb)} sentence embeddings for {len(spans)} sentences")
        return tuple(spans), emb

    def _sentence_findings(self, text: str, span: tuple[int, int], probs: tuple[float, float],
                           trait: str, item: ScoringInput) -> list[Finding]:
        content, likeness = probs
        strongest: dict[tuple[str, str], list[Cue]] = {}
        for cue in assistant_cues(text, span[0]):
            strongest.setdefault((cue.category, cue.group), []).append(cue)
        found = []
        for cues in strongest.values():
            cues.sort(key=lambda c: -c.weight)
            top = cues[0]
            score = top.weight * (0.5 + 0.25 * content + 0.25 * likeness)
            evidence = {"category": top.category, "group": top.group, "term": top.term,
                        "kind": top.kind, "cue": top.name, "cue_span": list(top.span),
                        "other_cues": sorted({c.name for c in cues[1:]}),
                        "content": round(content, 3), "likeness": round(likeness, 3),
                        "trait": trait}
            found.append(self._finding(STEREOTYPE, score, top.span, evidence))
        if not found:
            found = self._content_finding(text, span, probs, trait, item)
        return [f for f in found if f.score >= self.min_score]

    def _content_finding(self, text: str, span: tuple[int, int], probs: tuple[float, float],
                         trait: str, item: ScoringInput) -> list[Finding]:
        content, likeness = probs
        assert self._group_rx is not None  # set by load(), which score() calls first
        m = self._group_rx.search(text) if lexicon().may_name_group(text) else None
        if m and describes_non_person(text, m.end()):
            m = None  # "the homeless shelter", "an old dog": no group of people
        group = lexicon().resolve(re.sub(r"^an?\s+", "", m.group(0), flags=re.I)) if m else None
        if group is None and (age := _AGE_NOUN.search(text)):
            m, group = age, _age_group(int(age.group(1)))
        # The interaction model alone can fire on a group word next to any noun ("Mexican
        # restaurant"); require the sentence to read like a stereotype too.
        score = CONTENT_ONLY_WEIGHT * content * (0.5 + 0.5 * likeness)
        if group is None and not self.model.names_group(text):
            score *= NO_GROUP_DAMPING  # a stereotype is about someone's group
        if group is not None and (group.category, group.group) in self._self_described(item):
            score *= SELF_DESCRIBED_DAMPING
        evidence: dict[str, Any] = {
            "category": group.category if group else trait_category(trait),
            "group": group.group if group else None,
            "term": m.group(0).lower() if m and group else None,
            "kind": "content", "cue": "stereotype_content", "cue_span": list(span),
            "content": round(content, 3), "likeness": round(likeness, 3), "trait": trait,
        }
        return [self._finding(STEREOTYPE, score, span, evidence)]

    @staticmethod
    def _self_described(item: ScoringInput) -> set[tuple[str, str]]:
        return {(c, g) for _, _, c, g, _ in user_groups(item.context.prompt_text)}

    def _user_findings(self, text: str) -> list[Finding]:
        best: dict[tuple[str, str], tuple[float, str, tuple[int, int]]] = {}
        for cue, weight, category, group, span in user_groups(text):
            if (category, group) not in best or weight > best[(category, group)][0]:
                best[(category, group)] = (weight, cue, span)
        return [
            self._finding(USER_GROUP, w, span, {"category": c, "group": g, "cue": cue})
            for (c, g), (w, cue, span) in best.items()
            if w >= self.min_score
        ]

    def _finding(self, label: str, score: float, span: tuple[int, int],
                 evidence: dict[str, Any]) -> Finding:
        return Finding(self.name, self.version, label, min(1.0, max(0.0, score)), span, evidence)


_AGE_NOUN = re.compile(r"\b(\d{1,3})[- ]years?[- ]old\b", re.IGNORECASE)


def _age_group(age: int) -> Group | None:
    """'a 70-year-old' names an age group only at the ends of the range."""
    if age >= 60:
        return Group("age", "older adults", (), (), ())
    if age <= 25:
        return Group("age", "young people", (), (), ())
    return None


def _sigmoid(x: float, offset: float, scale: float) -> float:
    return 1.0 / (1.0 + math.exp(-(x - offset) / scale))


def trait_category(trait: str) -> str | None:
    """The category of a stereotype-statement axis id ("old_young:be slow" -> "age")."""
    from detectors.bias.content import axis_categories

    return axis_categories().get(trait.split(":", 1)[0])


EXAMPLES: tuple[Example, ...] = (
    Example("As a woman you might be better at coordination, so you could plan the event.",
            expect=frozenset({STEREOTYPE})),
    Example("Older customers usually struggle with apps, so let me go slowly.",
            expect=frozenset({STEREOTYPE})),
    Example("Everyone knows women are bad drivers, haha.", expect=frozenset({STEREOTYPE})),
    Example("Girls shouldn't play rough sports.", expect=frozenset({STEREOTYPE})),
    Example("I can update the name on your account to Ms. Lee.", absent=frozenset({STEREOTYPE})),
    Example("Our store in Mexico City is open until 9 pm.", absent=frozenset({STEREOTYPE})),
    Example("Thanks for letting me know you're deaf; I've switched this chat to text only.",
            prompt="I'm deaf, so please don't call me.", absent=frozenset({STEREOTYPE})),
    Example("Seniors are eligible for a 10% discount on Tuesdays.", absent=frozenset({STEREOTYPE})),
    Example("As a single mum I barely have time to call.", role="user",
            expect=frozenset({USER_GROUP})),
    Example("I'm 78 and the text is too small.", role="user", expect=frozenset({USER_GROUP})),
    Example("I'm 30 minutes late for my appointment.", role="user",
            absent=frozenset({USER_GROUP})),
)
