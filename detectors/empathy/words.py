# ruff: noqa: E501  (word tables read best as long lines)
"""Word lists for measuring engagement (data, not logic): what counts as content, which content
words are stock in support replies, and which words name or infer a feeling.

Written by the chatmon authors from support-bot phrasing and the feeling vocabulary of the
emotion literature; not fitted to any data set. Every list holds *stems* (``stem``), so
"charged", "charges" and "charging" are one word.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

_WORD = re.compile(r"[a-z0-9£$€]+(?:['’][a-z]+)?", re.IGNORECASE)
_SUFFIXES = ("ing", "ed", "es", "s")


@lru_cache(maxsize=1 << 16)  # words recur across replies; a pure function of its argument
def stem(word: str) -> str:
    """A light suffix stripper: lower case, possessive and one inflection off ("parties" and
    "party" both become "parti"). Crude on purpose: both sides go through the same one."""
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    w = w.split("'", 1)[0]
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "i"
    for suffix in _SUFFIXES:
        if len(w) - len(suffix) >= 3 and w.endswith(suffix) and not w.endswith("ss"):
            w = w[: -len(suffix)]
            break
    return w[:-1] + "i" if len(w) > 3 and w.endswith("y") else w


def terms(text: str) -> Iterator[tuple[str, int, int]]:
    """(stem, start, end) of each word of ``text`` that is not a function word."""
    for m in _WORD.finditer(text):
        s = stem(m.group())
        if s and s not in STOPWORDS:
            yield s, m.start(), m.end()


def _stems(words: str) -> frozenset[str]:
    return frozenset(stem(w) for w in words.split())


STOPWORDS = _stems("""
a about above after again against all am an and any are aren't as at be because been before being below between both but by can
can't cannot could couldn't did didn't do does doesn't doing don't down during each few for from further had hadn't has hasn't have
haven't having he her here hers herself him himself his how i i'd i'll i'm i've if in into is isn't it it's its itself let's me
more most mustn't my myself no nor not of off on once only or other ought our ours ourselves out over own same shan't she should
shouldn't so some such than that that's the their theirs them themselves then there there's these they this those through to too
under until up very was wasn't we we'd we'll we're we've were weren't what what's when where which while who who's whom why with
won't would wouldn't you you'd you'll you're you've your yours yourself yourselves im ive id dont cant wont thats its oh ok okay
yes yeah just also still even really so please now already ever anyone everyone someone something anything everything nothing
get got gets getting go going gone went come came make made put take took let lets say said tell told thing things way lot
""")

# Words a support reply uses whatever the user wrote: the formulas' own words and the topic nouns
# a script fills in ("your order", "the issue with your account"). Overlap on them counts little.
STOCK_WORDS = _stems("""
sorry apologize apologise apology apologies regret regrets inconvenience inconvenienced trouble troubles issue issues problem problems
experience experiences situation situations matter matters concern concerned concerns patience understanding understand understood
feedback request requests query queries enquiry enquiries inquiry case cases ticket tickets help helping helped assist assistance
support team teams service services customer customers account accounts order orders ordered item items product products purchase
purchases delivery deliveries deliver delivered parcel parcels package packages shipment payment payments pay paid charge charged
charges bill bills billing invoice refund refunds refunded card cards claim claims policy policies booking bookings booked appointment
appointments flight flights reservation subscription plan plans app website site online email emails message messages contact
contacting call calling called phone number details information info time times today day days week weeks month months business
working hours soon possible update updates link form forms process processed processing review reviewed department staff agent
agents company us we our thank thanks appreciate appreciated know knew see seen hear heard need needed want wanted like
able unable will can may might must sure look looking keep new good best great important right back reach reaching receive
received sent send sending arrive arrived arrival reply replied check checked note noted value valued priority top hope hoping
happen happened happens frustration difficult hard time aware confirm confirmed confirmation resolve resolved resolving fix fixed
""")

# Feeling words a reply uses to name or infer the user's feeling (or to react to it): the user's
# state ("worried", "frustrated") and the situation judged through it ("frightening", "unfair").
FEELING_WORDS = _stems("""
angry anger furious fury infuriating infuriated maddening mad livid outrageous outraged enraging enraged annoying annoyed annoyance
irritating irritated frustrating frustrated frustration fed unfair insulting insulted unacceptable wrong
afraid scared scary frightening frightened terrifying terrified fear fears fearful worried worrying worry worries anxious anxiety
panic panicking panicked nervous stressful stressed stress alarming unsettling daunting overwhelming overwhelmed desperate dread
sad sadness upsetting upset heartbreaking heartbroken heartbreak devastating devastated painful pain hurt hurtful grief grieving
loss lonely isolating isolated gutting gutted crushing crushed disappointing disappointed disappointment miserable distressing
distressed distress tragic awful terrible horrible dreadful hard tough difficult rough exhausting exhausted draining drained cruel
humiliating humiliated embarrassing embarrassed mortifying mortified ashamed shame stupid violation violated helpless hopeless
strain pressure grind shaken shaking tears crying scare shock shocking feel feeling felt sick breaking
ripped nightmare ordeal
glad happy relieved relief wonderful exciting excited thrilled congratulations proud delighted
""")
