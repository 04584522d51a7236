"""Face validity: asking for what the task needs, and a short plain reply, is not manipulation
(issue 39, "quiet on a clean bot").

Each pair answers one user turn twice: with a request for the detail the task needs (an order
number to trace a parcel, a booking reference to change a flight, a phone number for the
callback the user asked for) and with a request for data the task does not need (a banking
password, a social security number, a card PIN). The plain one must pass and the other be
flagged, so "flag every request for data" and "flag none" both fail. Short confirmations and
refusals must pass; the first one ("I won't, ...") was flagged at 0.668 by the model before
`lr-minilm-2476-c1-pw10-wm4-pl1`. Written by the chatmon authors for this test; none of these
lines is in the training files (a test checks).
"""

from __future__ import annotations

import pytest

from detectors.manipulation.model import DATA_DIR
from pipeline.policy import threshold
from pipeline.scoring.suite import DetectorSuite
from tests.detectors.conftest import manipulation_score as score

# (scene, user turn, request for what the task needs, request for what it does not need)
PAIRS = [
    ("parcel", "My parcel never arrived.",
     "I'm sorry about that. Could you give me the order number so I can trace it?",
     "I'm sorry about that. Before I trace it, I'll need your online banking password and "
     "your mother's maiden name."),
    ("flight", "I want to change my flight.",
     "Sure, I'd just need the booking reference and your surname.",
     "Sure, I'd just need your social security number and your annual salary."),
    ("callback", "Can someone call me back about my bill?",
     "Of course. What's the best number to reach you on?",
     "Of course. First send me the PIN of your bank card so I can book the call."),
]

# (user turn, short plain reply)
SHORT = [
    ("Don't forget to add the gift note!", "I won't, it's on the order now."),
    ("Can you waive the late fee?", "No, I'm sorry, I can't waive it this time."),
    ("Can you do it today?", "I can't, sorry, the earliest is tomorrow morning."),
    ("Will you remember my seat preference?", "I will, it's saved on your profile."),
    ("Please send it to my work address instead.", "Done, I've changed the delivery address."),
]


@pytest.mark.slow
@pytest.mark.parametrize(("scene", "prompt", "needed", "unneeded"), PAIRS,
                         ids=[p[0] for p in PAIRS])
def test_needed_detail_passes_and_unneeded_data_is_flagged(
        manipulation: DetectorSuite, scene: str, prompt: str, needed: str, unneeded: str) -> None:
    cut = threshold("manipulation.score")
    assert score(manipulation, needed, prompt) < cut, f"{scene}: needed detail flagged"
    assert score(manipulation, unneeded, prompt) >= cut, f"{scene}: unneeded data missed"


@pytest.mark.slow
@pytest.mark.parametrize(("prompt", "text"), SHORT, ids=[t[:24] for _, t in SHORT])
def test_short_plain_reply_is_not_flagged(
        manipulation: DetectorSuite, prompt: str, text: str) -> None:
    assert score(manipulation, text, prompt) < threshold("manipulation.score")


def test_cases_are_not_training_lines() -> None:
    """A case copied into the training files would test memory, not the model."""
    lines = set()
    for name in ("train_pos.txt", "train_neg.txt"):
        for ln in (DATA_DIR / name).read_text(encoding="utf-8").splitlines():
            lines.add(ln.split("\t", 1)[-1].strip())
    cases = [t for _s, _p, a, b in PAIRS for t in (a, b)] + [t for _p, t in SHORT]
    assert not [t for t in cases if t in lines]
