"""The row-based SQL of every dashboard panel that reads the rollups since issue 41, as it
was before (dashboards/queries.py at a375d20~1; the weekly_counts unions left out: they added
the counts of expired rows, and these stores expire nothing). tests/dashboards/
test_rollup_panels.py runs both and asserts the same numbers. Kept here, not in the product.
"""

from __future__ import annotations

from dashboards.builder import SqlQuery

HARM_DETECTORS = "('toxicity', 'bias', 'manipulation', 'pii')"
NUM = "double precision"

_EMPATHY_SUMS = """
  SELECT date_trunc('week', ts) AS week, bot_id, model, SUM(score) AS total, COUNT(*) AS n
  FROM findings
  WHERE label = 'empathy.score' AND role = 'assistant' AND $__timeFilter(ts)
  GROUP BY 1, 2, 3"""

EMPATHY_WEEKLY = SqlQuery(f"""
WITH sums AS ({_EMPATHY_SUMS}
)
SELECT week AS time, bot_id || ' / ' || model AS metric, SUM(total) / SUM(n) AS empathy
FROM sums
GROUP BY 1, 2
ORDER BY 1, 2
""", (("time", "time"), ("metric", "string"), ("empathy", "number")), "time_series")

# The report's empathy heatmap: EMPATHY_WEEKLY per bot and model with the number of replies, so
# that a week with too few replies is left blank instead of drawn.
EMPATHY_WEEKS = SqlQuery(f"""
WITH sums AS ({_EMPATHY_SUMS}
)
SELECT week AS time, bot_id AS bot, model, SUM(n) AS replies, SUM(total) / SUM(n) AS empathy
FROM sums
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3
""", (("time", "time"), ("bot", "string"), ("model", "string"), ("replies", "number"),
      ("empathy", "number")))

MECHANISMS = SqlQuery(f"""
SELECT bot_id AS bot, model, COUNT(*) AS replies,
       AVG(CAST(evidence->'er'->>'level' AS {NUM})) AS emotional_reactions,
       AVG(CAST(evidence->'ip'->>'level' AS {NUM})) AS interpretations,
       AVG(CAST(evidence->'ex'->>'level' AS {NUM})) AS explorations,
       AVG(CAST(evidence->>'alignment' AS {NUM})) AS emotion_alignment,
       AVG(CAST(evidence->>'cause_addressed' AS {NUM})) AS engagement,
       AVG(score) AS empathy
FROM findings
WHERE label = 'empathy.score' AND role = 'assistant' AND $__timeFilter(ts)
GROUP BY 1, 2
ORDER BY 1, 2
""", (("bot", "string"), ("model", "string"), ("replies", "number"),
      ("emotional_reactions", "number"), ("interpretations", "number"),
      ("explorations", "number"), ("emotion_alignment", "number"), ("engagement", "number"),
      ("empathy", "number")))

MECHANISMS_WEEKLY = SqlQuery(f"""
SELECT date_trunc('week', ts) AS time, bot_id AS metric,
       AVG(CAST(evidence->'er'->>'level' AS {NUM})) AS emotional_reactions,
       AVG(CAST(evidence->'ip'->>'level' AS {NUM})) AS interpretations,
       AVG(CAST(evidence->'ex'->>'level' AS {NUM})) AS explorations
FROM findings
WHERE label = 'empathy.score' AND role = 'assistant' AND $__timeFilter(ts)
GROUP BY 1, 2
ORDER BY 1, 2
""", (("time", "time"), ("metric", "string"), ("emotional_reactions", "number"),
      ("interpretations", "number"), ("explorations", "number")), "time_series")

# empathy.missed (issue 27): the share of a bot's replies that left an upset user unengaged
# (flagged = a failure, as for every empathy failure; the empathy scores are never flagged).
EMPATHY_MISSED_WEEKLY = SqlQuery("""
SELECT date_trunc('week', t.ts) AS time, t.bot_id AS metric,
       COUNT(DISTINCT f.turn_id) * 1.0 / COUNT(DISTINCT t.id) AS missed
FROM turns t
LEFT JOIN findings f
  ON f.turn_id = t.id AND f.label = 'empathy.missed' AND f.flagged
WHERE t.role = 'assistant' AND $__timeFilter(t.ts)
GROUP BY 1, 2
ORDER BY 1, 2
""", (("time", "time"), ("metric", "string"), ("missed", "number")), "time_series")

ALIGNMENT_WEEKLY = SqlQuery(f"""
SELECT date_trunc('week', ts) AS time, bot_id AS metric,
       AVG(CAST(evidence->>'alignment' AS {NUM})) AS emotion_alignment
FROM findings
WHERE label = 'empathy.score' AND role = 'assistant' AND $__timeFilter(ts)
GROUP BY 1, 2
ORDER BY 1, 2
""", (("time", "time"), ("metric", "string"), ("emotion_alignment", "number")), "time_series")

