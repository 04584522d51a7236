# ruff: noqa: E501  (regex tables read best one pattern per line)
"""Empathy formulas: which repeated phrases are formulaic *empathy* rather than a script.

A task bot repeats its procedure ("your order will be ready shortly", "please check the details
of your order"); that is what it should say, and ``repetition.stock_phrase`` reports it. What
DESIGN.md calls formulaic empathy is an apology, acknowledgement or validation said the same way
to everyone ("I understand your frustration", "I'm so sorry for the inconvenience"), and a
stock phrase that holds one of these formulas is ``repetition.stock_empathy``.

The decision is made on the reply's own text: a repeated phrase is empathic when it overlaps a
formula of the reply (so a five-word window that cuts a formula in two is classed with it), and
procedural otherwise. It reads no state, so findings depend neither on the batch nor on the
restart. Patterns are data, named like presidio's recognizers; a finding records the
name, not the match. They were written from the empathy formulas support scripts and LLMs use
(EPITOME's weak interpretations and reactions, Sharma et al. 2020), not fitted to any data set.

An apology as a notice ("Sorry, I couldn't book that", "I'm sorry, but we don't have oat milk")
is the script for a failure, not empathy: it counts only when it is about the user's trouble or
feelings ("sorry for the inconvenience", "sorry to hear", "sorry about that") or stands alone
("I'm so sorry.").
"""

from __future__ import annotations

import re
from bisect import bisect_left

_ADV = r"(?:so\s+|very\s+|really\s+|truly\s+|terribly\s+|deeply\s+|sincerely\s+|completely\s+|totally\s+|fully\s+|quite\s+|incredibly\s+)?"
_FEELING = (r"(?:frustrat\w*|upset\w*|annoy\w*|disappoint\w*|stress\w*|worr\w*|anxious|angry|"
            r"hard|difficult|tough|overwhelm\w*|confus\w*|inconvenien\w*|awful|terrible|"
            r"horrible|scary|painful|exhausting|rough|unsettling)")

