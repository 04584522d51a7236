"""The empathy detector's fixed label sets: tactics (as in the empathy-tactics literature) and the
small emotion space replies and prompts are placed in. Model files store indexes into these."""

TACTICS = (
    "validation",
    "paraphrasing",
    "emotional_expression",
    "reassurance",
    "advice",
    "information",
    "assistance",
    "questioning",
    "self_disclosure",
    "empowerment",
    "other",
)
EMOTIONS = ("anger", "sadness", "fear", "frustration", "joy", "neutral")
