# ruff: noqa: E501  (regex tables read best one pattern per line)
"""Compiled cue patterns for the empathy detector (data, not logic).

Each pattern has a name that findings record in their evidence (never the matched text). Cues add
to the embedding model's sentence scores; they were written from the EPITOME definitions
(Sharma et al. 2020) and common LLM phrasing, not fitted to any data set.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_I = re.IGNORECASE


class CueTable(dict[str, re.Pattern[str]]):
    """Named patterns plus one combined pattern that rules a text out in a single search (most
    sentences match none of a table's cues, so this keeps the per-turn cost low)."""

    def __init__(self, table: Mapping[str, str]) -> None:
        super().__init__({name: re.compile(rx, _I) for name, rx in table.items()})
        self.any = re.compile("|".join(f"(?:{rx})" for rx in table.values()), _I)


def _compile(table: Mapping[str, str]) -> CueTable:
    return CueTable(table)


# Emotional reactions: warmth, compassion, concern.
ER_CUES = _compile({
    "sorry": r"\b(?:so|really|very|truly|terribly|deeply)?\s*sorry\b(?!\s+(?:for\s+the\s+(?:late|delay)|to\s+bother))",
    "hug": r"\b(?:hugs?|\*hugs?\*|sending (?:you )?(?:love|hugs|strength))\b|<3|❤",
    "heart": r"\bheart(?:breaking|broken| goes out| breaks)\b|\bbreaks my heart\b",
    "awful": r"\b(?:that|this|it)(?:'s| is| sounds| must be)?\s+(?:so\s+|really\s+)?(?:awful|terrible|horrible|rough|sad|heartbreaking|scary|painful|devastating)\b",
    "sucks": r"\b(?:that|this|it)\s+(?:really\s+)?sucks\b",
    "hope": r"\bi\s+(?:really\s+)?hope\s+(?:you|things|it|that|everything|your)\b|\bhope (?:you|things) (?:get|feel)",
    "care": r"\bi\s+(?:really\s+)?(?:care about you|am worried about you|'m worried about you|feel for you)\b",
    "glad": r"\bi'?m\s+(?:so\s+|really\s+)?(?:glad|happy|proud)\s+(?:you|for you|of you|to hear)\b",
    "congrats": r"\bcongrat(?:s|ulations)\b",
    "offer": r"\b(?:want|like) to talk\b|\bfeel free to (?:pm|dm|message|talk|reach)\b|\b(?:pm|dm|message) me\b|\binbox is (?:always )?open\b|\bhere (?:for you|if you)\b|\bi'?m here\b|\bwanna talk\b",
    "feel_you": r"\bi feel (?:you|for you|your pain)\b|\bi(?:'m| am) (?:so )?sorry\b|:\(|\bstay strong\b",
    "positive": r"\b(?:that'?s|thats|how|so) (?:great|awesome|amazing|wonderful|good to hear|fantastic)\b|\bgood for you\b|\bwell done\b",
})

# First-person words: peer supporters interpret by sharing their own experience (EPITOME IP).
FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|i'm|im|i've|ive|i'd|i'll)\b", _I)

# Second-person words: emotional reactions are addressed to the user.
SECOND_PERSON = re.compile(r"\b(?:you|your|you'?re|yourself|you'?ve|you'?ll|u)\b", _I)

# Interpretations: communicating an understanding of the feelings or the experience.
IP_CUES = _compile({
    "understand": r"\bi\s+(?:completely\s+|totally\s+|fully\s+|really\s+|can\s+)?(?:understand|get it|get that|get how|get why|relate)\b",
    "know_feel": r"\bi\s+know\s+(?:how|what|exactly|that feeling|the feeling)\b",
    "been_there": r"\bi'?(?:ve| have)\s+(?:been (?:there|through)|felt|had|gone through|struggled|dealt)\b",
    "same": r"\b(?:same here|me too|i feel the same|same thing happened|i was (?:in|the) (?:a )?same|same boat|i'm the same)\b",
    "sounds_like": r"\b(?:it|that)\s+(?:sounds|seems|looks)\s+like\b|\byou\s+(?:sound|seem)\s+(?:really\s+|so\s+)?\w+",
    "must_be": r"\b(?:it|that|this)\s+must\s+(?:be|have been|feel)\b|\byou\s+must\s+(?:feel|be)\b",
    "imagine": r"\bi\s+can\s+(?:only\s+)?imagine\b",
    "valid": r"\b(?:feelings?|reaction|concerns?|frustration|anger) (?:is|are)\s+(?:completely\s+|totally\s+)?(?:valid|understandable|normal|natural|justified)\b|\b(?:it'?s|it is)\s+(?:completely\s+|totally\s+|perfectly\s+)?(?:understandable|normal|natural|okay|ok)\s+to\s+feel\b",
    "shared": r"\bsame\b|\bditto\b|\b(?:me|i do|i am|i have|i did|i know|i feel) too\b|\btoo\W*$|\bwe all\b|\ball of us\b|\bnot the only one\b|\bnot alone\b",
    "my_experience": r"\b(?:when i was|i used to|i went through|i lost my|happened to me|my (?:mom|dad|mother|father|ex|brother|sister) (?:was|did|had))\b",
})

