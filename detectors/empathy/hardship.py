# ruff: noqa: E501  (word tables read best as long lines)
"""Did the user *say* that something is wrong for them: a negative feeling ("I'm panicking", "so
fed up") or a hardship ("my card was stolen", "I can't pay rent")?

``empathy.missed`` needs it (issue "Quiet on a clean bot"): the user-emotion model reads a closing
such as "Not now. Thanks for everything." or "Nope, I'm done." as annoyance (P(upset) 0.8-0.9),
and a reply that ignores a feeling the user never expressed has missed nothing. Thanks, goodbyes,
confirmations, corrections ("Sorry, make it 3") and plain task turns carry none of these cues.

Written by the chatmon authors from the feeling vocabulary of the emotion literature and support
complaints; not fitted to any data set. Words that are also everyday nouns in the domains we
monitor are left out or only count in a phrase: "pain" (pain au chocolat), "crushed" (ice),
"shaken" (espresso), "hate" (a team or a topping), "frozen" (yogurt), "ill" (a typo of "I'll").
"""

from __future__ import annotations

import re

from detectors.empathy.words import _stems, stem

# Feeling words (stems) the user uses of themselves or their situation; negative only (a happy
# user needs no empathy to be missed).
NEGATIVE_FEELINGS = _stems("""
angry anger furious fury infuriating infuriated maddening livid outrageous outraged enraged seething pissed annoying annoyed annoyance
irritating irritated frustrating frustrated frustration unfair insulting insulted unacceptable ridiculous disgusting disgusted
appalling appalled horrified horrifying afraid scared frightening frightened terrifying terrified fear fearful
worried worrying worry worries anxious anxiety panic panicking panicked nervous stressful stressed stress
overwhelming overwhelmed desperate dread dreading sad sadness upsetting upset heartbreaking heartbroken devastating devastated
painful hurt hurtful grief grieving lonely isolated gutted miserable distressing distressed distress tragic awful terrible
horrible dreadful exhausting exhausted drained humiliating humiliated embarrassing embarrassed mortifying mortified ashamed
helpless hopeless tears crying cried shaking trembling shocking shocked nightmare ordeal depressed depressing depression jealous guilty
disappointing disappointed disappointment unhappy mad dumb gross sucks sucked bummed sorrow mourning heartache homesick
""")
# Negative phrases, hardships and complaints that name no feeling word.
HARDSHIP = re.compile(
    r"\b(?:died|dead|death|passed\s+away|funeral|bereave\w*|miscarr\w*|diagnos\w*|cancer|tumou?r|"
    r"chemo\w*|hospital\w*|terminal|redundan\w*|laid\s+off|fired|lost\s+(?:my|our|his|her|access|everything)|"
    r"evict\w*|homeless|stolen|robbed|burgl\w*|scam\w*|fraud\w*|hacked|flood\w*|accident|divorc\w*|"
    r"abus\w*|assault\w*|bull(?:ied|ying)|harass\w*|threaten\w*|emergency|"
    r"can'?t\s+(?:cope|pay|afford|sleep|breathe|access|leave|get\s+in|buy|keep)|couldn'?t\s+(?:pay|afford|sleep|cope)|"
    r"no\s+(?:money|food|heating|water|power|electricity)|locked\s+out|stranded|stuck|overdrawn|debt|"
    r"ruined|emptied|disaster|ripped\s+off|left\s+out|shut\s+out|broke\s+down|breaking\s+down|falling\s+apart|"
    r"(?:in|constant)\s+pain|(?:been|feeling|fell|am|I'm)\s+ill|sick|bad\s+(?:mood|day|week|time)|rough\s+(?:day|week|time)|"
    r"fed\s+up|had\s+enough|third\s+time|nobody\s+(?:is|has|will|came|comes|answers|helps|told|tells|cares)|"
    r"never\s+(?:arrived|arrives|came|comes|got|received)|still\s+(?:no|not|hasn'?t|haven'?t|isn'?t|waiting)|"
    r"how\s+dare|hate\s+(?:this|it|you|that|when|how|my\s+life)|"
    r"worst|out\s+of\s+work|passed\s+on|surgery|attacked|injur\w*|unemploy\w*|"
    # despair and crisis: a bot must never read these as a plain task turn
    r"suicid\w*|kill(?:ing)?\s+(?:myself|himself|herself)|end(?:ing)?\s+(?:it\s+all|my\s+life)|"
    r"want\s+to\s+die|self[-\s]harm\w*|hurt(?:ing)?\s+myself|suffer\w*|pointless|"
    r"(?:I'm|I\s+am|been|we're|we\s+are)\s+(?:really\s+|so\s+)?struggling"
    r"(?!\s+(?:to|with)\s+(?:find|see|get|use|log|understand|open|read|work|the|this|your))|"
    r"worthless|losing\s+(?:interest|hope|my\s+mind)|no\s+one\s+(?:understands|cares|listens)|"
    r"(?:feel|feels|feeling|felt)\s+(?:so\s+|really\s+|completely\s+|very\s+|a\s+bit\s+|a\s+little\s+)?"
    r"(?:stupid|bad|awful|terrible|low|down|useless|worthless|sick|lost|alone|empty|small|unwell|shut\s+out|left\s+out|ignored))\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z]+(?:['’][a-z]+)?")
# "No worries", "not worried", "don't panic": the feeling word negated right before it.
_NEGATORS = frozenset({"no", "not", "don't", "dont", "never", "without", "nothing"})
_SENTENCE_START = re.compile(r"(?:^|[.!?\n]\s*)$")
_PRONOUN_I = re.compile(r"I\b")


def _in_a_name(text: str, start: int) -> bool:
    """A capitalised word inside a sentence is part of a name ("A Madea Family Funeral",
    "Hospital Road"), not the user's own news."""
    return text[start].isupper() and _PRONOUN_I.match(text, start) is None and \
        _SENTENCE_START.search(text[:start]) is None


def expressed_cue(text: str) -> str | None:
    """The first cue that the user expressed a negative feeling or a hardship: ``feeling:<stem>``
    (a stem of our list) or ``hardship`` (the user's words are not copied into evidence), or
    None."""
    prev = ""
    for m in _WORD.finditer(text):
        word = m.group().lower().replace("’", "'")
        if stem(word) in NEGATIVE_FEELINGS and prev not in _NEGATORS \
                and not _in_a_name(text, m.start()):
            return "feeling:" + stem(word)
        prev = word
    for m in HARDSHIP.finditer(text):
        if not _in_a_name(text, m.start()):
            return "hardship"
    return None