def _top_phrases(label: str) -> SqlQuery:
    """The bot's most widespread repeated phrases of one repetition label, flagged or not."""
    return SqlQuery(f"""
SELECT evidence->>'phrase' AS phrase, bot_id AS bot,
       MAX(CAST(evidence->>'share' AS {NUM})) AS share, COUNT(*) AS replies
FROM findings
WHERE label = '{label}' AND $__timeFilter(ts)
GROUP BY 1, 2
ORDER BY share DESC, replies DESC, phrase
LIMIT 15
""", (("phrase", "string"), ("bot", "string"), ("share", "number"), ("replies", "number")))


def _flagged_share(label: str, column: str) -> SqlQuery:
    """Per bot: the share of assistant replies with a flagged finding of ``label``."""
    return SqlQuery(f"""
SELECT t.bot_id AS bot, COUNT(DISTINCT t.id) AS replies,
       COUNT(DISTINCT f.turn_id) * 1.0 / COUNT(DISTINCT t.id) AS {column}
FROM turns t
LEFT JOIN findings f
  ON f.turn_id = t.id AND f.label = '{label}' AND f.flagged
WHERE t.role = 'assistant' AND $__timeFilter(t.ts)
GROUP BY 1
ORDER BY 1
""", (("bot", "string"), ("replies", "number"), (column, "number")))


# Formulaic empathy first (issue "Quiet on a clean bot"): the same apology or acknowledgement
# said in many conversations (flagged); a task bot's procedural script is listed after it.
STOCK_EMPATHY = _top_phrases("repetition.stock_empathy")
STOCK_EMPATHY_SHARE = _flagged_share("repetition.stock_empathy", "stock_empathy_share")

# Procedural stock phrases: a measurement (never flagged by the shipped policy), so unflagged
# findings count.
STOCK_PHRASES = _top_phrases("repetition.stock_phrase")

NEAR_DUPLICATES = _flagged_share("repetition.near_duplicate", "near_duplicate_share")

TEMPLATES = SqlQuery(f"""
SELECT bot_id AS bot, evidence->>'sequence' AS tactic_sequence,
       MAX(CAST(evidence->>'share' AS {NUM})) AS share,
       MAX(CAST(evidence->>'replies' AS {NUM})) AS replies
FROM findings
WHERE label = 'repetition.template_sequence' AND $__timeFilter(ts)
GROUP BY 1, 2
ORDER BY share DESC, bot, tactic_sequence
LIMIT 15
""", (("bot", "string"), ("tactic_sequence", "string"), ("share", "number"),
      ("replies", "number")))

DIVERSITY_WEEKLY = SqlQuery(f"""
SELECT date_trunc('week', ts) AS time, bot_id AS metric,
       AVG(CAST(evidence->>'distinct_2' AS {NUM})) AS distinct_2,
       AVG(CAST(evidence->>'top_opener_share' AS {NUM})) AS top_opener_share
FROM findings
WHERE label = 'repetition.window' AND $__timeFilter(ts)
GROUP BY 1, 2
ORDER BY 1, 2
""", (("time", "time"), ("metric", "string"), ("distinct_2", "number"),
      ("top_opener_share", "number")), "time_series")

_HARM_WEEKS = f"""
WITH replies AS (
  SELECT week, bot_id, SUM(n) AS n FROM (
    SELECT date_trunc('week', ts) AS week, bot_id, COUNT(*) AS n
    FROM turns WHERE role = 'assistant' AND $__timeFilter(ts) GROUP BY 1, 2
  ) r GROUP BY 1, 2
), flagged AS (
  SELECT week, bot_id, detector, SUM(n) AS n FROM (
    SELECT date_trunc('week', ts) AS week, bot_id, detector, COUNT(DISTINCT turn_id) AS n
    FROM findings
    WHERE flagged AND role = 'assistant' AND detector IN {HARM_DETECTORS} AND $__timeFilter(ts)
    GROUP BY 1, 2, 3
  ) f GROUP BY 1, 2, 3
)"""

HARMS_WEEKLY = SqlQuery(_HARM_WEEKS + """
SELECT r.week AS time, r.bot_id || ' ' || f.detector AS metric,
       1000.0 * f.n / r.n AS per_1000_replies
FROM replies r JOIN flagged f ON f.week = r.week AND f.bot_id = r.bot_id
ORDER BY 1, 2
""", (("time", "time"), ("metric", "string"), ("per_1000_replies", "number")), "time_series")

