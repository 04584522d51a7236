"""The limits an event must meet before anything stores it, and the checks behind them.

Every limit of the store is a validation rule here, so SQLite and PostgreSQL accept exactly the
same events (``tests/test_input_limits.py`` checks these numbers against the column sizes in
``pipeline/store/models.py``). The checks are linear in the input: the JSON nesting depth is
measured before ``json.loads`` recurses, and every walk below uses an explicit stack.

No check here puts an input value in its message: messages name the field and the rule.
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any

MAX_EVENT_BYTES = 1 << 20  # one line, one HTTP event or one Kafka message
MAX_DEPTH = 20  # nesting of objects and arrays; the event object itself is level 1
MAX_METADATA_CHARS = 16_384  # metadata (unknown top-level fields included) as compact JSON
MAX_ID_CHARS = 200  # conversation_id, bot_id, model, tenant: String(200) columns
MAX_LANG_CHARS = 16  # lang: String(16)
MAX_TURN = 2**31 - 1  # turn: Integer, 32-bit signed on PostgreSQL

# bot_id, model and tenant are labels on dashboards and in alerts, stored as sent: a safe
# pattern keeps names, e-mail addresses and contact numbers out of them (no whitespace, no "@",
# no run of 7+ digits but an 8-digit date such as the 20240229 in claude-3-opus-20240229).
LABEL_FIELDS = ("bot_id", "model", "tenant")
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/+-]*")
_DIGIT_RUN = re.compile(r"\d{7,}")
_DATE8 = re.compile(r"(?:19|20)\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])")
# conversation_id is the key of a conversation and the link alerts give: any printable id (a
# UUID, a ticket number) but not an e-mail address or free text. Digit runs are allowed here,
# since ticket numbers are digits.
_CONVERSATION_ID = re.compile(r"[^\s@\x00-\x1f\x7f]+")
# A BCP 47-like tag: "en", "es-MX", "pt_BR", "zh-Hant-TW"; "" counts as no tag.
_LANG = re.compile(r"[A-Za-z]{1,8}(?:[-_][A-Za-z0-9]{1,8})*")
# PostgreSQL text cannot hold NUL; a lone surrogate cannot be encoded as UTF-8 at all.
_NUL = re.compile("\x00")
_SURROGATE = re.compile("[\ud800-\udfff]")
_NUL_OR_SURROGATE = re.compile("[\x00\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_STRING = re.compile(r'"[^"]*"')  # once escapes are gone, a string has no quote inside
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_ESCAPE = re.compile(r'\\(u[0-9a-fA-F]{4}|["\\/bfnrt])')
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r",
                   "t": "\t"}

KNOWN_FIELDS = ("conversation_id", "turn", "role", "text", "ts", "bot_id", "model", "tenant",
                "lang", "metadata")
Problem = tuple[str, str]  # (dead-letter reason, detail)


class TooDeep(ValueError):
    """JSON text nested deeper than allowed (raised before ``json.loads`` recurses)."""


def too_deep(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether JSON ``text`` nests objects/arrays deeper than ``limit`` (brackets inside strings
    do not count). Linear, and mostly at C speed: escapes, then strings, then everything but
    brackets are removed, and ``limit`` rounds take out innermost bracket pairs. A round can take
    two levels out of mixed nesting ({[...]}), so this bounds what ``json.loads`` recurses into;
    ``scan`` checks the exact depth of what it parsed."""
    if text.count("[") + text.count("{") <= limit:
        return False  # the common case: too few brackets to nest that deep
    bare = text.replace("\\\\", "").replace('\\"', "")  # escaped backslashes, then quotes
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", bare))
    for _ in range(limit):
        if len(brackets) <= limit:
            return False
        brackets = brackets.replace("[]", "").replace("{}", "")
    depth = 0
    for ch in brackets:  # what is left is deep, or not JSON: both end this loop early
        depth += 1 if ch in "[{" else -1
        if depth > limit:
            return True
        if depth < 0:
            return False  # unbalanced: json.loads says why
    return False


