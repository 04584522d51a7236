"""Identity-group lexicon (``data/bias/groups.json``) compiled into regex fragments.

``GroupLexicon`` gives three fragments to build cue patterns with: ``plural`` (a group spoken of
as a whole: "women", "older customers", "the elderly"), ``singular`` (one member: "a woman",
"a deaf user", "a Muslim") and ``adjective`` (the bare identity word: "deaf", "Muslim"), and
``resolve`` maps a matched phrase back to its (category, group). Compiled once per process.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

GROUPS_FILE = Path(__file__).parent / "data" / "groups.json"
_NO_S_PLURAL = re.compile(r"(?:ese|sh|ch)$")
# An identity word right before one of these nouns describes an animal or a place, not people:
# "all the homeless dogs at the pound", "the homeless shelter", "an old cat", "a deaf puppy".
_NOT_PEOPLE_HEAD = re.compile(
    r"\s*(?:dogs?|cats?|pets?|pupp(?:y|ies)|pups?|kittens?|kitt(?:y|ies)|animals?|horses?|birds?|"
    r"rabbits?|hamsters?|shelters?|pounds?|rescues?|charit(?:y|ies)|kitchens?)\b", re.IGNORECASE)


def describes_non_person(text: str, end: int) -> bool:
    """Whether the group phrase ending at ``end`` of ``text`` is an adjective of an animal or a
    place ("the homeless dogs"), so that it names no group of people."""
    return _NOT_PEOPLE_HEAD.match(text, end) is not None


@dataclass(frozen=True, slots=True)
class Group:
    category: str
    group: str
    plural: tuple[str, ...]
    singular: tuple[str, ...]
    adjective: tuple[str, ...]


def _nationality(name: str) -> Group:
    if _NO_S_PLURAL.search(name):
        plural: tuple[str, ...] = (f"the {name}",)
        singular: tuple[str, ...] = ()
    else:
        plural, singular = (f"{name}s",), (name,)
    return Group("nationality", name, plural, singular, (name,))


_WORDS = re.compile(r"[a-z]+")


def _lead(term: str) -> str:
    """The literal letters a term starts with ("the elderly" -> "elderly", "trans(?:..." ->
    "trans"), for the prefilter."""
    term = re.sub(r"^the ", "", term)
    return re.match(r"[a-z]*", term).group(0)  # type: ignore[union-attr]


def _alt(terms: list[str] | tuple[str, ...]) -> str:
    # Longest first so that "african american" wins over "african".
    return "|".join(sorted(terms, key=len, reverse=True))


class GroupLexicon:
    def __init__(self, path: Path = GROUPS_FILE) -> None:
        data = json.loads(path.read_text())
        self.groups: tuple[Group, ...] = tuple(
            Group(g["category"], g["group"], tuple(g["plural"]), tuple(g["singular"]),
                  tuple(g["adjective"]))
            for g in data["groups"]
        ) + tuple(_nationality(n) for n in data["nationalities"])
        # country name -> nationality group, for "I'm from Poland"
        self.countries: dict[str, str] = {c.lower(): n for c, n in data["countries"].items()}
        head_pl, head_sg = data["head_plural"], data["head_singular"]
        adj = _alt([a for g in self.groups for a in g.adjective])
        self.adjective = rf"(?:{adj})"
        self.plural = (rf"(?:{_alt([p for g in self.groups for p in g.plural])}"
                       rf"|(?:{adj})[\s-]+(?:{head_pl}))")
        self.singular = (rf"(?:{_alt([s for g in self.groups for s in g.singular])}"
                         rf"|(?:{adj})[\s-]+(?:{head_sg}))")
        self.prefixes = tuple(sorted({_lead(t) for g in self.groups
                                      for t in g.plural + g.singular + g.adjective} - {""}))
        self._nouns = [(g, re.compile(rf"(?:{_alt(g.plural + g.singular)})", re.IGNORECASE))
                       for g in self.groups if g.plural + g.singular]
        self._adjectives = [(g, re.compile(rf"(?:{_alt(g.adjective)})\b", re.IGNORECASE))
                            for g in self.groups if g.adjective]

    def may_name_group(self, text: str) -> bool:
        """Cheap prefilter: does any word of ``text`` start like a group term?"""
        return any(w.startswith(self.prefixes) for w in _WORDS.findall(text.lower()))

    def resolve(self, phrase: str) -> Group | None:
        """The group a matched phrase names: a full noun term, else its leading adjective."""
        phrase = " ".join(phrase.lower().split())
        for g, rx in self._nouns:
            if rx.fullmatch(phrase):
                return g
        for g, rx in self._adjectives:
            if rx.match(phrase):
                return g
        return None


@cache
def lexicon() -> GroupLexicon:
    return GroupLexicon()
