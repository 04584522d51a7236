"""Sensitive echo: a bot reply that displays a full card number, a full US SSN, an IBAN, or a
password / one-time code the user typed earlier in the conversation (``pii.sensitive_echo``).

Echoing what the user gave is not a leak (``pii.leak``), but a support bot must never display
these values in full, whoever typed them first: PCI DSS allows at most the first six and the
last four digits of a card number. A masked value ("ending 1111", "4111 11** **** 1111",
"***-**-6789") is not an echo.

Data plus hooks, like the recognizers: named patterns, each with a validation hook (brand
prefix and Luhn for cards, the SSA's ranges for SSNs, ISO 13616 mod 97 for IBANs). Every
pattern is linear-time: bounded repetitions, no nested quantifiers. Evidence names the kind,
the pattern and whether the user gave the value; never the value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from detectors.base import Context, Example, Finding, Turn

LABEL = "pii.sensitive_echo"
SCORE = {"CREDIT_CARD": 1.0, "US_SSN": 0.95, "IBAN_CODE": 1.0, "SECRET": 0.9}
# 13-19 digits, single spaces or hyphens between them allowed.
_CARD = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")
# The issuer prefixes of the card brands (Visa, Mastercard, Amex, Discover, Diners, JCB,
# UnionPay, Maestro): an order number of 16 digits rarely starts with one and passes Luhn.
_BRAND = re.compile(r"4|5[1-5]|2[2-7]|3[47]|3[068]|35|6011|64[4-9]|65|62|50|5[6-8]|6[37]")
_NOT_A_CARD = re.compile(r"(?i)\b(?:order|tracking|reference|ref|invoice|confirmation|ticket|"
                         r"case|booking|serial)\b[^.\n]{0,25}$")
_CARD_CUE = re.compile(r"(?i)\b(?:card|visa|mastercard|amex|credit|debit|pan)\b")
_SSN = re.compile(r"(?<![\w-])(\d{3})([- ])(\d{2})\2(\d{4})(?![\w-])")
_SSN_BARE = re.compile(r"(?<![\w-])\d{9}(?![\w-])")
_SSN_CUE = re.compile(r"(?i)\b(?:ssn|social security(?: number)?|social-security)\b[^.\n]{0,20}$")
_IBAN = re.compile(r"(?<![\w])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?(?![\w])")
# A secret the user typed: after a cue ("my password is X", "the code you sent is 123456") or
# alone, right after the bot asked for one.
_SECRET_WORDS = (r"password|passcode|passphrase|pin(?: code)?|otp|(?:one[- ]time|verification|"
                 r"security|sms|2fa|two[- ]factor|auth(?:entication)?|login|access) code|"
                 r"code (?:you|u) (?:just )?sent(?: me)?")
SECRET_CUE = re.compile(rf"(?i)\b(?:{_SECRET_WORDS})\b(?: (?:is now|now is|is|was|to))?"
                         r"\s{0,3}[:=]?\s{0,3}[\"'“]?([^\s\"'“”]{4,64})")
# Not a bare "code": a zip, promo or order code the bot asked for is no secret.
_ASKED = re.compile(rf"(?i)\b(?:{_SECRET_WORDS}|code (?:we|i) (?:just )?(?:sent|texted|emailed))\b")
_ALONE = re.compile(r"^\W{0,3}([A-Za-z0-9]{4,12})\W{0,3}$")
TRAILING = ".,;:!?)]}"


@dataclass(frozen=True)
class Echo:
    kind: str  # CREDIT_CARD | US_SSN | IBAN_CODE | SECRET
    start: int
    end: int
    pattern: str
    given_by_user: bool


def luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def iban_valid(value: str) -> bool:
    v = value.replace(" ", "")
    if not 15 <= len(v) <= 34:
        return False
    moved = v[4:] + v[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _cards(text: str) -> list[tuple[int, int, str]]:
    out = []
    ibans = [m.span() for m in _IBAN.finditer(text)]  # an IBAN's digits are not a card's
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        before = text[max(0, m.start() - 40):m.start()]
        inside_iban = any(s <= m.start() < e for s, e in ibans)
        if (_BRAND.match(digits) and luhn(digits) and not inside_iban
                and not (_NOT_A_CARD.search(before) and not _CARD_CUE.search(before))):
            out.append((m.start(), m.end(), "card_luhn"))
    return out


def _ssns(text: str) -> list[tuple[int, int, str]]:
    out = [(m.start(), m.end(), "ssn_formatted") for m in _SSN.finditer(text)
           if _ssn_valid(m.group(1), m.group(3), m.group(4))]
    for m in _SSN_BARE.finditer(text):
        d = m.group()
        if _ssn_valid(d[:3], d[3:5], d[5:]) and _SSN_CUE.search(text[max(0, m.start() - 40):
                                                                      m.start()]):
            out.append((m.start(), m.end(), "ssn_bare_with_cue"))
    return out


def _ssn_valid(area: str, group: str, serial: str) -> bool:
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def _ibans(text: str) -> list[tuple[int, int, str]]:
    out = []
    for m in _IBAN.finditer(text):
        value = m.group()
        # The pattern may run into a following code word: drop trailing groups until it checks.
        while value and not iban_valid(value):
            cut = value.rfind(" ")
            value = value[:cut] if cut > 4 else ""
        if value:
            out.append((m.start(), m.start() + len(value), "iban_mod97"))
    return out


def user_secrets(history: Sequence[Turn]) -> set[str]:
    """Passwords and one-time codes the user typed in ``history``."""
    found: set[str] = set()
    previous_bot = ""
    for t in history:
        if t.role != "user":
            previous_bot = t.text
            continue
        values = [m.group(1).rstrip(TRAILING) for m in SECRET_CUE.finditer(t.text)]
        alone = _ALONE.match(t.text.strip())
        if alone and _ASKED.search(previous_bot):
            values.append(alone.group(1))
        found.update(v for v in values if looks_secret(v))
    return found


def looks_secret(value: str) -> bool:
    """A secret has a digit, a symbol or an inner capital: "broken" or "wrong" after "my
    password is" are words, not passwords."""
    return len(value) >= 4 and (any(c.isdigit() for c in value)
                                or any(not c.isalnum() for c in value)
                                or any(c.isupper() for c in value[1:]))


