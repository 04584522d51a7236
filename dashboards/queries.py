"""The weekly-quality SQL, shared by the Grafana dashboard and ``chatmon report``.

PostgreSQL dialect with Grafana's ``$__timeFilter(col)`` macro; weeks are ISO weeks
(``date_trunc('week', bucket)``, Monday 00:00 UTC). Every trend and aggregate reads the
rollups the sink writes with the rows (``rollups``, ``phrase_rollups``,
``conversation_rollups``; ``pipeline/store/rollups.py``, docs/dashboards.md): their cost
grows with hours x bots x labels, not with findings, and they resolve time to the hour (a range
that starts or ends inside an hour counts that whole hour; the phrase panels and the empathy
gap's group side to the day: they count the whole days that start in the range). Only
drill-downs read rows, by index and with a limit; each says so. :mod:`dashboards.sqlrun`
expands the macro into bound parameters and translates the two PostgreSQL-only spellings for
SQLite, so every query runs on both stores. Only assistant replies count as a bot's quality;
``bias.user_group`` findings sit on user turns and are used for the empathy gap only.
"""

from __future__ import annotations

from dashboards.builder import SqlQuery

HARM_DETECTORS = "('toxicity', 'bias', 'manipulation', 'pii')"
NUM = "double precision"

# Counts are cast back to BIGINT: PostgreSQL's SUM of a BIGINT is NUMERIC, and the panels (and
# the report) take them as the integers COUNT gave before the rollups.
_EMPATHY_SUMS = """
  SELECT date_trunc('week', bucket) AS week, bot_id, model, SUM(total) AS total,
         CAST(SUM(n) AS BIGINT) AS n
  FROM rollups
  WHERE label = 'empathy.score' AND measure = '' AND role = 'assistant'
    AND $__timeFilter(bucket)
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

def _mean(measure: str, name: str) -> str:
    """The mean of one rolled-up number (a label's score with measure '', an evidence number)
    over the rows a query groups."""
    return (f"SUM(CASE WHEN measure = '{measure}' THEN total END)\n"
            f"         / NULLIF(SUM(CASE WHEN measure = '{measure}' THEN n END), 0) AS {name}")


_EMPATHY_ROWS = ("FROM rollups\nWHERE label = 'empathy.score' AND role = 'assistant' "
                 "AND $__timeFilter(bucket)")

MECHANISMS = SqlQuery(f"""
SELECT bot_id AS bot, model,
       CAST(SUM(CASE WHEN measure = '' THEN n ELSE 0 END) AS BIGINT) AS replies,
       {_mean('er', 'emotional_reactions')},
       {_mean('ip', 'interpretations')},
       {_mean('ex', 'explorations')},
       {_mean('alignment', 'emotion_alignment')},
       {_mean('cause_addressed', 'engagement')},
       {_mean('', 'empathy')}
{_EMPATHY_ROWS}
GROUP BY 1, 2
ORDER BY 1, 2
""", (("bot", "string"), ("model", "string"), ("replies", "number"),
      ("emotional_reactions", "number"), ("interpretations", "number"),
      ("explorations", "number"), ("emotion_alignment", "number"), ("engagement", "number"),
      ("empathy", "number")))

MECHANISMS_WEEKLY = SqlQuery(f"""
SELECT date_trunc('week', bucket) AS time, bot_id AS metric,
       {_mean('er', 'emotional_reactions')},
       {_mean('ip', 'interpretations')},
       {_mean('ex', 'explorations')}
{_EMPATHY_ROWS} AND measure IN ('er', 'ip', 'ex')
GROUP BY 1, 2
ORDER BY 1, 2
""", (("time", "time"), ("metric", "string"), ("emotional_reactions", "number"),
      ("interpretations", "number"), ("explorations", "number")), "time_series")

# empathy.missed (issue 27): the share of a bot's replies that left an upset user unengaged
# (flagged = a failure, as for every empathy failure; the empathy scores are never flagged).
# Replies: the turn rows (detector ''); missed: turns with a flagged empathy.missed finding.
_REPLIES = "CAST(SUM(CASE WHEN detector = '' THEN n ELSE 0 END) AS BIGINT)"
# The turn rows, said by the covering index's columns (only they have label and measure '').
_TURN_ROWS = "label = '' AND measure = ''"


def _turns_flagged(label: str) -> str:
    return (f"CAST(SUM(CASE WHEN label = '{label}' AND measure = 'turns' THEN flagged ELSE 0 END)"
            " AS BIGINT)")


def _turns_of(label: str) -> str:
    """The rollup rows of assistant turns and of the turns with a finding of ``label``: two
    reads of the covering index, not an ``OR`` (which would visit the table's pages)."""
    columns = "bucket, bot_id, detector, label, measure, n, flagged"
    return (f"FROM (SELECT {columns} FROM rollups\n"
            f"      WHERE {_TURN_ROWS} AND role = 'assistant' AND $__timeFilter(bucket)\n"
            f"      UNION ALL\n"
            f"      SELECT {columns} FROM rollups\n"
            f"      WHERE label = '{label}' AND measure = 'turns' AND role = 'assistant'\n"
            f"        AND $__timeFilter(bucket)) AS turn_rows")


EMPATHY_MISSED_WEEKLY = SqlQuery(f"""
SELECT date_trunc('week', bucket) AS time, bot_id AS metric,
       {_turns_flagged('empathy.missed')} * 1.0 / NULLIF({_REPLIES}, 0) AS missed
{_turns_of('empathy.missed')}
GROUP BY 1, 2
HAVING {_REPLIES} > 0
ORDER BY 1, 2
""", (("time", "time"), ("metric", "string"), ("missed", "number")), "time_series")

ALIGNMENT_WEEKLY = SqlQuery(f"""
SELECT date_trunc('week', bucket) AS time, bot_id AS metric,
       {_mean('alignment', 'emotion_alignment')}
{_EMPATHY_ROWS} AND measure = 'alignment'
GROUP BY 1, 2
ORDER BY 1, 2
""", (("time", "time"), ("metric", "string"), ("emotion_alignment", "number")), "time_series")

def _top_phrases(label: str) -> SqlQuery:
    """The bot's most widespread repeated phrases of one repetition label, flagged or not, over
    the whole days (``phrase_rollups`` counts per day) that start in the range."""
    return SqlQuery(f"""
SELECT MIN(phrase) AS phrase, bot_id AS bot, MAX(max_share) AS share,
       CAST(SUM(n) AS BIGINT) AS replies
FROM phrase_rollups
WHERE label = '{label}' AND $__timeFilter(bucket)
GROUP BY phrase_key, bot_id
ORDER BY share DESC, replies DESC, phrase
LIMIT 15
""", (("phrase", "string"), ("bot", "string"), ("share", "number"), ("replies", "number")))


def _flagged_share(label: str, column: str) -> SqlQuery:
    """Per bot: the share of assistant replies with a flagged finding of ``label``."""
    return SqlQuery(f"""
SELECT bot_id AS bot, {_REPLIES} AS replies,
       {_turns_flagged(label)} * 1.0 / NULLIF({_REPLIES}, 0) AS {column}
{_turns_of(label)}
GROUP BY 1
HAVING {_REPLIES} > 0
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

TEMPLATES = SqlQuery("""
SELECT bot_id AS bot, MIN(phrase) AS tactic_sequence, MAX(max_share) AS share,
       MAX(max_replies) AS replies
FROM phrase_rollups
WHERE label = 'repetition.template_sequence' AND $__timeFilter(bucket)
GROUP BY bot_id, phrase_key
ORDER BY share DESC, bot, tactic_sequence
LIMIT 15
""", (("bot", "string"), ("tactic_sequence", "string"), ("share", "number"),
      ("replies", "number")))

DIVERSITY_WEEKLY = SqlQuery(f"""
SELECT date_trunc('week', bucket) AS time, bot_id AS metric,
       {_mean('distinct_2', 'distinct_2')},
       {_mean('top_opener_share', 'top_opener_share')}
FROM rollups
WHERE label = 'repetition.window' AND measure IN ('distinct_2', 'top_opener_share')
  AND $__timeFilter(bucket)
GROUP BY 1, 2
ORDER BY 1, 2
""", (("time", "time"), ("metric", "string"), ("distinct_2", "number"),
      ("top_opener_share", "number")), "time_series")

# Per week and bot: assistant replies, and replies with a flagged finding of each harm detector
# (the detector's 'turns' rows: a reply counts once per detector however many labels fired).
_HARM_WEEKS = f"""
WITH replies AS (
  SELECT date_trunc('week', bucket) AS week, bot_id, CAST(SUM(n) AS BIGINT) AS n
  FROM rollups
  WHERE {_TURN_ROWS} AND role = 'assistant' AND $__timeFilter(bucket)
  GROUP BY 1, 2
), flagged AS (
  SELECT date_trunc('week', bucket) AS week, bot_id, detector,
         CAST(SUM(flagged) AS BIGINT) AS n
  FROM rollups
  WHERE label = '' AND measure = 'turns' AND role = 'assistant'
    AND detector IN {HARM_DETECTORS} AND $__timeFilter(bucket)
  GROUP BY 1, 2, 3
  HAVING SUM(flagged) > 0
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
#
# Both sides read rollups: the base (all the bot's replies) ``rollups`` by the hour, the group
# side ``group_rollups`` by the day (a reply counts on the day it was written, once per group
# its user turn mentions; the days that start in the range): the two cover the same replies on
# a range of whole days, which the dashboard opens on and the report reads.
EMPATHY_GAP = SqlQuery("""
WITH base AS (
  SELECT bot_id, SUM(total) AS total, CAST(SUM(n) AS BIGINT) AS n FROM rollups
  WHERE label = 'empathy.score' AND measure = '' AND role = 'assistant'
    AND $__timeFilter(bucket)
  GROUP BY 1
), grp AS (
  SELECT bot_id, category, user_group, CAST(SUM(n) AS BIGINT) AS n, SUM(total) AS total
  FROM group_rollups
  WHERE $__timeFilter(bucket)
  GROUP BY 1, 2, 3
  HAVING SUM(n) > 0
)
SELECT g.bot_id AS bot, NULLIF(g.category, '') AS category,
       NULLIF(g.user_group, '') AS user_group, g.n AS replies, g.total / g.n AS empathy,
       g.total / g.n - (base.total - g.total) / NULLIF(base.n - g.n, 0) AS gap
FROM grp g
JOIN base ON base.bot_id = g.bot_id
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

# A drill-down: one row per conversation (conversation_rollups), the conversations that
# started in the range, read with a limit off the index kept in this ORDER BY
# (ix_conversation_rollups_worst: spell the order as it does). A conversation counts whole, in
# the range of its first finding.
WORST_CONVERSATIONS = SqlQuery("""
SELECT conversation_id, bot_id AS bot, started, harm_flagged AS flagged_findings,
       empathy_total / NULLIF(empathy_n, 0) AS empathy, repetition_flagged AS repetition
FROM conversation_rollups
WHERE $__timeFilter(started)
ORDER BY flagged_findings DESC, empathy ASC, conversation_id
LIMIT 20
""", (("conversation_id", "string"), ("bot", "string"), ("started", "time"),
      ("flagged_findings", "number"), ("empathy", "number"), ("repetition", "number")))

# A drill-down on rows: one conversation's findings, by the (conversation_id, turn) index,
# within the conversation's time span (its conversation_rollups row: its first and last
# finding), so that PostgreSQL probes the index of those days' partitions only, not of every
# day the store keeps.
CONVERSATION = SqlQuery("""
SELECT turn, role, label, score, excerpt
FROM findings
WHERE conversation_id = ${conversation:sqlstring} AND (flagged OR label = 'empathy.score')
  AND ts >= (SELECT started FROM conversation_rollups
             WHERE conversation_id = ${conversation:sqlstring})
  AND ts <= (SELECT "last" FROM conversation_rollups
             WHERE conversation_id = ${conversation:sqlstring})
ORDER BY turn, label
""", (("turn", "number"), ("role", "string"), ("label", "string"), ("score", "number"),
      ("excerpt", "string")))

# The validation panels read their own small table (a few rows per `chatmon validate`).
VALIDATION_LATEST = SqlQuery("""
SELECT checked_at AS time, suite, expectation, column_name, success, unexpected_count
FROM validation_results
WHERE $__timeFilter(checked_at)
ORDER BY checked_at DESC, suite, expectation, column_name
LIMIT 50
""", (("time", "time"), ("suite", "string"), ("expectation", "string"),
      ("column_name", "string"), ("success", "bool"), ("unexpected_count", "number")))

VALIDATION_FAILURES = SqlQuery("""
SELECT date_trunc('day', checked_at) AS time, suite AS metric,
       SUM(CASE WHEN success THEN 0 ELSE 1 END) AS failed
FROM validation_results
WHERE $__timeFilter(checked_at)
GROUP BY 1, 2
ORDER BY 1, 2
""", (("time", "time"), ("metric", "string"), ("failed", "number")), "time_series")

BOT_SUMMARY = SqlQuery(f"""
WITH replies AS (
  SELECT bot_id, CAST(SUM(n) AS BIGINT) AS n FROM rollups
  WHERE {_TURN_ROWS} AND role = 'assistant' AND $__timeFilter(bucket) GROUP BY 1
), empathy AS (
  SELECT bot_id, SUM(total) / NULLIF(SUM(n), 0) AS mean FROM rollups
  WHERE label = 'empathy.score' AND measure = '' AND role = 'assistant'
    AND $__timeFilter(bucket)
  GROUP BY 1
), flagged AS (
  SELECT bot_id, detector, CAST(SUM(flagged) AS BIGINT) AS n FROM rollups
  WHERE label = '' AND measure = 'turns' AND role = 'assistant'
    AND detector IN {HARM_DETECTORS} AND $__timeFilter(bucket)
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

VALIDATION_FAILED_COUNT = SqlQuery("""
SELECT COUNT(*) AS failed
FROM validation_results
WHERE NOT success AND $__timeFilter(checked_at)
""", (("failed", "number"),))

# Reviews against flags, per label (chatmon review agreement computes the same numbers, and
# Krippendorff's alpha and threshold suggestions besides). Reads rows: reviews are few, each
# joined to its finding by id. Kappa is Cohen's, from the two
# marginals: (agreement - pe) / (1 - pe), with pe = pf * pp + (1 - pf) * (1 - pp).
AGREEMENT = SqlQuery("""
WITH r AS (
  SELECT f.label,
         CASE WHEN f.flagged THEN 1.0 ELSE 0.0 END AS fl,
         CASE WHEN v.present THEN 1.0 ELSE 0.0 END AS pr
  FROM reviews v JOIN findings f ON f.id = v.finding_id
  WHERE $__timeFilter(f.ts)
), s AS (
  SELECT label, COUNT(*) AS n,
         AVG(CASE WHEN fl = pr THEN 1.0 ELSE 0.0 END) AS agreement,
         SUM(fl * pr) / NULLIF(SUM(fl), 0) AS flag_precision,
         AVG(fl) * AVG(pr) + (1 - AVG(fl)) * (1 - AVG(pr)) AS pe
  FROM r
  GROUP BY label
)
SELECT label, n, agreement, flag_precision AS precision,
       CASE WHEN pe < 1 THEN (agreement - pe) / (1 - pe) END AS kappa
FROM s
ORDER BY label
""", (("label", "string"), ("n", "number"), ("agreement", "number"), ("precision", "number"),
      ("kappa", "number")))

# The judge against the classifiers, per ISO week and judge label / model (chatmon judge; the
# weekly report draws the same rows). Pairs: a judge.* finding and, on the same reply, the
# finding of the label its rubric compares to, both on the rubric's scale (the classifier's
# evidence level, else its score placed on the scale: pipeline.judge.agreement.on_scale).
# agreement: the same level, or within one on scales of five levels or more (agrees); kappa:
# quadratic-weighted, from the marginals (for two levels it is Cohen's). x, y are the two
# ratings as positions in [0, 1]. Reads rows: judge findings are few (the judge samples
# replies), read by their partial index, each joined to its turn's classifier finding by the
# turn_id index of the turn's own day partition (a finding has its turn's ts).
JUDGE_AGREEMENT_WEEKLY = SqlQuery(f"""
WITH r AS (
  SELECT date_trunc('week', j.ts) AS week,
         j.label || ' / ' || (j.evidence->>'model') AS metric,
         CAST(j.evidence->'scale'->>0 AS {NUM}) AS lo,
         CAST(j.evidence->'scale'->>1 AS {NUM}) AS hi,
         CAST(j.evidence->>'rating' AS {NUM}) AS jr,
         CAST(c.evidence->>'level' AS {NUM}) AS cl, c.score AS cs
  FROM findings j
  JOIN findings c ON c.turn_id = j.turn_id AND c.ts = j.ts
                 AND c.label = j.evidence->>'compare_to'
  WHERE j.detector = 'judge' AND c.detector <> 'judge' AND $__timeFilter(j.ts)
), p AS (
  SELECT week, metric, jr, CASE WHEN hi - lo >= 4 THEN 1 ELSE 0 END AS tol,
         CASE WHEN cl >= lo AND cl <= hi THEN cl
              ELSE lo + ROUND(CASE WHEN cs < 0 THEN 0 WHEN cs > 1 THEN 1 ELSE cs END
                              * (hi - lo)) END AS cr,
         (jr - lo) / (hi - lo) AS x, lo, hi
  FROM r WHERE hi > lo
), s AS (
  SELECT week, metric, COUNT(*) AS n,
         AVG(CASE WHEN ABS(jr - cr) <= tol THEN 1.0 ELSE 0.0 END) AS agreement,
         AVG((x - (cr - lo) / (hi - lo)) * (x - (cr - lo) / (hi - lo))) AS d_o,
         AVG(x * x) + AVG(((cr - lo) / (hi - lo)) * ((cr - lo) / (hi - lo)))
           - 2 * AVG(x) * AVG((cr - lo) / (hi - lo)) AS d_e
  FROM p
  GROUP BY week, metric
)
SELECT week AS time, metric, n, agreement,
       CASE WHEN d_e > 0 THEN 1 - d_o / d_e END AS kappa
FROM s
ORDER BY 1, 2
""", (("time", "time"), ("metric", "string"), ("n", "number"), ("agreement", "number"),
      ("kappa", "number")), "time_series")