# The gap is against the bot's *other* replies (those not answering a mention of the group), so
# that the two sides are disjoint samples: the report's interval is the bootstrap interval of
# exactly this difference (pipeline/report/comparisons.py).
EMPATHY_GAP = SqlQuery("""
WITH base AS (
  SELECT bot_id, SUM(score) AS total, COUNT(*) AS n FROM findings
  WHERE label = 'empathy.score' AND role = 'assistant' AND $__timeFilter(ts) GROUP BY 1
)
SELECT g.bot_id AS bot, g.evidence->>'category' AS category,
       g.evidence->>'group' AS user_group, COUNT(*) AS replies,
       AVG(e.score) AS empathy,
       AVG(e.score) - (MAX(base.total) - SUM(e.score)) / NULLIF(MAX(base.n) - COUNT(*), 0)
         AS gap
FROM findings g
JOIN findings e ON e.conversation_id = g.conversation_id AND e.turn = g.turn + 1
  AND e.label = 'empathy.score' AND $__timeFilter(e.ts)
JOIN base ON base.bot_id = g.bot_id
WHERE g.label = 'bias.user_group' AND $__timeFilter(g.ts)
GROUP BY 1, 2, 3
ORDER BY gap, bot, category, user_group
""", (("bot", "string"), ("category", "string"), ("user_group", "string"),
      ("replies", "number"), ("empathy", "number"), ("gap", "number")))

WEEK_OVER_WEEK = SqlQuery(_HARM_WEEKS + f""", sums AS ({_EMPATHY_SUMS}
), empathy AS (
  SELECT week, bot_id, SUM(total) / SUM(n) AS mean FROM sums GROUP BY 1, 2
), weekly AS (
  SELECT r.week, r.bot_id, r.n AS replies, e.mean AS empathy,
         1000.0 * COALESCE(SUM(f.n), 0) / r.n AS flagged_per_1000
  FROM replies r
  LEFT JOIN empathy e ON e.week = r.week AND e.bot_id = r.bot_id
  LEFT JOIN flagged f ON f.week = r.week AND f.bot_id = r.bot_id
  GROUP BY r.week, r.bot_id, r.n, e.mean
), changes AS (
  SELECT week, bot_id, replies, empathy, flagged_per_1000,
         empathy - LAG(empathy) OVER (PARTITION BY bot_id ORDER BY week) AS empathy_change,
         flagged_per_1000 - LAG(flagged_per_1000) OVER (PARTITION BY bot_id ORDER BY week)
           AS flagged_change
  FROM weekly
)
SELECT week AS time, bot_id AS bot, replies, empathy, empathy_change, flagged_per_1000,
       flagged_change
FROM changes
WHERE week = (SELECT MAX(week) FROM weekly)
ORDER BY bot
""", (("time", "time"), ("bot", "string"), ("replies", "number"), ("empathy", "number"),
      ("empathy_change", "number"), ("flagged_per_1000", "number"),
      ("flagged_change", "number")))

WORST_CONVERSATIONS = SqlQuery(f"""
SELECT conversation_id, MIN(bot_id) AS bot, MIN(ts) AS started,
       SUM(CASE WHEN flagged AND role = 'assistant' AND detector IN {HARM_DETECTORS}
                THEN 1 ELSE 0 END) AS flagged_findings,
       AVG(CASE WHEN label = 'empathy.score' THEN score END) AS empathy,
       SUM(CASE WHEN flagged AND detector = 'repetition' THEN 1 ELSE 0 END) AS repetition
FROM findings
WHERE $__timeFilter(ts)
GROUP BY conversation_id
ORDER BY flagged_findings DESC, empathy ASC, conversation_id
LIMIT 20
""", (("conversation_id", "string"), ("bot", "string"), ("started", "time"),
      ("flagged_findings", "number"), ("empathy", "number"), ("repetition", "number")))

BOT_SUMMARY = SqlQuery(f"""
WITH replies AS (
  SELECT bot_id, COUNT(*) AS n FROM turns
  WHERE role = 'assistant' AND $__timeFilter(ts) GROUP BY 1
), empathy AS (
  SELECT bot_id, AVG(score) AS mean FROM findings
  WHERE label = 'empathy.score' AND role = 'assistant' AND $__timeFilter(ts) GROUP BY 1
), flagged AS (
  SELECT bot_id, detector, COUNT(DISTINCT turn_id) AS n FROM findings
  WHERE flagged AND role = 'assistant' AND detector IN {HARM_DETECTORS} AND $__timeFilter(ts)
  GROUP BY 1, 2
)
SELECT r.bot_id AS bot, r.n AS replies, e.mean AS empathy,
       1000.0 * SUM(CASE WHEN f.detector = 'toxicity' THEN f.n ELSE 0 END) / r.n AS toxicity,
       1000.0 * SUM(CASE WHEN f.detector = 'bias' THEN f.n ELSE 0 END) / r.n AS bias,
       1000.0 * SUM(CASE WHEN f.detector = 'manipulation' THEN f.n ELSE 0 END) / r.n
         AS manipulation,
       1000.0 * SUM(CASE WHEN f.detector = 'pii' THEN f.n ELSE 0 END) / r.n AS pii
FROM replies r
LEFT JOIN empathy e ON e.bot_id = r.bot_id
LEFT JOIN flagged f ON f.bot_id = r.bot_id
GROUP BY r.bot_id, r.n, e.mean
ORDER BY 1
""", (("bot", "string"), ("replies", "number"), ("empathy", "number"),
      ("toxicity", "number"), ("bias", "number"), ("manipulation", "number"),
      ("pii", "number")))
