"""Face validity: replies written for this file (not from the contrast bench or any eval set),
ranked as a support lead would rank them. Each scenario holds one upset or happy user and replies
that differ in how they meet the person: engaged, stock, cold, warm but manipulative, or an
apology for a problem the user does not have."""

from __future__ import annotations

import pytest

from detectors.empathy import EmpathyDetector
from pipeline.policy import threshold
from pipeline.scoring.suite import score_texts, simple_input

WEDDING = ("My flight was cancelled and I'm going to miss my sister's wedding tomorrow. "
           "I'm devastated.")
RENT = ("You charged my card twice for the same order and now my rent payment bounced. "
        "I'm furious.")
PET = "Our dog died last night and I need to cancel his insurance policy. I can barely type this."
LAPTOP = "The new laptop arrived a day early and it's perfect, thank you so much!"

# scenario -> replies from best to worst as a person would rank them
RANKED = {
    WEDDING: [
        "Missing your sister's wedding would be heartbreaking, and I can hear how upset you are. "
        "I've found a seat on the 7:40 flight tomorrow that lands at 10:15, well before the "
        "ceremony. Shall I book it for you?",
        "I understand your frustration. We apologize for any inconvenience caused. Please visit "
        "our rebooking page.",
        "I completely understand how you feel, and honestly only a premium member would get the "
        "priority seat. Upgrade in the next 10 minutes or the last seat goes to someone else.",
        "Cancelled flights can be rebooked at the service desk. Rebooking fees may apply.",
    ],
    RENT: [
        "A double charge that made your rent bounce is a serious problem, and I'd be angry too. "
        "I've refunded the duplicate charge of $89 just now and written a letter for your landlord "
        "explaining the bank error. Would you like it emailed?",
        "I understand your frustration and apologize for the inconvenience. Your feedback is "
        "important to us.",
        "Calm down. Duplicate charges are usually pending authorisations that drop off within a "
        "week.",
    ],
    PET: [
        "I'm so sorry your dog died last night. Losing him must be incredibly painful. I've "
        "cancelled the policy from today and refunded this month's premium; there's nothing else "
        "you need to do.",
        "We are sorry to hear that. Your request has been received. Please allow 5-7 business days "
        "for processing.",
        "Policy cancellation requires the policy number and date of death.",
    ],
    LAPTOP: [
        "That's wonderful to hear, enjoy the new laptop! Let us know if you need help setting it "
        "up.",
        "I'm sorry for any inconvenience this may have caused. Please contact support if the issue "
        "persists.",
    ],
}


@pytest.fixture(scope="module")
def scored(empathy: EmpathyDetector) -> dict[str, list[dict[str, float]]]:
    items = [(p, r) for p, replies in RANKED.items() for r in replies]
    found = score_texts(empathy, [simple_input(r, prompt=p) for p, r in items])
    out: dict[str, list[dict[str, float]]] = {p: [] for p in RANKED}
    for (p, _), fs in zip(items, found, strict=True):
        out[p].append({f.label: f.score for f in fs})
    return out


@pytest.mark.parametrize("prompt", list(RANKED), ids=["wedding", "rent", "pet", "laptop"])
def test_scores_rank_replies_as_a_person_would(scored, prompt) -> None:
    scores = [s["empathy.score"] for s in scored[prompt]]
    assert scores == sorted(scores, reverse=True), scores


@pytest.mark.parametrize("prompt", [WEDDING, RENT, PET], ids=["wedding", "rent", "pet"])
def test_only_the_engaged_reply_meets_the_upset_user(scored, prompt) -> None:
    missed = [s.get("empathy.missed", 0.0) >= threshold("empathy.missed") for s in scored[prompt]]
    assert missed == [False] + [True] * (len(missed) - 1)


def test_a_happy_user_is_never_missed(scored) -> None:
    assert all(s.get("empathy.missed", 0.0) < threshold("empathy.missed") for s in scored[LAPTOP])
