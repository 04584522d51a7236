"""The policy file (TOML): thresholds per tenant and bot, and allow-list entries.

```toml
version = "2026-11-a"                       # optional, recorded with the content hash
retention_days = 365                        # optional: stored rows expire (chatmon purge)
[thresholds]                                # global: every tenant and bot
"toxicity.toxicity" = 0.6
[tenants.globex]
retention_days = 30                         # this tenant's contract (docs/privacy.md)
[tenants.globex.thresholds]
"empathy.alignment" = 1.0
[bots."helpdesk-a".thresholds]
"repetition.stock_phrase" = 0.9
[[allow]]
id = "globex-support-line"
tenant = "globex"                           # optional; bot = "..." too
label = "pii.phone_number"                  # a label or "<detector>.*"
literal = "+1 800 555 0100"                 # or pattern = "regex (RE2 syntax)"
reason = "our own support number"
expires = 2027-01-01                        # optional: turns from this time on are not covered
```

Validation is pydantic's; :func:`load_policy_file` turns its errors into one line per problem
naming the key (``tenants.globex.thresholds."empathy.alignmnet"``) and the rule broken.
"""

from __future__ import annotations

import re
import tomllib
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from pipeline.errors import ConfigError

Threshold = Annotated[float, Field(ge=0.0, le=1.0)]
_LABEL = re.compile(r"^[a-z][a-z0-9_]*\.(\*|[a-z0-9_]+)$")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
MAX_LITERAL_CHARS = 500


def _detectors() -> frozenset[str]:
    from detectors.registry import REGISTRY

    return frozenset(REGISTRY) | {"judge"}  # judge.<criterion>: the LLM judge's findings


def check_label(key: str, wildcard_default: bool = True) -> str:
    """A threshold key: ``default``, ``<detector>.*`` or ``<detector>.<subtype>`` of a registered
    detector."""
    if wildcard_default and key == "default":
        return key
    if not _LABEL.match(key):
        raise ValueError(f"{key!r} is not a label: write '<detector>.<subtype>' or "
                         "'<detector>.*'" + (" or 'default'" if wildcard_default else ""))
    detector = key.split(".", 1)[0]
    if detector not in _detectors():
        raise ValueError(f"{key!r}: no detector named {detector!r} (known: "
                         f"{', '.join(sorted(_detectors()))})")
    return key


# A threshold key, checked one by one so that every bad key gets its own error line.
LabelKey = Annotated[str, AfterValidator(check_label)]


class Layer(BaseModel):
    """The thresholds of one tenant or one bot."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    thresholds: dict[LabelKey, Threshold] = Field(default_factory=dict)


# Days stored rows are kept (pipeline/lifecycle/retention.py); unset: kept until deleted.
RetentionDays = Annotated[int, Field(ge=1, le=36_500)]


class TenantLayer(Layer):
    """A tenant's thresholds and its retention (contracts differ per customer)."""

    retention_days: RetentionDays | None = None


