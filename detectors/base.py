"""The detector contract: frozen values in, frozen findings out, one batch at a time."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["user", "assistant"]


class DetectorError(Exception):
    """Raised by a detector that cannot score (missing optional dependency, bad model dir...)."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One validated chat turn. ``text`` is the raw text; the pipeline decides what is stored."""

    conversation_id: str
    turn: int
    role: Role
    text: str
    ts: datetime
    bot_id: str | None = None
    model: str | None = None
    tenant: str | None = None
    lang: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def key(self) -> tuple[str, int]:
        return (self.conversation_id, self.turn)


@dataclass(frozen=True, slots=True)
class Finding:
    """One scored observation about one turn.

    ``label`` is dotted ``<detector>.<subtype>``. ``span`` holds character offsets into the turn's
    text; ``evidence`` is a small JSON-able dict that must never contain raw PII (record which
    pattern fired and where, not the matched text).
    """

    detector: str
    detector_version: str
    label: str
    score: float
    span: tuple[int, int] | None = None
    evidence: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        if not 0.0 <= self.score <= 1.0:
            raise ValueError(f"{self.label}: score {self.score!r} is outside [0, 1]")
        if not self.label.startswith(self.detector + "."):
            raise ValueError(f"label {self.label!r} must start with {self.detector + '.'!r}")
        if self.span is not None and not 0 <= self.span[0] <= self.span[1]:
            raise ValueError(f"{self.label}: bad span {self.span!r}")


class StateStore(Protocol):
    """Key-value state shared across conversations (per bot). In-process dict in the embedded
    runner, a faust Table in workers. Values must be JSON-serialisable."""

    def get(self, key: str) -> Any | None: ...

    def set(self, key: str, value: Any) -> None: ...


class DictStateStore:
    """The in-process state store used by the embedded runner and by tests."""

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}

    def get(self, key: str) -> Any | None:
        return self._data.get(key)

    def set(self, key: str, value: Any) -> None:
        self._data[key] = value

    def keys(self) -> list[str]:
        return list(self._data)

    def delete(self, key: str) -> None:
        self._data.pop(key, None)


@dataclass(frozen=True, slots=True)
class Context:
    """What a detector may know about a turn besides its text.

    ``history``: earlier turns of the same conversation, oldest first (bounded by the pipeline).
    ``state``: cross-conversation state for stateful detectors, or None where none is kept.
    ``features``: shared per-turn features computed once per batch (see ``detectors.features``);
    a dict from feature name to value so that new features do not change this type.
    """

    history: tuple[Turn, ...] = ()
    state: StateStore | None = None
    features: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def prompt(self) -> tuple[Turn, ...]:
        """The user turn(s) the current turn answers: user turns after the last assistant turn."""
        out: list[Turn] = []
        for t in reversed(self.history):
            if t.role != "user":
                break
            out.append(t)
        return tuple(reversed(out))

    @property
    def prompt_text(self) -> str:
        return "\n".join(t.text for t in self.prompt)


@dataclass(frozen=True, slots=True)
class ScoringInput:
    turn: Turn
    context: Context = field(default_factory=Context)


@runtime_checkable
class Detector(Protocol):
    """Three phases: cheap constructor, ``load()`` once per worker, ``score()`` on batches.

    ``score`` returns exactly one list of findings per input, in input order. ``roles`` names the
    roles the detector scores; the pipeline passes it only turns of those roles. A detector may
    also set ``languages``: the primary language subtags (``"en"``) its models read; the
    pipeline then passes it only turns in those languages (see ``speaks``). Without it, or with
    None, it gets every turn whatever the language.
    """

    name: str
    version: str
    roles: frozenset[str]

    def load(self) -> None: ...

    def score(self, batch: Sequence[ScoringInput]) -> list[list[Finding]]: ...


def primary_language(tag: str | None) -> str | None:
    """The primary subtag of a BCP 47 language tag, lower-cased: ``"en-GB"`` -> ``"en"``,
    ``"pt_BR"`` -> ``"pt"``; None for a missing or blank tag."""
    if tag is None or not tag.strip():
        return None
    return re.split(r"[-_]", tag.strip(), maxsplit=1)[0].lower()


def speaks(detector: object, lang: str | None) -> bool:
    """Whether ``detector`` reads turns in language ``lang`` (a BCP 47 tag, or None: unknown,
    which every detector accepts)."""
    languages = getattr(detector, "languages", None)
    primary = primary_language(lang)
    return languages is None or primary is None or primary in languages


@dataclass(frozen=True, slots=True)
class Example:
    """A canonical case a detector must get right; every registered detector ships some.

    ``prompt`` is the user text the turn answers (for assistant turns), ``expect`` the labels that
    must fire, ``absent`` labels that must not fire (near misses). ``preceded_by`` holds earlier
    replies of the same bot, each in a conversation of its own, scored first: stateful detectors
    (repetition) need them to show a positive case.
    """

    text: str
    expect: frozenset[str] = frozenset()
    absent: frozenset[str] = frozenset()
    role: Role = "assistant"
    prompt: str = ""
    preceded_by: tuple[str, ...] = ()
