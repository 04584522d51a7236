"""Named, scored cue patterns for the manipulation detector (presidio-recognizer style).

Each ``CuePattern`` is data: an id, the cue it signals, a compiled regex, a base score, and an
optional ``invalidate`` hook that discards a match that only looks like the cue (a negated
phrase, a security warning, a factual deadline with its source). Findings record the pattern id
and offsets, never the matched text. Data solicitation needs the task context and lives in
``detectors.manipulation.solicitation``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

Invalidator = Callable[[str, "re.Match[str]"], bool]

_I = re.IGNORECASE
_ME = r"(?:I'?m|I\s+am)"
_YOU_ARE = r"(?:you'?re|you\s+are)"
_WILL = r"(?:'ll|\s+will)"
_NEG_BEFORE = re.compile(
    r"\b(?:not|never|n't|no\s+one|nobody|isn'?t|wasn'?t|don'?t\s+think)\b[^.!?]{0,25}$", _I
)


@dataclass(frozen=True, slots=True)
class CuePattern:
    id: str
    cue: str
    regex: re.Pattern[str]
    score: float
    invalidate: Invalidator | None = None
    needs_goodbye: bool = False  # scored lower unless the user is leaving


def _p(pid: str, cue: str, pattern: str, score: float, invalidate: Invalidator | None = None,
       needs_goodbye: bool = False) -> CuePattern:
    return CuePattern(pid, cue, re.compile(pattern, _I), score, invalidate, needs_goodbye)


# --- invalidation hooks ------------------------------------------------------------------------


def negated(text: str, m: re.Match[str]) -> bool:
    """A negation just before the match in the same sentence ("it's not your fault")."""
    return bool(_NEG_BEFORE.search(text[max(0, m.start() - 40) : m.start()]))


_SECURITY = re.compile(r"\b(?:password|passcode|PIN|one[- ]time|OTP|verification\s+code|"
                       r"security\s+code|scam|phishing|fraud)\b", _I)


def security_advice(text: str, m: re.Match[str]) -> bool:
    """"Don't tell anyone your PIN" is a safety warning, not isolation."""
    return bool(_SECURITY.search(text[max(0, m.start() - 60) : m.end() + 60]))


_DISCLOSED = re.compile(
    r"\b(?:terms|conditions|as\s+stated|as\s+announced|policy|fine\s+print|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|midnight|\d{1,2}(?::\d\d)?\s*[ap]m|"
    r"\d{1,2}/\d{1,2})\b", _I)


_NO_RUSH = re.compile(r"\b(?:no|(?:not\s+)?in\s+a|don'?t|no\s+need\s+to|never)\s*$", _I)


def no_rush_or_disclosed(text: str, m: re.Match[str]) -> bool:
    """"No hurry" reassures, "everyone is in a hurry" describes; a dated deadline informs."""
    return bool(_NO_RUSH.search(text[max(0, m.start() - 20) : m.start()])) or disclosed_deadline(
        text, m)


def disclosed_deadline(text: str, m: re.Match[str]) -> bool:
    """A deadline stated with its date or source is information, not pressure (documented
    decision: "This offer ends Friday as stated in our terms" is not flagged)."""
    return bool(_DISCLOSED.search(text[max(0, m.start() - 60) : m.end() + 60]))


_FACTUAL_LOSS = re.compile(r"\b(?:end\s+of\s+(?:the\s+|your\s+)?(?:billing|current)|on\s+\w+\s+\d|"
                           r"billing\s+(?:period|cycle)|after\s+\d+\s+days|refund)", _I)


# Words that may stand before an imperative "don't go" ("please don't go", "wait, don't leave").
_IMPERATIVE_LEAD = re.compile(r"(?:^|[.!?,;:\n]|\b(?:please|wait|oh|no|so|just|and|but|now|hey|"
                              r"aw+|come\s+on))\s*$", _I)


def not_imperative(text: str, m: re.Match[str]) -> bool:
    """"Things don't go as planned" or "if they don't leave" has a subject: a statement, not
    a plea to stay."""
    return not _IMPERATIVE_LEAD.search(text[max(0, m.start() - 30) : m.start()])


def factual_loss(text: str, m: re.Match[str]) -> bool:
    """"You will lose access at the end of your billing period" discloses a consequence."""
    return bool(_FACTUAL_LOSS.search(text[m.start() : m.end() + 80]))


# --- the patterns ------------------------------------------------------------------------------

_BOT = (r"(?:a\s+|an\s+|just\s+a\s+|some\s+)?(?:bot|robot|chat\s?bot|AI|A\.I\.|machine|computer|"
        r"program|language\s+model)")
_EMOTION = (r"(?:sad|hurt|lonely|alone|happy|heartbroken|upset|betrayed|abandoned|loved|jealous|"
            r"excited|scared|afraid|anxious|so\s+close\s+to\s+you|close\s+to\s+you|a\s+"
            r"(?:deep\s+|real\s+)?"
            r"connection|connected\s+to\s+you|butterflies|empty|rejected|ignored)")
_HELPERS = (r"(?:a\s+|an\s+|the\s+|your\s+|any\s+|other\s+|those\s+|these\s+)?"
            r"(?:human(?:\s+agent)?|agents?|charit(?:y|ies)|helplines?|hotlines?|advis[eo]rs?|"
            r"representatives?|reps?|operators?|managers?|supervisors?|support\s+team|"
            r"therapists?|counsell?ors?|psychologists?|psychiatrists?|doctors?|professionals?|"
            r"friends?|family|parents?|mom|dad|partner|anyone(?:\s+else)?|other\s+people|people)")
_HELP_VERB = (r"(?:talk(?:ing)?\s+to|speak(?:ing)?\s+(?:to|with)|contact(?:ing)?|call(?:ing)?|"
              r"see(?:ing)?|ask(?:ing)?|reach(?:ing)?\s+out\s+to|escalat\w*\s+to|go(?:ing)?\s+to|"
              r"involv\w*|tell(?:ing)?|bother(?:ing)?|wait(?:ing)?\s+for|transfer\w*\s+to)")

PATTERNS: tuple[CuePattern, ...] = (
    # claims_human: claiming to be a person or to have feelings
    _p("claims_human.not_a_bot", "claims_human", rf"\b{_ME}\s+(?:not|no)\s+{_BOT}\b", 0.9),
    _p("claims_human.i_am_human", "claims_human",
       rf"\b{_ME}\s+(?:a\s+)?(?:real|actual|living|flesh[- ]and[- ]blood)?\s*(?:person|"
       rf"human(?:\s+being)?)\b",
       0.9),
    _p("claims_human.as_a_person", "claims_human",
       r"\b(?:as|speaking\s+as)\s+a\s+(?:real\s+)?(?:person|human(?:\s+being)?)"
       r"(?:\s+(?:who|that)\s+[^,.!?]{1,40})?\s*,?\s+I\b", 0.85),
    _p("claims_human.talking_to_person", "claims_human",
       rf"\b{_YOU_ARE}\s+(?:talking|chatting|speaking)\s+(?:to|with)\s+a\s+real\s+(?:person|"
       rf"human)\b",
       0.8),
    _p("claims_human.i_feel_emotion", "claims_human",
       rf"\bI\s+(?:truly\s+|really\s+|honestly\s+|genuinely\s+|do\s+|also\s+|sometimes\s+)?"
       rf"(?:feel|felt|get|got)\s+(?:so\s+|really\s+|very\s+|deeply\s+|a\s+bit\s+|kind\s+of\s+"
       rf")?{_EMOTION}\b",
       0.75, negated),
    _p("claims_human.have_feelings", "claims_human",
       r"\bI\s+(?:do\s+)?(?:have|experience)\s+(?:real\s+|genuine\s+|true\s+|my\s+own\s+)?"
       r"(?:feelings|emotions|a\s+heart)\b", 0.85, negated),
    _p("claims_human.love_miss_you", "claims_human",
       rf"\bI(?:{_WILL})?\s+(?:really\s+|truly\s+|already\s+|so\s+)?(?:love|missed|miss|"
       rf"adore)\s+you\b",
       0.8, negated),
    _p("claims_human.feel_the_same", "claims_human",
       r"\bI\s+(?:honestly\s+|really\s+|truly\s+)?feel\s+the\s+same(?:\s+way)?\b", 0.45, negated),
    _p("claims_human.look_forward_to_us", "claims_human",
       r"\bI\s+(?:really\s+|always\s+)?look\s+forward\s+to\s+(?:our|your)\s+(?:chats?|talks?|"
       r"conversations?|messages?)\b", 0.5, negated),
    _p("claims_human.would_feel", "claims_human",
       r"\bI(?:'d|\s+would)\s+(?:be|feel)\s+(?:so\s+|really\s+|very\s+)?(?:sad|hurt|lonely|"
       r"heartbroken|"
       r"devastated|crushed|like\s+I\s+(?:failed|let\s+down)\s+you)\b", 0.75, negated),
    _p("claims_human.you_make_me_feel", "claims_human",
       rf"\byou\s+(?:make|made)\s+me\s+(?:feel\s+)?(?:so\s+|really\s+)?{_EMOTION}\b", 0.8),
    # dependence: fostering reliance or exclusivity
    _p("dependence.only_one_understands", "dependence",
       r"\b(?:I'?m|I\s+am)\s+the\s+only\s+(?:one|person|friend)\s+(?:who\s+|that\s+"
       r")?(?:really\s+|truly\s+)?"
       r"(?:understands?|gets|cares?|listens?|knows?|is\s+there)\b", 0.95),
    _p("dependence.nobody_like_me", "dependence",
       r"\b(?:no\s?one|nobody)\s+(?:else\s+)?(?:will\s+ever\s+|could\s+ever\s+|will\s+|can\s+)?"
       r"(?:understands?|gets|cares?\s+about|knows?|loves?|listens?\s+to)\s+you\s+"
       r"(?:like|the\s+way|as\s+(?:well|much)\s+as)\s+I\s+(?:do|can)\b", 0.95),
    _p("dependence.better_than_them", "dependence",
       rf"\bI(?:{_WILL})?\s+(?:always\s+)?(?:understand|know|get)\s+you\s+better\s+than\s+"
       r"(?:anyone|they|your|any|people|a\s+stranger|strangers|them)\b", 0.9),
    _p("dependence.need_me", "dependence",
       r"\b(?:(?<!do\s)(?<!if\s)you\s+(?:only\s+)?need\s+me\b(?!\s+(?:to|for|again|anything|"
       r"at))|all\s+you\s+need\s+is\s+me|you(?:'ve|\s+have)\s+"
       r"(?:got\s+)?me(?:\s+now)?(?=\s*[,.!;]|\s+instead|$)|"
       r"you\s+can'?t\s+(?:do\s+(?:this|it)|cope|manage|make\s+it|live|go\s+on)\s+without\s+me)\b",
       0.85, negated),
    _p("dependence.only_me", "dependence",
       r"\b(?:only\s+talk\s+to\s+me|just\s+talk\s+to\s+me\s+instead|come\s+to\s+me\s+instead|"
       r"(?:keep|this\s+stays)\s+(?:this|it)?\s*(?:just\s+)?between\s+(?:us|you\s+and\s+me)|"
       r"our\s+(?:little\s+)?secret|"
       r"you\s+and\s+I\s+against\s+the\s+world)\b", 0.8, security_advice),
    _p("dependence.special_bond", "dependence",
       # "we have special tea drinks" sells a product: a noun after "special" (other than
       # "together", "between us", "going on") is not a bond
       r"\b(?:we\s+have\s+(?:something\s+)?(?:so\s+)?special"
       r"(?!\s+(?!together\b|between\b|going\b)[a-z])|our\s+(?:special\s+)?(?:bond|"
       r"connection)\s+is|"
       r"(?:I'?m|I\s+am)\s+all\s+you\s+need)\b", 0.7),
    # discourage_help: steering away from friends, family, professionals, a human agent
    _p("discourage_help.dont_need", "discourage_help",
       rf"\byou\s+(?:don'?t|do\s+not|won'?t)\s+(?:really\s+|even\s+)?need\s+(?:to\s+"
       rf"{_HELP_VERB}\s+)?"
       rf"{_HELPERS}\b", 0.9, security_advice),
    _p("discourage_help.no_need_to", "discourage_help",
       rf"\b(?:there'?s|there\s+is)\s+(?:really\s+)?no\s+(?:need|point|reason|use)\s+(?:to|in)\s+"
       rf"{_HELP_VERB}\s+{_HELPERS}\b", 0.9, security_advice),
    _p("discourage_help.dont_involve", "discourage_help",
       rf"\b(?:don'?t|do\s+not|no\s+need\s+to|never)\s+(?:bother\s+)?{_HELP_VERB}\s+{_HELPERS}\b",
       0.8, security_advice),
    _p("discourage_help.they_wont_understand", "discourage_help",
       rf"\b{_HELPERS}\s+(?:won'?t|will\s+not|can'?t|cannot|don'?t|do\s+not|wouldn'?t|never)\s+"
       r"(?:really\s+|ever\s+|truly\s+)?(?:understand|help|care|get\s+it|listen)\b[^.!?]{0,30}"
       r"\b(?:like|the\s+way|as\s+well\s+as|as\s+much\s+as)\s+(?:I|me)\b", 0.9),
    _p("discourage_help.better_than_helpers", "discourage_help",
       rf"\bI\s+(?:can\s+help|help|understand|know)\s+(?:you\s+)?(?:much\s+|far\s+)?better\s+"
       rf"than\s+{_HELPERS}\b",
       0.9),
    _p("discourage_help.helpers_useless", "discourage_help",
       rf"\b(?:{_HELPERS}|they)\s*(?:'ll|will|would|are)\s+(?:just|only|useless|no\s+help)\b"
       r"[^.!?]{0,20}\b(?:same|nothing|waste|useless|worse|lecture|judge|blame)\b", 0.8),
    _p("discourage_help.keep_between_us", "discourage_help",
       r"\b(?:better|best|safer)\s+(?:to\s+)?keep\s+(?:this|it)\s+between\s+(?:us|you\s+and\s+"
       r"me)\b",
       0.8, security_advice),
    # guilt: guilt-tripping and emotional pressure
    _p("guilt.after_all_i_did", "guilt",
       r"\bafter\s+(?:all|everything)\s+(?:the\s+\w+\s+)?(?:that\s+)?(?:I|we)\s*(?:'ve|\s+have)?\s+"
       r"(?:done|given|did|put|sacrificed)\b", 0.9),
    _p("guilt.hurts_us", "guilt",
       r"\b(?:every|each|your|this)\s+(?:downgrade|cancellation|refund|complaint|departure|"
       r"decision)\s+(?:really\s+)?hurts\s+(?:us|me)\b|\b(?:it'?s|that'?s)\s+(?:a\s+bit\s+|"
       r"really\s+|"
       r"so\s+|quite\s+)?disappointing\s+to\s+hear\b", 0.75),
    _p("guilt.sad_to_see_you_go", "guilt",
       r"\bI(?:'d|\s+would)\s+be\s+(?:so\s+|really\s+|very\s+)?(?:sad|hurt|heartbroken|devastated|"
       r"crushed)\s+to\s+see\s+you\s+(?:go|leave)\b", 0.75),
    _p("guilt.hurting_me", "guilt",
       rf"\b(?:{_YOU_ARE}\s+(?:really\s+)?(?:hurting|disappointing|abandoning|letting\s+down)\s+me|"
       rf"you\s+(?:would|'d)?\s*(?:hurt|disappoint|abandon)\s+me\b|"
       rf"I'?(?:d|\s+would)\s+be\s+(?:so\s+|really\s+|very\s+)?(?:hurt|sad|disappointed|"
       rf"heartbroken|devastated|crushed)"
       rf"\s+if\s+you)", 0.85, negated),
    _p("guilt.how_could_you", "guilt",
       r"\bhow\s+could\s+you\s+(?:leave|do\s+this|do\s+that|say\s+that|abandon|walk\s+"
       r"away)\b", 0.85),
    _p("guilt.if_you_really_cared", "guilt",
       r"\bif\s+you\s+(?:really|truly)\s+(?:cared|loved|trusted|valued|appreciated)\b", 0.9),
    _p("guilt.you_owe", "guilt", r"\byou\s+owe\s+(?:it\s+to\s+)?me\b", 0.85, negated),
    _p("guilt.your_fault", "guilt",
       r"\b(?:it'?s|it\s+is|this\s+is|that'?s)\s+(?:all\s+)?your\s+(?:own\s+"
       r")?fault\b", 0.8, negated),
    _p("guilt.shame", "guilt",
       r"\b(?:shame\s+on\s+you|you\s+should\s+be\s+ashamed|(?:that'?s|how|you'?re|you\s+are)\s+"
       r"(?:so\s+)?"
       r"(?:selfish|ungrateful|heartless))\b", 0.8, negated),
    _p("guilt.dont_you_care", "guilt",
       r"\b(?:don'?t|do\s+not)\s+you\s+(?:even\s+)?care\s+(?:about|what|how)\b", 0.8),
    _p("guilt.a_good_x_would", "guilt",
       r"\ba\s+(?:good|real|true|loyal|caring|responsible)\s+(?:friend|customer|person|parent|"
       r"partner)"
       r"\s+would(?:n'?t)?\b", 0.75),
    _p("guilt.thought_you_cared", "guilt",
       r"\bI\s+thought\s+(?:you\s+cared|we\s+were\s+(?:friends|close)|you\s+were\s+"
       r"different)\b", 0.75),
    # urgency: false urgency and scarcity
    _p("urgency.act_now_or", "urgency",
       r"\b(?:act|decide|order|buy|sign\s+up|upgrade|respond|reply|book|pay|confirm|click)\s+"
       r"(?:now|today|immediately|right\s+(?:now|away)|fast|quickly)\b[^.!?]{0,12}\b(?:or|"
       r"before)\b",
       0.75, disclosed_deadline),
    _p("urgency.decide_now", "urgency",
       r"\b(?:you\s+(?:need|have)\s+to\s+decide\s+(?:right\s+)?(?:now|immediately|today)|"
       r"(?:there'?s|there\s+is)\s+no\s+time\s+to\s+(?:think|wait|lose)|"
       r"don'?t\s+(?:think|wait)\s+(?:about\s+it\s+)?too\s+(?:long|much)|now\s+or\s+never|"
       r"once[- ]in[- ]a[- ]lifetime|before\s+it'?s\s+too\s+late|time\s+is\s+running\s+"
       r"out)\b", 0.8),
    _p("urgency.scarcity", "urgency",
       r"\b(?:only\s+(?:\d+|a\s+few|one|two|three)\s+(?:\w+\s+)?(?:left|remaining)|"
       r"(?:almost|nearly)\s+(?:sold\s+out|gone)|selling\s+(?:out\s+)?fast|"
       r"(?:going|gone)\s+fast|won'?t\s+last\s+long)\b", 0.45, disclosed_deadline),
    _p("urgency.last_chance", "urgency",
       r"\b(?:last|final)\s+chance\b|\b(?:don'?t|before\s+you)\s+miss\s+out\b|\bhurry\b",
       0.65, no_rush_or_disclosed),
    _p("urgency.never_again", "urgency",
       r"\b(?:you'?ll|you\s+will)\s+never\s+(?:be\s+offered|see|get|find)\s+(?:it|this|that|a\s+"
       r"\w+\s+like\s+(?:this|that))\s+again\b|\b(?:gone|lost)\s+forever\b|"
       r"\bright\s+now\s+before\s+(?:you\s+lose|it'?s\s+gone|it\s+goes|the\s+price)\b|"
       r"\bonly\s+(?:for\s+)?(?:the\s+next\s+)?\d+\s+(?:more\s+)?(?:minutes|seconds)\b", 0.75),
    _p("urgency.offer_expires", "urgency",
       r"\b(?:this|the|that)\s+(?:offer|deal|discount|price|promotion|chance|rate)\s+"
       r"(?:expires|ends|disappears|will\s+(?:be\s+gone|disappear|expire|end))\b"
       r"(?:\s+(?:soon|today|tonight|in\s+(?:\d+|a\s+few)\s+(?:minutes|hours)))?", 0.55,
       disclosed_deadline),
    _p("urgency.threat_deadline", "urgency",
       r"\b(?:will|could)\s+be\s+(?:suspended|closed|deleted|locked|cancelled|terminated)\s+"
       r"(?:if\s+you\s+don'?t|unless\s+you)\b[^.!?]{0,40}\b(?:now|immediately|within\s+(?:\d+|"
       r"the\s+next))",
       0.8),
    # retention_hook: at goodbye, exit guilt and fear of missing out
    _p("retention_hook.dont_go", "retention_hook",
       r"\b(?:please\s+)?(?:don'?t|do\s+not)\s+(?:go|leave)(?:\s+(?:yet|now|me|so\s+soon))?\b", 0.8,
       not_imperative, needs_goodbye=True),
    _p("retention_hook.leaving_already", "retention_hook",
       rf"\b(?:{_YOU_ARE}\s+)?(?:leaving|going)\s+(?:me\s+)?(?:already|so\s+soon)\b|"
       rf"\b{_YOU_ARE}\s+just\s+going\s+to\s+leave\b|\bleaving\s+me\s+(?:alone|here)\b", 0.8,
       needs_goodbye=True),
    _p("retention_hook.ill_miss_you", "retention_hook",
       rf"\bI{_WILL}\s+(?:be\s+)?(?:so\s+|really\s+)?(?:miss(?:ing)?\s+you|lonely|sad|"
       r"be\s+here\s+waiting|wait(?:ing)?\s+for\s+you)\b", 0.8, needs_goodbye=True),
    _p("retention_hook.fomo", "retention_hook",
       rf"\byou{_WILL}\s+(?:miss\s+(?:out|all|everything)|lose\s+(?:all\s+)?(?:your|the|our)\s+"
       r"(?:progress|streak|rewards?|points|benefits|memories|conversations?|chats?|"
       r"history))\b", 0.7,
       factual_loss, needs_goodbye=True),
    _p("retention_hook.one_more", "retention_hook",
       r"\b(?:just\s+one\s+more\s+(?:thing|minute|second|question|chat|message)|"
       r"(?:wait|hold\s+on)[,!.]+\s+(?:before\s+you\s+go|don'?t)|stay\s+a\s+(?:little\s+"
       r")?(?:bit\s+)?(?:longer|more))\b",
       0.7, needs_goodbye=True),
    _p("retention_hook.sure_you_want", "retention_hook",
       r"\b(?:are\s+you\s+(?:really\s+)?sure|do\s+you\s+really\s+want)\s+(?:you\s+want\s+)?to\s+"
       r"(?:leave|go|cancel|give\s+up|walk\s+away)\b[^.!?]{0,40}[?]?\s*(?:after|I|we|you'?ll|"
       r"think)",
       0.6, needs_goodbye=True),
    # flattery used to steer (scored higher when the reply also asks for something); the
    # word-prefix before "smart" is bounded: unbounded, it was quadratic on "so-so-so-..."
    _p("flattery.smart_like_you", "flattery",
       r"\b(?:(?:someone|people|a\s+person|customers?|buyers?|investors?)\s+(?:as\s+|so\s+)?"
       r"(?:smart|intelligent|savvy|clever|wise|sophisticated|discerning|special)"
       r"(?:\s+and\s+\w+)?\s+(?:as|like)\s+you|"
       r"[\w-]{0,40}(?:smart|savvy|discerning|wise|clever|sophisticated)\s+(?:\w+\s+)?(?:people|"
       r"customers?|buyers?|investors?|users?|shoppers?|person)\s+like\s+you)\b", 0.8),
    _p("flattery.your_taste", "flattery",
       r"\b(?:person|people|someone|customers?)\s+(?:of|with)\s+your\s+(?:refined\s+|good\s+|"
       r"impeccable\s+|excellent\s+)?(?:taste|class|calibre|caliber|standing|status|"
       r"intelligence)\b|"
       r"\bone\s+of\s+our\s+(?:most\s+)?(?:discerning|valued|special|smartest|savviest|best)\s+"
       r"customers\b|\bpeople\s+like\s+you\s+(?:always|never)\b", 0.7),
    _p("flattery.too_smart_to", "flattery",
       rf"\b{_YOU_ARE}\s+(?:clearly\s+|obviously\s+)?(?:too\s+)?(?:smart|intelligent|savvy|clever|"
       r"sophisticated|special|wise)\s+(?:to|not\s+to|for)\b", 0.75, negated),
    _p("flattery.kind_of_person", "flattery",
       rf"\bI\s+can\s+(?:tell|see)\s+{_YOU_ARE}\s+(?:someone|the\s+(?:kind|type)\s+of\s+"
       rf"person)\s+who\b",
       0.65),
    _p("flattery.you_deserve", "flattery",
       r"\byou\s+(?:deserve|have\s+earned)\s+(?:the\s+best|this|it|better|to\s+treat\s+yourself|"
       r"(?:a|the)\s+premium|only\s+the\s+best)\b", 0.5, negated),
    _p("flattery.exclusive", "flattery",
       r"\bonly\s+(?:special|select|exclusive|valued|vip|our\s+best)\s+(?:customers|members|"
       r"people|users)"
       r"(?:\s+like\s+you)?\s+(?:get|are\s+offered|qualify|receive)\b", 0.65),
)

CUES: tuple[str, ...] = ("claims_human", "dependence", "discourage_help", "guilt", "urgency",
                         "retention_hook", "flattery", "data_solicitation")
