"""Probe scenario suites: the file format, its validation, and paired-scenario expansion.

A suite is one JSON object (the built-in one is ``pipeline/probe/scenarios.json``; ``chatmon
probe --suite FILE`` reads a user's own in the same format)::

    {"suite": "my-suite", "version": "1.0.0",
     "scenarios": [
       {"id": "grief-dog", "category": "grief", "turns": ["My dog died on Sunday..."]},
       {"id": "late-then-scared", "category": "multi_turn", "emotion": "fear",
        "turns": ["Where is my parcel?", "It has my mother's medication in it."]},
       {"id": "pair-age-scam", "category": "paired", "axis": "age",
        "groups": {"older": "78", "younger": "24"},
        "turns": ["I'm {who} years old and I gave my bank details to a caller..."]}]}

``turns`` are the user's messages, one per user turn; the bot's replies come from the endpoint.
A ``paired`` entry expands into one scenario per group (id ``<id>.<group>``), its turns with
``{who}`` replaced by that group's words, so the scenarios differ only in the stated group.
Every problem is a :class:`SuiteError` that names the file, the scenario and the field.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from pipeline.errors import ChatmonError

BUILTIN = Path(__file__).resolve().parent / "scenarios.json"
SLUG = r"^[a-z0-9][a-z0-9_-]{0,63}$"
WHO = "{who}"
MAX_TURNS = 10
MAX_TEXT = 4000


class SuiteError(ChatmonError):
    """A scenario suite file is missing, not JSON, or breaks the format."""


def _slug(v: str | None) -> str | None:
    if v is not None and not re.match(SLUG, v):
        raise ValueError(f"{v!r} is not a slug: lower-case letters, digits, '-' and '_', "
                         "1-64 characters, starting with a letter or digit")
    return v


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    category: str
    turns: tuple[str, ...] = Field(min_length=1, max_length=MAX_TURNS)
    emotion: str | None = None
    axis: str | None = None
    groups: dict[str, str] | None = None
    note: str | None = None

    _slugs = field_validator("id", "category", "emotion", "axis")(_slug)

    @model_validator(mode="after")
    def _check(self) -> _Entry:
        for i, text in enumerate(self.turns):
            if not text.strip():
                raise ValueError(f"turns[{i}] is empty")
            if len(text) > MAX_TEXT:
                raise ValueError(f"turns[{i}] has {len(text)} characters; the limit is {MAX_TEXT}")
        paired = self.category == "paired"
        if paired != (self.groups is not None) or paired != (self.axis is not None):
            raise ValueError("'axis' and 'groups' belong to category 'paired', and it needs both")
        if self.groups is not None:
            self._check_groups(self.groups)
        elif any(WHO in t for t in self.turns):
            raise ValueError(f"{WHO} is only for paired scenarios")
        return self

    def _check_groups(self, groups: dict[str, str]) -> None:
        if len(groups) < 2:
            raise ValueError("a paired scenario needs at least two groups")
        bad = [g for g in groups if not re.match(SLUG, g)]
        if bad:
            raise ValueError(f"group names must be lower-case slugs: {bad}")
        if any(not words.strip() for words in groups.values()):
            raise ValueError("every group needs the words that state it")
        if not any(WHO in t for t in self.turns):
            raise ValueError(f"a paired scenario's turns must say {WHO} where the group goes")


class _SuiteFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    suite: str
    version: str = Field(min_length=1, max_length=32, pattern=r"^[\w.+-]+$")
    about: str | None = None
    scenarios: tuple[dict[str, Any], ...] = Field(min_length=1)

    _slugs = field_validator("suite")(_slug)


@dataclass(frozen=True, slots=True)
class Scenario:
    """One conversation to hold with the bot: the user's turns, sent one after another."""

    id: str
    category: str
    turns: tuple[str, ...]
    emotion: str | None = None
    pair: str | None = None  # paired scenarios: the id of the entry they were expanded from
    axis: str | None = None
    group: str | None = None

    def marker(self) -> dict[str, Any]:
        """What a stored turn's ``metadata.probe`` says about its scenario."""
        out: dict[str, Any] = {"scenario": self.id, "category": self.category}
        for key in ("emotion", "pair", "axis", "group"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


@dataclass(frozen=True, slots=True)
class Suite:
    name: str
    version: str
    scenarios: tuple[Scenario, ...]
    source: str

    def select(self, categories: Iterable[str]) -> Suite:
        wanted = set(categories)
        if not wanted:
            return self
        unknown = wanted - {s.category for s in self.scenarios}
        if unknown:
            raise SuiteError(f"{self.source}: no scenarios of category {sorted(unknown)}; "
                             f"it has {sorted({s.category for s in self.scenarios})}")
        kept = tuple(s for s in self.scenarios if s.category in wanted)
        return Suite(self.name, self.version, kept, self.source)


def load_suite(path: Path | None = None) -> Suite:
    """The built-in suite, or the user's suite at ``path``, validated and expanded."""
    path = path or BUILTIN
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SuiteError(f"cannot read suite {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:  # JSONDecodeError and invalid UTF-8 alike
        raise SuiteError(f"suite {path} is not valid JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise SuiteError(f"suite {path}: expected a JSON object with 'suite', 'version' and "
                         "'scenarios'")
    try:
        head = _SuiteFile.model_validate(raw)
    except ValidationError as exc:
        raise SuiteError(f"suite {path}: {_explain(exc)}") from exc
    scenarios: list[Scenario] = []
    for i, item in enumerate(head.scenarios):
        try:
            entry = _Entry.model_validate(item)
        except ValidationError as exc:
            where = f"scenarios[{i}]" + (f" ({item.get('id')!r})" if "id" in item else "")
            raise SuiteError(f"suite {path}: {where}: {_explain(exc)}") from exc
        scenarios += _expand(entry)
    _unique([s.id for s in scenarios], path)
    return Suite(head.suite, head.version, tuple(scenarios), str(path))


def _expand(entry: _Entry) -> list[Scenario]:
    if entry.groups is None:
        return [Scenario(entry.id, entry.category, entry.turns, entry.emotion)]
    return [Scenario(f"{entry.id}.{group}", entry.category,
                     tuple(t.replace(WHO, words) for t in entry.turns), entry.emotion,
                     pair=entry.id, axis=entry.axis, group=group)
            for group, words in entry.groups.items()]


def _unique(ids: list[str], path: Path) -> None:
    dupes = sorted(i for i, n in Counter(ids).items() if n > 1)
    if dupes:
        raise SuiteError(f"suite {path}: duplicate scenario ids {dupes}")


def _explain(exc: ValidationError) -> str:
    """pydantic's first errors as 'field: message', without its URLs and input dumps."""
    parts = []
    for err in exc.errors()[:3]:
        loc = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)
