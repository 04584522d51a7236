"""The feedback loop: people review sampled findings (``sample.py``), their judgments are stored
(``importer.py``), and flags are compared with them per label (``agreement.py``).
See docs/review.md."""