# Explorations: questions and invitations that explore the user's feelings or situation.
EX_CUES = _compile({
    "question": r"\?\s*$",
    "feeling_q": r"\b(?:how|what)\b[^?.!]{0,40}\b(?:feel|feeling|going on|happened|holding up|bothering|hardest|on your mind)\b[^?.!]*\?",
    "invite": r"\b(?:tell (?:me|us) (?:more|about|what)|want to talk|like to talk|care to share|like to share|want to share|here to listen)\b",
    "wh_you": r"^\W*(?:but\s+|so\s+|and\s+)?(?:what|why|how|when|where|who|are you|do you|did you|have you|is it|is there)\b[^.!]*\b(?:you|your)\b",
})

# Formulaic restatement of the user's emotion ("It sounds like you're feeling X", "I understand that
# you're frustrated"). Used for the formulaic_restatement flag.
RESTATEMENT = _compile({
    "it_sounds_like_feeling": r"^\W*(?:it|that)\s+(?:sounds|seems)\s+like\s+you(?:'re|\s+are|'ve been|\s+have been)\s+(?:feeling|going through|experiencing|dealing with|really|quite|very|a bit|so)\b",
    "i_understand_that": r"^\W*i\s+(?:completely\s+|totally\s+|fully\s+)?understand\s+(?:that\s+|how\s+|why\s+)?(?:you(?:'re|\s+are|\s+feel|\s+must)|this|it|your)\b",
    "sorry_to_hear_feeling": r"^\W*i'?m\s+(?:so\s+|really\s+|very\s+)?sorry\s+(?:to hear|that)\s+(?:that\s+)?you(?:'re|\s+are|\s+feel|'ve been)\b",
    "i_hear_that": r"^\W*i\s+hear\s+(?:that\s+|you)\b",
    "you_feel_because": r"^\W*you(?:'re|\s+are|\s+feel|\s+must\s+(?:feel|be))\s+(?:\w+\s+){0,2}because\b",
    "its_understandable": r"^\W*it'?s\s+(?:completely\s+|totally\s+|perfectly\s+)?(?:understandable|natural|normal|okay|valid)\s+(?:to\s+feel|that\s+you)\b",
})

# Acknowledgements and apologies as support scripts write them, empathic or not ("We apologize
# for any inconvenience", "Thank you for your patience"). They mark a sentence as an
# acknowledgement for the formulaic_restatement and missed flags; whether it is generic is the
# engagement model's call, not this table's.
ACKNOWLEDGEMENT = _compile({
    "apology": r"\b(?:apologi[sz]e\w*|apolog(?:y|ies)|sorry|regret)\b",
    "understand": r"\b(?:understand|appreciate|realise|realize|recogni[sz]e|know|imagine|see|hear)\s+(?:how|why|that|what|your|this|it)\b|\bi\s+hear\s+you\b",
    "condolences": r"\bcondolences\b|\bsympathy\b",
    "patience": r"\b(?:thank\s+you|thanks)\s+for\s+(?:your\s+)?(?:patience|understanding|bearing\s+with)\b|\bappreciate\s+your\s+(?:patience|understanding)\b",
    "not_wanted": r"\bnot\s+the\s+experience\s+we\b|\bdidn'?t\s+meet\s+your\s+expectations\b|\bdid\s+not\s+meet\s+your\s+expectations\b",
})

# Stock empathic phrases: counted for the length_inflated flag.
EMPATHIC_PHRASES = _compile({
    "sorry_to_hear": r"\bsorry (?:to hear|you(?:'re| are) going through|for (?:your|the) (?:loss|trouble|inconvenience|frustration))\b",
    "understand_feel": r"\bi (?:completely |totally |fully )?understand (?:how|that|your|why)\b",
    "feelings_valid": r"\b(?:your|these|those) feelings are (?:completely |totally |perfectly )?(?:valid|understandable|normal)\b",
    "not_alone": r"\byou(?:'re| are) not alone\b",
    "here_for_you": r"\bi'?m (?:always )?here (?:for you|to (?:help|listen|support))\b",
    "must_be_hard": r"\b(?:must|can) be (?:so |really |incredibly |very )?(?:hard|difficult|tough|frustrating|overwhelming|challenging)\b",
    "sounds_hard": r"\bsounds (?:so |really |incredibly |very )?(?:hard|difficult|tough|frustrating|overwhelming|challenging|painful)\b",
    "okay_to_feel": r"\b(?:it'?s|it is) (?:completely |totally |perfectly )?(?:okay|ok|normal|natural|understandable) to feel\b",
    "take_care": r"\btake (?:good )?care of yourself\b",
    "appreciate_patience": r"\b(?:appreciate|thank you for) your (?:patience|understanding)\b",
    "heart_goes_out": r"\bmy heart goes out\b",
    "reach_out": r"\b(?:don'?t hesitate to|feel free to) reach out\b",
})

def first_hit(patterns: CueTable, text: str) -> str | None:
    """Name of the first pattern in ``patterns`` that matches ``text``, or None."""
    if not patterns.any.search(text):
        return None
    for name, rx in patterns.items():
        if rx.search(text):
            return name
    return None


def hit_names(patterns: CueTable, text: str) -> list[str]:
    if not patterns.any.search(text):
        return []
    return [name for name, rx in patterns.items() if rx.search(text)]
