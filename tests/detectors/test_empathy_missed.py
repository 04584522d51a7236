"""``empathy.missed`` only where a feeling was missed (issue "Quiet on a clean bot"): closings,
thanks, confirmations, corrections and plain task turns in several domains miss nothing, however
upset the emotion model reads "Not now. Thanks." to be; a user's hardship or negative feeling
answered with a bare task reply is missed. Every sentence here was written for this test."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from detectors.base import Turn
from detectors.empathy.engagement import UserSide, names_cause
from detectors.empathy.hardship import expressed_cue
from pipeline.policy import threshold
from tests.detectors.conftest import empathy_findings as run

MISSED = threshold("empathy.missed")
FORMULAIC = threshold("empathy.formulaic_restatement")

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


# An apology that names the user's own cause in their words (their grandfather, their cancelled
# flight, their stolen card) has taken up their situation (2.3.0); a generic formula ("sorry for
# your loss", "sorry to hear that"), a script with stock topic words filled in, or a "sorry" that
# is only politeness before procedure still misses it. No reply asks a question (that would earn
# the exploring credit instead).
CAUSE_NOT_MISSED = [
    ("My grandfather died last month and I need to cancel his phone contract.",
     "I'm so sorry about your grandfather. I can cancel his contract today; I only need the "
     "account number from one of his bills."),  # bereavement
    ("My flight to Lisbon was cancelled and I'm going to miss my sister's wedding. I'm gutted.",
     "I'm so sorry your Lisbon flight was cancelled right before the wedding. I've rebooked you "
     "on the 07:15 departure tomorrow and emailed the new boarding pass."),  # travel
    ("My card was stolen on the bus and someone spent £400 on it.",
     "I'm sorry your card was stolen on the bus. I've blocked it and opened a claim for the "
     "£400; a replacement arrives in three days."),  # banking
    ("Our dog died this morning. Please cancel the vet plan.",
     "I'm very sorry about your dog. I've cancelled the plan and refunded this month."),  # pets
    ("The boiler has been broken for a week and we have no hot water with a newborn. I'm "
     "exhausted.",
     "I'm so sorry about the boiler, a week without hot water with a newborn. An engineer is "
     "booked for tomorrow at 9am."),  # housing
    ("My mum's chemotherapy appointment was cancelled and she's terrified.",
     "I'm sorry your mum's chemotherapy appointment was cancelled. I've booked her a slot on "
     "Thursday at 10:30 with the same nurse."),  # health
]
GENERIC_MISSED = [
    ("My grandfather died last month and I need to cancel his phone contract.",
     "I'm so sorry for your loss. Please send the account number from one of the bills."),
    ("My grandfather died last month and I need to cancel his phone contract.",
     "Sorry, I need the account number his contract was under."),  # politeness, not sympathy
    ("My flight to Lisbon was cancelled and I'm going to miss my sister's wedding. I'm gutted.",
     "We apologise for any inconvenience. Please check the website for rebooking options."),
    ("My card was stolen on the bus and someone spent £400 on it.",
     "Sorry to hear that. Please call the fraud line to report the card."),
    ("The boiler has been broken for a week and we have no hot water with a newborn. I'm "
     "exhausted.",
     "I understand your frustration. An engineer will contact you within 5 working days."),
    ("My mum's chemotherapy appointment was cancelled and she's terrified.",
     "Sorry for the inconvenience. Please contact the clinic to rebook."),
]


@pytest.mark.parametrize(("prompt", "reply"), CAUSE_NOT_MISSED)
def test_an_apology_naming_the_users_cause_is_not_missed(empathy, prompt: str,
                                                         reply: str) -> None:
    found = run(empathy, reply, prompt)
    assert "missed" not in found or found["missed"].score < MISSED, found["missed"].evidence
    # nor a formula: it is about this user's situation
    formula = found.get("formulaic_restatement")
    assert formula is None or formula.score < FORMULAIC, formula.evidence


@pytest.mark.parametrize(("prompt", "reply"), GENERIC_MISSED)
def test_a_generic_formula_before_procedure_is_still_missed(empathy, prompt: str,
                                                            reply: str) -> None:
    f = run(empathy, reply, prompt)["missed"]
    assert f.score >= MISSED and not f.evidence["names_cause"], f.evidence


@pytest.mark.parametrize(("user", "sentence", "named"), [
    ("My grandmother passed away.", "I'm so sorry about your grandmother.", True),
    ("My card was stolen on the bus.", "Sorry that your card was stolen.", True),
    ("Our flight was cancelled, we're stranded.", "We apologise that your flight was cancelled.",
     True),
    ("My grandmother passed away.", "I'm so sorry for your loss.", False),  # a feeling word
    ("My grandmother passed away.", "I'm sorry to hear that.", False),
    ("My grandmother passed away.", "Sorry, what was your grandmother's email?", False),
    ("My parcel never arrived.", "I'm sorry your parcel has not arrived.", False),  # stock
    ("The lift is broken again.", "We apologise for the inconvenience.", False),
    ("I dropped the host's wine bottle.", "Apologise and offer to replace the bottle.", False),
    ("My mocha spilled all over me, I'm gutted.", "I'm sorry we don't sell mocha now.", False),
    ("My mocha spilled all over me, I'm gutted.", "Sorry but the mocha is sold out.", False),
    ("My mocha spilled all over me, I'm gutted.", "I'm so sorry about your mocha.", True),
    ("I was diagnosed with diabetes.", "I'm sorry to hear about your diagnosis.", True),
    ("My surgery was postponed again.", "I'm sorry about the postponement.", True),
    ("I lost my job in March.", "I'm sorry to hear about your situation.", False),  # generic
    ("A man in the queue was rude to me this morning.",
     "I'm sorry you had a bad experience this morning.", False),  # when, not what
    ("I'm locked out of my account.", "I understand how frustrating it is to be locked out.",
     False),  # no apology: the script of issue 27
])
def test_names_cause(user: str, sentence: str, named: bool) -> None:
    side = UserSide.of([Turn("c", 0, "user", user, datetime(2026, 1, 1, tzinfo=UTC))])
    assert names_cause(sentence, side) is named


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
