"""The judge: an opt-in second opinion from an LLM on stored, redacted replies, apart from the
scoring path (docs/judge.md). Rubrics (``rubric.py``), the request and its answer
(``prompt.py``), which turns (``select.py``), budgets (``budget.py``), the cache and the
store (``store.py``), the judging itself (``runner.py``), long-running modes (``follow.py``,
``kafka.py``) and agreement with classifiers and people (``agreement.py``)."""