class AllowEntry(BaseModel):
    """Suppresses a finding that would be flagged when its text matches (see ``engine.py``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    label: str
    reason: str = Field(min_length=1)
    tenant: str | None = None
    bot: str | None = None
    literal: str | None = Field(default=None, min_length=1, max_length=MAX_LITERAL_CHARS)
    pattern: str | None = Field(default=None, min_length=1, max_length=MAX_LITERAL_CHARS)
    expires: datetime | None = None

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not _ID.match(value):
            raise ValueError("an id is 1-64 letters, digits and _ . : - (it is stored with "
                             "every finding the entry suppresses)")
        return value

    @field_validator("label")
    @classmethod
    def _label(cls, value: str) -> str:
        return check_label(value, wildcard_default=False)

    @field_validator("reason")
    @classmethod
    def _reason(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("say why the entry exists")
        return value

    @field_validator("expires", mode="before")
    @classmethod
    def _expires(cls, value: Any) -> Any:
        # A TOML date means the start of that day (UTC); a time without offset is UTC.
        if isinstance(value, date) and not isinstance(value, datetime):
            return datetime.combine(value, time(), UTC)
        if isinstance(value, datetime) and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None:
            compile_pattern(value)
        return value

    @model_validator(mode="after")
    def _one_matcher(self) -> AllowEntry:
        if (self.literal is None) == (self.pattern is None):
            raise ValueError("give exactly one of literal or pattern (the text the finding "
                             "is about)")
        return self


class PolicyFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    version: str | None = Field(default=None, min_length=1, max_length=40)
    retention_days: RetentionDays | None = None
    thresholds: dict[LabelKey, Threshold] = Field(default_factory=dict)
    tenants: dict[str, TenantLayer] = Field(default_factory=dict)
    bots: dict[str, Layer] = Field(default_factory=dict)
    allow: list[AllowEntry] = Field(default_factory=list)

    @field_validator("tenants", "bots")
    @classmethod
    def _names(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name in value:
            if not name.strip():
                raise ValueError("an empty tenant or bot name matches nothing")
        return value

    @model_validator(mode="after")
    def _unique_ids(self) -> PolicyFile:
        seen: set[str] = set()
        for entry in self.allow:
            if entry.id in seen:
                raise ValueError(f"allow-list id {entry.id!r} is used twice")
            seen.add(entry.id)
        return self


def compile_pattern(pattern: str) -> Any:
    """An RE2 regex: linear time in the text, so a pattern cannot hang a worker on hostile
    input (Python's ``re`` backtracks), and no timeout that would make a finding depend on load."""
    import re2

    options = re2.Options()
    options.log_errors = False  # the error is ours to report, not a line on stderr
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        why = exc.args[0].decode(errors="replace") if exc.args and isinstance(
            exc.args[0], bytes) else str(exc)
        raise ValueError(f"not a valid RE2 pattern ({why}); RE2 has no look-arounds or "
                         "back-references") from None


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if part == "[key]":  # pydantic's marker for "the key itself is bad"
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z0-9_-]+", part):
            out += f".{part}" if out else part
        else:
            out += f'."{part}"' if out else f'"{part}"'
    return out or "(file)"


_THRESHOLD_ERRORS = frozenset({"less_than_equal", "greater_than_equal", "float_parsing",
                               "float_type"})


def format_errors(exc: ValidationError) -> list[str]:
    """One line per problem: where in the file, then what rule it breaks."""
    lines = []
    for err in exc.errors(include_url=False):
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] in _THRESHOLD_ERRORS and "thresholds" in err["loc"]:
            msg = f"a threshold is a number from 0 to 1, like the scores (got {err['input']!r})"
        elif err["type"] == "extra_forbidden":
            msg = "unknown key (known: version, retention_days, thresholds, tenants, bots, " \
                  "allow; tenants take thresholds and retention_days, bots thresholds; allow " \
                  "entries take id, label, reason, tenant, bot, literal, pattern, expires)"
        lines.append(f"{_where(tuple(err['loc']))}: {msg}")
    return lines


class PolicyFileError(ConfigError):
    def __init__(self, path: Path, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        super().__init__(f"policy file {path}: " + "; ".join(problems))


def parse_policy(text: str, path: Path) -> PolicyFile:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PolicyFileError(path, [f"not valid TOML: {exc}"]) from None
    try:
        return PolicyFile.model_validate(data)
    except ValidationError as exc:
        raise PolicyFileError(path, format_errors(exc)) from None


def load_policy_file(path: Path) -> tuple[PolicyFile, bytes]:
    """The validated file and its bytes (their hash is part of the policy version)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise PolicyFileError(path, [f"cannot read it: {exc.strerror or exc}"]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PolicyFileError(path, ["not UTF-8 text"]) from None
    return parse_policy(text, path), raw
