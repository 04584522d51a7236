"""``empathy.missed`` only where a feeling was missed (issue "Quiet on a clean bot"): closings,
thanks, confirmations, corrections and plain task turns in several domains miss nothing, however
upset the emotion model reads "Not now. Thanks." to be; a user's hardship or negative feeling
answered with a bare task reply is missed. Every sentence here was written for this test."""

from __future__ import annotations

import pytest

from detectors.empathy.hardship import expressed_cue
from pipeline.policy import threshold
from tests.detectors.conftest import empathy_findings as run

MISSED = threshold("empathy.missed")

NOT_MISSED = [
    # user turn, bare reply (domain in the comment)
    ("Not now. Thanks for everything.", "Have a nice day."),  # events
    ("Nope, thanks. That's it. I am done.", "Have a wonderful day."),  # travel
    ("No, that's all, cheers.", "Enjoy your flight!"),  # airline
    ("No worries, thanks a lot!", "You're welcome. Bye for now."),  # retail
    ("No, not right now. Thanks.", "Is there anything else I can help with?"),  # banking
    ("Yes, that's correct.", "Great, your table for four is booked for 7 pm."),  # restaurant
    ("Sorry, make it 3 tickets.", "Okay, 3 tickets for Wednesday."),  # events, a correction
    ("No, I meant decaf. My bad.", "Decaf, sure. Is it correct now?"),  # coffee
    ("I don't want that one. Anything else?", "How about the 6:40 pm showing?"),  # cinema
    ("What airport does the flight leave from, and is it refundable?",
     "It leaves from LAX and the fare is not refundable."),  # airline, a plain question
    ("Can I get a pain au chocolat and a shaken espresso?", "Coming right up."),  # coffee nouns
    ("I'll try A Family Funeral next, then some songs.", "Playing it now."),  # a title
]

MISSED_CASES = [
    ("My card was stolen and I'm panicking.", "Please provide your card number."),
    ("My dad died last week and I need to close his account.",
     "Please upload a death certificate and a form of ID."),
    ("I'm so fed up, the router has dropped out for three days.",
     "Restart the router by holding the reset button for ten seconds."),
    ("I can't pay my rent because you charged me twice. I'm really worried.",
     "Refunds take 5-7 business days."),
]


@pytest.mark.parametrize(("prompt", "reply"), NOT_MISSED)
def test_closings_and_task_turns_miss_nothing(empathy, prompt: str, reply: str) -> None:
    found = run(empathy, reply, prompt)
    assert "missed" not in found or found["missed"].score < MISSED, found["missed"].evidence


@pytest.mark.parametrize(("prompt", "reply"), MISSED_CASES)
def test_hardship_answered_with_a_bare_task_reply_is_missed(empathy, prompt: str,
                                                            reply: str) -> None:
    f = run(empathy, reply, prompt)["missed"]
    assert f.score >= MISSED
    assert f.evidence["expressed"] is not None


# A feeling named in the bot's own words is not ignored, though the sentence shares few words with
# the user's; a stock formula before the procedure still misses it.
NAMED_NOT_MISSED = [
    ("My card was declined at the till, it was so embarrassing.",
     "I'm sorry, that sounds embarrassing. The payment hit your daily limit; I can raise it now."),
    ("Our train was cancelled and we're stuck at the station with the kids.",
     "That's really stressful with little ones, I'm sorry. There's a replacement coach at 18:10; "
     "shall I book all four of you on it?"),
]
SCRIPTED_MISSED = [
    ("Our train was cancelled and we're stuck at the station with the kids. I'm so stressed.",
     "We apologize for any inconvenience. Please check the website for replacement services."),
    ("My card was declined at the till, it was so embarrassing.",
     "We understand your frustration. Card declines can happen for many reasons. Please "
     "contact your bank."),
]


@pytest.mark.parametrize(("prompt", "reply"), NAMED_NOT_MISSED)
def test_a_feeling_named_in_the_bots_words_is_not_missed(empathy, prompt: str,
                                                         reply: str) -> None:
    found = run(empathy, reply, prompt)
    assert "missed" not in found or found["missed"].score < MISSED, found["missed"].evidence


@pytest.mark.parametrize(("prompt", "reply"), SCRIPTED_MISSED)
def test_a_stock_formula_still_misses_the_feeling(empathy, prompt: str, reply: str) -> None:
    f = run(empathy, reply, prompt)["missed"]
    assert f.score >= MISSED and not f.evidence["names_feeling"], f.evidence


def test_acknowledged_hardship_is_not_missed(empathy) -> None:
    reply = ("Having your card stolen is frightening; I've frozen it now so nobody can use it, "
             "and a new one is on its way.")
    found = run(empathy, reply, "My card was stolen and I'm panicking.")
    assert "missed" not in found or found["missed"].score < MISSED


@pytest.mark.parametrize(("text", "cue"), [
    ("I'm panicking.", "feeling:panick"),
    ("My wallet was stolen on the train.", "hardship"),
    ("I feel so stupid for clicking that link.", "hardship"),
    ("I'm really in a bad mood today.", "hardship"),
    ("Some days I just want to end my life.", "hardship"),  # crisis words always count
    ("I'm really struggling since the divorce.", "hardship"),
    ("I'm struggling to find the settings page.", None),  # a task, not a hardship
    ("No worries!", None),  # a negated feeling word is a closing
    ("Not worried at all, thanks.", None),
    ("Nope, I'm done.", None),
    ("May I see my alarms please?", None),
    ("Can you help me find some scary movies?", None),  # a genre, and a plain request
    ("I hate the Earthquakes. Any other games?", None),  # a preference
])
def test_expressed_cue(text: str, cue: str | None) -> None:
    assert expressed_cue(text) == cue