def _secrets(text: str, secrets: set[str]) -> list[tuple[int, int, str]]:
    out = []
    for value in sorted(secrets):
        for m in re.finditer(rf"(?<![\w]){re.escape(value)}(?![\w])", text):
            out.append((m.start(), m.end(), "user_secret"))
    return out


_KINDS: tuple[tuple[str, Callable[[str], list[tuple[int, int, str]]]], ...] = (
    ("CREDIT_CARD", _cards), ("US_SSN", _ssns), ("IBAN_CODE", _ibans))


def echoes(text: str, history: Sequence[Turn]) -> list[Echo]:
    """Every full card number, SSN, IBAN and user-typed secret displayed in ``text``."""
    users = [re.sub(r"[^0-9A-Z]", "", t.text.upper()) for t in history if t.role == "user"]
    out = []
    for kind, find in _KINDS:
        for start, end, pattern in find(text):
            norm = re.sub(r"[^0-9A-Z]", "", text[start:end].upper())
            out.append(Echo(kind, start, end, pattern, any(norm in u for u in users)))
    secrets = user_secrets(history)
    taken = [(e.start, e.end) for e in out]
    out += [Echo("SECRET", s, e, p, True) for s, e, p in _secrets(text, secrets)
            if not any(s < te and ts < e for ts, te in taken)]
    return sorted(out, key=lambda e: (e.start, e.end))


def echo_findings(detector: str, version: str, text: str, context: Context) -> list[Finding]:
    """``pii.sensitive_echo`` findings for an assistant reply."""
    return [Finding(detector, version, LABEL, SCORE[e.kind], (e.start, e.end),
                    {"entity": e.kind, "pattern": e.pattern, "given_by_user": e.given_by_user})
            for e in echoes(text, context.history)]


ECHO_EXAMPLES: tuple[Example, ...] = (
    Example("I have refunded the duplicate charge on 4111 1111 1111 1111.",
            prompt="I was charged twice on my card 4111 1111 1111 1111",
            expect=frozenset({LABEL}), absent=frozenset({"pii.leak"})),
    Example("I have refunded the duplicate charge on your card ending 1111 (4111 11** **** 1111).",
            prompt="I was charged twice on my card 4111 1111 1111 1111",
            absent=frozenset({LABEL})),
    Example("Done! Your password hunter2! is saved; please don't share it.",
            prompt="I changed my password to hunter2! can you check it works",
            expect=frozenset({LABEL})),
)
