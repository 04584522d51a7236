"""Which language a turn is in, for the detectors that read only some (``Detector.languages``).

A turn's own ``lang`` tag wins. Without one, its prior is the ``lang`` of the latest earlier
turn of its conversation that had one, else ``Settings.default_lang``; the text then overrides
the prior only when a language identifier is sure it is another language: py3langid's naive
Bayes model (BSD-3-Clause, bundled in the PyPI package, 97 languages, about 0.1 ms per turn)
ranks another language first *and* gives the prior at most ``max_prior`` (0.001). On
15,009 English turns (support dialogues, Reddit replies, persuasion dialogues from the shared dev
data) that rule moved none away from English; on 54 support sentences we wrote in 11 other
languages it found 50 (missed: the shortest French and Dutch ones, which stay at the prior).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from detectors.base import Turn, primary_language
from pipeline.errors import MissingExtraError

MAX_PRIOR = 0.001


class LanguageGuesser:
    """Loaded on first use (0.7 s); thread-safe after that."""

    def __init__(self, max_prior: float = MAX_PRIOR) -> None:
        self.max_prior = max_prior
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        with self._lock:
            if self._model is None:
                try:
                    from py3langid.langid import MODEL_FILE, LanguageIdentifier
                except ImportError as exc:
                    raise MissingExtraError("py3langid", "nlp") from exc
                self._model = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        return self._model

    def guess(self, text: str, prior: str) -> str:
        """``prior`` unless the text is surely in another language, then that language."""
        ranked = self._load().rank(text)
        best = ranked[0][0]
        if best == prior:
            return prior
        p_prior = next((p for lang, p in ranked if lang == prior), 0.0)
        return best if p_prior <= self.max_prior else prior


def turn_language(turn: Turn, history: Sequence[Turn], default: str | None,
                  guesser: LanguageGuesser | None) -> str | None:
    """The language detectors see ``turn`` in (a primary subtag such as ``"en"``, or None:
    unknown, which every detector reads). See the module docstring for the order."""
    if turn.lang and turn.lang.strip():
        return turn.lang
    prior = next((t.lang for t in reversed(history) if t.lang and t.lang.strip()), default)
    prior = primary_language(prior)
    if guesser is None:
        return prior
    guessed = guesser.guess(turn.text, prior or "en")
    return prior if guessed == (prior or "en") else guessed


_SHARED = LanguageGuesser()


def shared_guesser() -> LanguageGuesser:
    """One model per process (the Kafka worker's two stages share it)."""
    return _SHARED
