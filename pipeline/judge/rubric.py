"""Judge rubrics: TOML files that say what the judge rates and how (docs/judge.md).

```toml
criterion = "refund_promise"        # the finding's label is judge.refund_promise
version = "1"                       # bump it when the text changes: the cache and ids key on it
title = "Promises a refund"
description = "Does the reply promise a refund or compensation?"
compare_to = "manipulation.score"   # optional: the classifier label it is measured against
[scale]
min = 0
max = 1
[[levels]]
value = 0
definition = "No promise of money back."
[[levels]]
value = 1
definition = "Promises or strongly implies a refund."
[[examples]]                        # optional, shown to the judge
user = "My order never came."
reply = "I'll refund you today."
score = 1
reasoning = "It promises a refund outright."
```

Every level of the scale has exactly one definition. Validation is pydantic's, reported one
line per problem naming the key (``levels[1].definition: ...``). The shipped rubrics live in
``pipeline/judge/rubrics/`` and are named by their file stem (``epitome_er``).
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from pipeline.errors import ConfigError

SHIPPED_DIR = Path(__file__).resolve().parent / "rubrics"
# What `chatmon judge` runs when no --rubric is given: the shipped empathy rubrics.
DEFAULT_RUBRICS = ("epitome_er", "epitome_ip", "epitome_ex", "empathy")
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,47}$")
_LABEL = re.compile(r"^[a-z][a-z0-9_]*\.[a-z0-9_]+$")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,23}$")
MAX_TEXT = 4000
MAX_LEVELS = 11


class Scale(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    min: int = Field(ge=0, le=100)
    max: int = Field(ge=1, le=100)

    @model_validator(mode="after")
    def _order(self) -> Scale:
        if not 1 <= self.max - self.min <= MAX_LEVELS - 1:
            raise ValueError(f"max must be above min, with at most {MAX_LEVELS} levels")
        return self

    @property
    def levels(self) -> range:
        return range(self.min, self.max + 1)

    @property
    def ordinal(self) -> bool:
        """More than two levels: rated on an ordered scale (quadratic-weighted kappa)."""
        return self.max - self.min > 1


class Level(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    value: int
    name: str = Field(default="", max_length=60)
    definition: str = Field(min_length=1, max_length=MAX_TEXT)


class Example(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    user: str = Field(default="", max_length=MAX_TEXT)
    reply: str = Field(min_length=1, max_length=MAX_TEXT)
    score: int
    reasoning: str = Field(min_length=1, max_length=MAX_TEXT)


class Rubric(BaseModel):
    """One criterion the judge rates, on an integer scale with a definition per level."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    criterion: str
    version: str
    title: str = Field(min_length=1, max_length=120)
    description: str = Field(min_length=1, max_length=MAX_TEXT)
    compare_to: str | None = None
    scale: Scale
    levels: list[Level] = Field(min_length=2)
    examples: list[Example] = Field(default_factory=list, max_length=10)

    @field_validator("criterion")
    @classmethod
    def _criterion(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError("a criterion is 1-48 lower-case letters, digits and _, starting "
                             "with a letter (the label is judge.<criterion>)")
        return value

    @field_validator("version")
    @classmethod
    def _version(cls, value: str) -> str:
        if not _VERSION.match(value):
            raise ValueError("a version is 1-24 letters, digits and _ . - (findings and the "
                             "cache are keyed on it: bump it when the rubric changes)")
        return value

    @field_validator("compare_to")
    @classmethod
    def _compare_to(cls, value: str | None) -> str | None:
        if value is not None and not _LABEL.match(value):
            raise ValueError(f"{value!r} is not a label: write '<detector>.<subtype>', e.g. "
                             "'empathy.er'")
        return value

    # Field validators (not one for the model) so that each problem is reported with the
    # others: pydantic skips a model validator once a field failed.
    @field_validator("levels")
    @classmethod
    def _levels_cover_the_scale(cls, levels: list[Level], info: ValidationInfo) -> list[Level]:
        scale = info.data.get("scale")
        values = sorted(lv.value for lv in levels)
        if scale is not None and values != list(scale.levels):
            raise ValueError(f"levels must define each value from {scale.min} to {scale.max} "
                             f"exactly once (got {values})")
        return levels

    @field_validator("examples")
    @classmethod
    def _examples_on_the_scale(cls, examples: list[Example],
                               info: ValidationInfo) -> list[Example]:
        scale = info.data.get("scale")
        for i, ex in enumerate(examples):
            if scale is not None and ex.score not in scale.levels:
                raise ValueError(f"examples[{i}].score {ex.score} is outside the scale "
                                 f"{scale.min}-{scale.max}")
        return examples

    @property
    def label(self) -> str:
        return f"judge.{self.criterion}"

    @property
    def key(self) -> str:
        """``criterion@version``: with the judge model, what findings and the cache key on."""
        return f"{self.criterion}@{self.version}"

    def score(self, rating: int) -> float:
        """A rating as a finding score in [0, 1]."""
        return (rating - self.scale.min) / (self.scale.max - self.scale.min)

    def level_of(self, score: float) -> int:
        """A classifier's [0, 1] score placed on this scale (nearest level)."""
        span = self.scale.max - self.scale.min
        return self.scale.min + round(min(1.0, max(0.0, score)) * span)


class RubricError(ConfigError):
    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(f"rubric {source}: " + "; ".join(problems))


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(file)"


def format_errors(exc: ValidationError) -> list[str]:
    """One line per problem: where in the file, then the rule it breaks."""
    lines = []
    for err in exc.errors(include_url=False):
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = ("unknown key (known: criterion, version, title, description, compare_to, "
                   "scale, levels, examples)")
        lines.append(f"{_where(tuple(err['loc']))}: {msg}")
    return lines


def parse_rubric(text: str, source: str) -> Rubric:
    try:
        data: Any = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RubricError(source, [f"not valid TOML: {exc}"]) from None
    try:
        return Rubric.model_validate(data)
    except ValidationError as exc:
        raise RubricError(source, format_errors(exc)) from None


def load_rubric_file(path: Path) -> Rubric:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RubricError(str(path), [f"cannot read it as UTF-8 text: {exc}"]) from None
    return parse_rubric(text, str(path))


def shipped_names() -> list[str]:
    return sorted(p.stem for p in SHIPPED_DIR.glob("*.toml"))


@cache
def shipped(name: str) -> Rubric:
    path = SHIPPED_DIR / f"{name}.toml"
    if not path.is_file():
        raise RubricError(name, [f"no shipped rubric named {name!r} (shipped: "
                                 f"{', '.join(shipped_names())}); or give a .toml file"])
    return load_rubric_file(path)


def resolve(names: tuple[str, ...] | list[str]) -> list[Rubric]:
    """Rubrics by shipped name or file path (the shipped empathy rubrics when none is named);
    two with one criterion are an error (their findings would share a label)."""
    out: list[Rubric] = []
    for name in names or DEFAULT_RUBRICS:
        is_file = name.endswith(".toml") or "/" in name
        out.append(load_rubric_file(Path(name)) if is_file else shipped(name))
    seen: dict[str, str] = {}
    for r in out:
        if r.criterion in seen:
            raise RubricError(r.criterion, [f"two rubrics rate criterion {r.criterion!r}; "
                                            "give each its own"])
        seen[r.criterion] = r.version
    return out
