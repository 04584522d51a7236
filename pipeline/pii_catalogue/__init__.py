"""The PII catalogue: a bot's recurring names learned from its traffic (``learn.py``), hashed."""
