"""One review as a reviewer writes it: a line of a sampled batch with ``present`` filled in, or
one object posted to ``/v1/reviews``. Parsing never raises for bad input: a bad line becomes a
:class:`LineError` naming what is wrong, and the other lines go on."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError

# The EPITOME mechanisms, rated 0 (none), 1 (weak), 2 (strong): 0 means the signal is absent.
MECHANISMS = frozenset({"empathy.er", "empathy.ip", "empathy.ex"})
MAX_NOTE_CHARS = 2000
MAX_REVIEWER_CHARS = 100
_FINDING_ID = re.compile(r"^[0-9a-f]{40}$")


class ReviewIn(BaseModel):
    # The sampled line's other fields (score, excerpt...) come back with it and are ignored.
    model_config = ConfigDict(extra="ignore", frozen=True)

    finding_id: StrictStr
    present: StrictBool | None = None
    rating: StrictInt | None = Field(default=None, ge=0, le=2)
    reviewer: StrictStr | None = Field(default=None, max_length=MAX_REVIEWER_CHARS)
    note: StrictStr | None = Field(default=None, max_length=MAX_NOTE_CHARS)
    label: StrictStr | None = None


@dataclass(frozen=True, slots=True)
class Review:
    index: int  # line number in a file (1-based) or position in a posted array (0-based)
    finding_id: str
    present: bool
    rating: int | None
    reviewer: str
    note: str
    label: str | None


@dataclass(frozen=True, slots=True)
class LineError:
    index: int
    error: str

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "error": self.error}


@dataclass(frozen=True, slots=True)
class Unrated:
    """A sampled line nobody has rated yet (``present`` missing or null)."""

    index: int


_MESSAGES = {
    "present": "present must be true or false",
    "rating": "rating must be 0, 1 or 2 (as EPITOME rates the empathy mechanisms)",
    "reviewer": f"reviewer must be a string of at most {MAX_REVIEWER_CHARS} characters",
    "note": f"note must be a string of at most {MAX_NOTE_CHARS} characters",
    "finding_id": "finding_id is required: the 40-hex id from the sampled line",
    "label": "label must be a string",
}


def _explain(exc: ValidationError) -> str:
    fields = []
    for err in exc.errors(include_url=False):
        name = str(err["loc"][0]) if err["loc"] else ""
        msg = _MESSAGES.get(name, f"{name}: {err['msg']}")
        if "input" in err and name in ("present", "rating") and err["type"] != "missing":
            msg += f" (got {json.dumps(err['input'])[:40]})"
        fields.append(msg)
    return "; ".join(dict.fromkeys(fields))


def parse(data: Any, index: int, allow_unrated: bool) -> Review | LineError | Unrated:
    """One review object (already JSON-decoded)."""
    if not isinstance(data, dict):
        return LineError(index, f"a review is a JSON object, not {type(data).__name__}")
    try:
        item = ReviewIn.model_validate(data)
    except ValidationError as exc:
        return LineError(index, _explain(exc))
    if not _FINDING_ID.match(item.finding_id):
        return LineError(index, f"finding_id {item.finding_id[:60]!r} is not a finding id "
                                "(40 hex characters, as in the sampled line)")
    if item.present is None:
        if allow_unrated:
            return Unrated(index)
        return LineError(index, "present must be true or false (is the signal really there?)")
    return Review(index, item.finding_id, item.present, item.rating,
                  (item.reviewer or "").strip(), (item.note or "").strip(), item.label)


def contradiction(label: str, review: Review) -> str | None:
    """For an EPITOME mechanism, rating 0 means absent and 1-2 present: say so when they
    disagree."""
    if label in MECHANISMS and review.rating is not None and (review.rating > 0) != review.present:
        return (f"{label}: rating {review.rating} contradicts present="
                f"{str(review.present).lower()} (rating 0 means the mechanism is absent)")
    return None


def parse_line(line: str, index: int) -> Review | LineError | Unrated | None:
    """One line of a JSON Lines file; None for a blank line."""
    if not line.strip():
        return None
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        return LineError(index, f"not JSON: {exc.msg} at column {exc.colno}")
    return parse(data, index, allow_unrated=True)