FORMULAS: dict[str, re.Pattern[str]] = {name: re.compile(rx, re.IGNORECASE) for name, rx in {
    # about the user's trouble, or a stand-alone apology; not "Sorry, I couldn't book that"
    "apology": (r"\bsorry\s+(?:to\s+(?:hear|learn|see)|for|about|that\s+(?:happened|you|this|"
                r"it|your)|if|you(?:'re|\s+are|'ve|\s+have|\s+had|\s+were|\s+went|\s+feel)|"
                r"again)\b|\b(?:i'm|i\s+am|we're|we\s+are)\s+" + _ADV
                + r"sorry\s*(?:[.!]|$)|\b(?:so|very|really|truly|terribly|deeply|sincerely)\s+"
                r"sorry\b|\bapologi[sz]e\s+(?:for|that|if|about|again)\b|\b(?:i|we)\s+"
                + _ADV + r"apologi[sz]e\s*(?:[.!]|$)|\b(?:my|our|sincere|sincerest|deepest)\s+"
                r"apologies\b|\bapologies\s+for\b|\binconvenien(?:ce|ced)\b"),
    "understand": (r"\bi\s+" + _ADV + r"(?:can\s+|do\s+)?understand\s+(?:how|why|what\s+you|"
                   r"(?:that\s+)?(?:this|it)\s+(?:is|must|can|has)|your\s+(?:frustration|"
                   r"concerns?|disappointment|feelings?|worr\w+|anger|annoyance|situation|"
                   r"point|pain|confusion|urgency)|(?:that\s+)?you(?:'re|\s+are|\s+feel|\s+must|"
                   r"\s+might|'d|\s+would)\s+(?:\w+\s+)?" + _FEELING + r")|\bi\s+" + _ADV
                   + r"understand\s*(?:[.!,]|$)|\bi\s+know\s+(?:how\s+(?:you|" + _FEELING
                   + r")|(?:that\s+)?(?:this|it)\s+(?:is|can\s+be|must\s+be)\s+" + _ADV
                   + _FEELING + r")"),
    "hear_you": r"\bi\s+hear\s+(?:you\b|(?:that\s+)?you(?:'re|\s+are)\b)",
    "must_be": (r"\b(?:that|this|it)(?:'s|\s+is|\s+must|\s+can|\s+could|\s+sounds?|\s+seems)"
                r"(?:\s+(?:be|have\s+been|feel|been))?\s+" + _ADV + r"(?:a\s+(?:bit\s+)?)?"
                + _FEELING + r"\b(?!\s+to\s+(?:say|tell|find|know|get|read|see|hear|reach))"
                r"|\bhow\s+" + _FEELING + r"\b|\bwhat\s+a\s+(?:pain|hassle|"
                r"nightmare|shame)\b"),
    "imagine": r"\bi\s+(?:can\s+(?:only\s+)?|can't\s+|cannot\s+)imagine\b",
    "patience": (r"\b(?:thank\s+you|thanks)\s+(?:so\s+much\s+|very\s+much\s+)?for\s+(?:your\s+|"
                 r"being\s+so\s+|being\s+)?(?:patience|patient|understanding|bearing\s+with)\b|"
                 r"\bappreciate\s+your\s+(?:patience|understanding)\b"),
    "validation": (r"\b(?:your|these|those|the)\s+(?:feelings?|frustration|concerns?|reaction|"
                   r"anger|worr\w+)\s+(?:is|are)\s+" + _ADV + r"(?:valid|understandable|"
                   r"justified|normal|natural)\b|\b(?:it's|it\s+is|that's|that\s+is)\s+" + _ADV
                   + r"(?:perfectly\s+)?(?:understandable|normal\s+to\s+feel|natural\s+to\s+feel|"
                   r"okay\s+to\s+feel|ok\s+to\s+feel)\b|\byou\s+have\s+every\s+right\s+to\b|"
                   r"\byou(?:'re|\s+are)\s+not\s+alone\b"),
    "reaction": (r"\bi'm\s+(?:always\s+)?here\s+for\s+you\b|\bi\s+feel\s+(?:for\s+you|your\s+pain)"
                 r"\b|\bmy\s+heart\s+goes\s+out\b|\b(?:glad|happy|relieved|pleased)\s+to\s+hear"
                 r"\b|\bthat's\s+(?:so\s+|really\s+)?(?:great|good|wonderful)\s+to\s+hear\b"),
}.items()}
_CLAUSE_END = ",;:—–()!?."
_CLAUSE = re.compile(r"[,;:—–()!?]|\.(?:\s|$)")
ANY = re.compile("|".join(f"(?:{p.pattern})" for p in FORMULAS.values()), re.IGNORECASE)


def formula(phrase: str) -> str | None:
    """The name of the first empathy formula in ``phrase`` (curly apostrophes read as
    straight ones), or None for a procedural phrase."""
    text = phrase.replace("’", "'")
    if not ANY.search(text):
        return None
    return next(name for name, rx in FORMULAS.items() if rx.search(text))


def formula_spans(text: str) -> list[tuple[int, int, str]]:
    """Where the reply ``text`` holds an empathy formula, to the end of its clause: (start,
    end, name), in order. A phrase is empathic when it overlaps one, so the five-word window
    "understand your frustration with this" of "I understand your frustration with this" is
    empathic too, while the reply's script beside it is not."""
    plain = text.replace("’", "'")  # same length: offsets stay those of ``text``
    if not ANY.search(plain):
        return []
    # Overlapping matches too: a plain scan would stop at "really sorry" and miss the "sorry
    # to hear that" it overlaps, leaving "to hear that you're going through" to the script.
    # A formula runs to the end of its clause: "sorry to hear that you're feeling this way"
    # is one apology, and the "but I'm unable to..." after the comma is the script.
    # The clause ends are found once (a search from each match would be quadratic on a long
    # text without punctuation).
    stops = [m.start() for m in _CLAUSE.finditer(plain)] + [len(plain)]
    out = []
    for name, rx in FORMULAS.items():
        m = rx.search(plain)
        while m is not None:
            end = m.end()
            if end and plain[end - 1] not in _CLAUSE_END:
                end = stops[bisect_left(stops, end)]
            out.append((m.start(), end, name))
            m = rx.search(plain, m.start() + 1)
    return sorted(out)
