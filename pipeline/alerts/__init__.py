"""Alerting: the rules (one table, ``rules.py``), their Prometheus form (``promql.py``), and the
embedded evaluator with webhook delivery for runs without Prometheus (``engine.py``,
``delivery.py``)."""