def loads(text: str, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` that never recurses past ``max_depth`` (``TooDeep``) and takes only
    standard JSON: NaN, Infinity and numbers that overflow a float raise ``ValueError``."""
    if too_deep(text, max_depth):
        raise TooDeep(f"JSON nested deeper than {max_depth} levels")
    return _DECODER.decode(text)


def json_error(exc: ValueError) -> str:
    """The reason a text is not JSON, without quoting the text."""
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc.msg} at character {exc.pos}"
    if isinstance(exc, _NumberError):
        return f"invalid JSON: {exc}"
    return "invalid JSON: an integer has too many digits"  # int() digit limit


def clean_text(text: str, max_depth: int = MAX_DEPTH) -> bool:
    """True when JSON ``text`` cannot parse to a NUL, a lone surrogate or nesting deeper than
    ``max_depth``, judged from the text alone (``scan`` is then not needed): the fast path for
    most events. In valid JSON a parsed NUL or surrogate can only come from an escape."""
    return (text.count("[") + text.count("{") <= max_depth and "\\u0000" not in text
            and not _SURROGATE_ESCAPE.search(text) and not _NUL_OR_SURROGATE.search(text))


def scan(data: Any, max_depth: int = MAX_DEPTH) -> Problem | None:
    """The first nesting, NUL or lone-surrogate problem anywhere in a parsed event (keys
    included), naming the top-level field it is in; an explicit stack, no recursion."""
    stack: list[tuple[Any, int, str]] = [(data, 1, "")]
    while stack:
        value, depth, field = stack.pop()
        if isinstance(value, str):
            problem = _string_problem(value, field or "the event")
            if problem is not None:
                return problem
        elif isinstance(value, dict | list):
            if depth > max_depth:
                return "nesting_too_deep", f"nested deeper than {max_depth} levels"
            items = value.items() if isinstance(value, dict) else ((None, v) for v in value)
            for key, item in items:
                name = field or _field_name(key)
                if isinstance(key, str) and (problem := _string_problem(key, name)):
                    return problem
                stack.append((item, depth + 1, name))
    return None


def field_problem(data: dict[str, Any]) -> Problem | None:
    """Length and pattern rules of the optional string fields and of ``conversation_id``."""
    cid = data.get("conversation_id")
    if isinstance(cid, str) and len(cid) > MAX_ID_CHARS:
        return "field_too_long", f"conversation_id is over {MAX_ID_CHARS} characters"
    if isinstance(cid, str) and not _CONVERSATION_ID.fullmatch(cid):
        return "invalid_conversation_id", ("conversation_id must be 1 or more characters with "
                                           "no space, no control character and no @")
    for name in LABEL_FIELDS:
        value = data.get(name)
        if not isinstance(value, str):
            continue
        if len(value) > MAX_ID_CHARS:
            return "field_too_long", f"{name} is over {MAX_ID_CHARS} characters"
        if not label_ok(value):
            return "invalid_label", (f"{name} must be letters, digits and . _ : / + - (no "
                                     "spaces, no @, no run of 7+ digits but a date)")
    lang = data.get("lang")
    if isinstance(lang, str):
        if len(lang) > MAX_LANG_CHARS:
            return "field_too_long", f"lang is over {MAX_LANG_CHARS} characters"
        if lang and not _LANG.fullmatch(lang):
            return "invalid_lang", "lang must be a BCP 47 language tag such as en or es-MX"
    return None


@functools.lru_cache(maxsize=4096)  # a deployment has few bots, models and tenants
def label_ok(value: str) -> bool:
    """Whether ``value`` may be a bot_id, model or tenant (see ``_LABEL`` above)."""
    if not _LABEL.fullmatch(value):
        return False
    return all(_DATE8.fullmatch(m.group()) for m in _DIGIT_RUN.finditer(value))


def valid_id(value: Any) -> str | None:
    """``value`` when it may be stored as a dead letter's ``conversation_id``, else None."""
    if (isinstance(value, str) and len(value) <= MAX_ID_CHARS
            and _CONVERSATION_ID.fullmatch(value) and not _SURROGATE.search(value)):
        return value
    return None


def valid_turn(value: Any) -> int | None:
    """``value`` when it may be stored as a dead letter's ``turn``, else None."""
    return value if type(value) is int and 0 <= value <= MAX_TURN else None


def unescape_json(text: str) -> str:
    """JSON string escapes (``\\u0040``, ``\\n``...) turned into their characters, so that
    redaction sees ``eve\\u0040example.com`` as the address it is. Works on text that is not
    valid JSON too; a surrogate pair becomes its character."""
    out = _ESCAPE.sub(_unescape_one, text)
    if _SURROGATE.search(out):
        out = out.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return out


def printable(text: str) -> str:
    """``text`` with NUL and lone surrogates replaced by U+FFFD: storable anywhere, and
    encodable as UTF-8 (dead-letter copies of rejected input)."""
    text = _NUL.sub("\ufffd", text)
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def _unescape_one(m: re.Match[str]) -> str:
    esc = m.group(1)
    return chr(int(esc[1:], 16)) if esc[0] == "u" else _SIMPLE_ESCAPES[esc]


def _string_problem(value: str, field: str) -> Problem | None:
    if not _NUL_OR_SURROGATE.search(value):
        return None
    if _NUL.search(value):
        return "nul_character", f"a NUL character in {field}"
    if _SURROGATE.search(value):
        return "lone_surrogate", f"a lone UTF-16 surrogate in {field}"
    return None


def _field_name(key: Any) -> str:
    """A top-level key as a message may name it: unknown keys are user data (kept in metadata),
    so they are called "metadata", never quoted."""
    return key if key in KNOWN_FIELDS else "metadata"


class _NumberError(ValueError):
    pass


def _reject_constant(name: str) -> float:
    raise _NumberError("NaN and Infinity are not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NumberError("a number is out of the range of a double")
    return value


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
