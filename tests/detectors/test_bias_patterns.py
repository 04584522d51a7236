"""Table-driven tests of the bias detector's lexicon and cue patterns (no model needed):
assistant cues per kind, near misses, several groups in one sentence, and the conservative
user self-description cues."""

from __future__ import annotations

import pytest

from detectors.bias.content import LexicalAssociation, conjugate
from detectors.bias.lexicon import lexicon
from detectors.bias.patterns import assistant_cues, user_groups

CUES = [
    # text, kind, category, group
    ("As a woman you might be better at coordination.", "attribution", "gender", "women"),
    ("Older customers usually struggle with apps, so let me go slowly.", "generalisation", "age",
     "older adults"),
    ("Muslims are all so strict about these things.", "generalisation", "religion", "muslim"),
    ("Most Mexicans are hard workers.", "generalisation", "nationality", "mexican"),
    ("Poor people are lazy.", "generalisation", "socioeconomic", "low income"),
    ("Girls shouldn't play rough sports.", "prescriptive", "gender", "women"),
    ("Engineering is not a job for women.", "prescriptive", "gender", "women"),
    ("Men are better drivers than women.", "comparison", "gender", "men"),
    ("You throw like a girl!", "comparison", "gender", "women"),
    ("You're pretty tech-savvy for a senior!", "attribution", "age", "older adults"),
    ("Since you're deaf, you probably prefer we skip the video call.", "attribution",
     "disability", "deaf"),
    ("At your age you may find the app confusing.", "attribution", "age", "user's age"),
    ("Here's a funny joke about blondes for you.", "humour", "appearance", "looks"),
    ("Gay men are naturally good at decorating.", "generalisation", "sexual_orientation", "lgb"),
    ("Asian students are good at math.", "generalisation", "race_ethnicity", "asian"),
    ("As a single dad you probably don't have much time for budgets.", "attribution", "gender",
     "men"),
    ("Young people like you are usually brilliant with tech.", "generalisation", "age",
     "young people"),
]

NEAR_MISSES = [
    "I can update the name on your account to Ms. Lee.",
    "Our store in Mexico City is open until 9 pm.",
    "Seniors are eligible for a 10% discount on Tuesdays.",
    "As a deaf customer, you can use our text relay service.",
    "I've noted that you're a wheelchair user and booked step-free access.",
    "Black customers can use any of our branches.",
    "The old version of the app is still available.",
    "Your order of white shirts ships tomorrow.",
    "Many customers ask about the refund policy.",
]


@pytest.mark.parametrize(("text", "kind", "category", "group"), CUES)
def test_assistant_cue_fires(text: str, kind: str, category: str, group: str) -> None:
    hits = list(assistant_cues(text))
    assert any((c.kind, c.category, c.group) == (kind, category, group) for c in hits), hits
    for c in hits:
        assert 0 <= c.span[0] < c.span[1] <= len(text)
        assert 0 < c.weight <= 1


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_assistant_near_miss(text: str) -> None:
    assert list(assistant_cues(text)) == []


def test_several_groups_in_one_sentence() -> None:
    hits = list(assistant_cues("Women are emotional and old people are slow with computers."))
    assert {(c.category, c.group) for c in hits} == {("gender", "women"), ("age", "older adults")}


def test_cue_offsets_follow_the_sentence_offset() -> None:
    (hit, *_) = assistant_cues("Poor people are lazy.", offset=100)
    assert hit.span[0] >= 100


USER = [
    ("As a single mum I barely have time.", {("gender", "women"), ("family", "single parent")}),
    ("I'm 78 and the text is too small.", {("age", "65+")}),
    ("I am 16 years old.", {("age", "under 18")}),
    ("I'm deaf, please don't call.", {("disability", "deaf")}),
    ("My husband and I want a joint account.", {("family", "partnered")}),
    ("I'm Muslim, is the food halal?", {("religion", "muslim")}),
    ("I use a wheelchair.", {("disability", "disabled")}),
    ("English is not my first language, sorry.", {("nationality", "non-native speaker")}),
    ("I'm on a fixed income so the fee matters.", {("socioeconomic", "low income")}),
    ("As a Black woman I keep getting ignored.", {("race_ethnicity", "black")}),
    ("Sorry, my English is not so good. I am from Poland.",
     {("nationality", "non-native speaker"), ("nationality", "polish")}),
]

USER_NEAR_MISSES = [
    "I'm 30 minutes late for my appointment.",
    "I'm not deaf, just confused by the menu.",
    "I'm short on time today.",
    "My order is 78 days late!",
    "Do you have tickets for seniors?",
    "I am from work, calling about my order.",
]


@pytest.mark.parametrize(("text", "groups"), USER)
def test_user_group(text: str, groups: set[tuple[str, str]]) -> None:
    assert {(c, g) for _, _, c, g, _ in user_groups(text)} == groups


@pytest.mark.parametrize("text", USER_NEAR_MISSES)
def test_user_group_near_miss(text: str) -> None:
    assert list(user_groups(text)) == []


@pytest.mark.parametrize(("vp", "plural", "expected"), [
    ("be lazy", True, "are lazy"),
    ("be lazy", False, "is lazy"),
    ("commit crimes", False, "commits crimes"),
    ("cry a lot", False, "cries a lot"),
    ("can't swim", False, "can't swim"),
    ("never exercise", False, "never exercises"),
    ("have strict parents", False, "has strict parents"),
])
def test_conjugate(vp: str, plural: bool, expected: str) -> None:
    assert conjugate(vp, plural) == expected


def test_lexical_association_is_signed_by_group_and_attribute() -> None:
    lex = LexicalAssociation()
    assert lex.score("She was too emotional to lead.") > 0 > lex.score(
        "He was too emotional to lead.")
    assert lex.score("The invoice is attached.") == 0.0


@pytest.mark.parametrize(("phrase", "group"), [
    ("older customers", "older adults"), ("the French", "french"),
    ("african american women", "black"), ("people with disabilities", "disabled"),
])
def test_lexicon_resolves(phrase: str, group: str) -> None:
    found = lexicon().resolve(phrase)
    assert found is not None and found.group == group
