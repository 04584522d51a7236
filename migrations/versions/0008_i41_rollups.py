"""rollups (issue 41): per-hour counts written with the rows (``rollups``, ``phrase_rollups``,
``conversation_rollups``), backfilled from the stored turns and findings; ``weekly_counts``
(counts of expired rows) moves into ``rollups`` at bucket = its week and is dropped; findings
indexed by (label, ts) for the drill-downs of one label.

Downgrade recreates ``weekly_counts`` empty and drops the rollups: the counts of rows that had
already expired are lost (they live nowhere else), the stored rows are untouched.

Revision ID: 0008_i41_rollups
Revises: 0007_i29_judge
Create Date: 2026-11-29 03:00:00
"""
from __future__ import annotations

import hashlib

import sqlalchemy as sa
from alembic import op

revision = "0008_i41_rollups"
down_revision = "0007_i29_judge"
branch_labels = None
depends_on = None

ROLLUP_KEY = "bucket, tenant, bot_id, model, role, detector, label, measure"
# Evidence numbers rolled up (pipeline/store/rollups.py EVIDENCE_NUMBERS), as SQL paths.
EVIDENCE = (
    ("empathy.score", "er", "evidence->'er'->>'level'"),
    ("empathy.score", "ip", "evidence->'ip'->>'level'"),
    ("empathy.score", "ex", "evidence->'ex'->>'level'"),
    ("empathy.score", "alignment", "evidence->>'alignment'"),
    ("empathy.score", "cause_addressed", "evidence->>'cause_addressed'"),
    ("repetition.window", "distinct_2", "evidence->>'distinct_2'"),
    ("repetition.window", "top_opener_share", "evidence->>'top_opener_share'"),
)
PHRASES = (("repetition.stock_empathy", "phrase"), ("repetition.stock_phrase", "phrase"),
           ("repetition.template_sequence", "sequence"))
HARM = "('toxicity', 'bias', 'manipulation', 'pii')"


def _tables() -> None:
    op.create_table(
        "rollups",
        sa.Column("bucket", sa.DateTime(timezone=True), nullable=False),
        sa.Column("tenant", sa.String(length=200), nullable=False),
        sa.Column("bot_id", sa.String(length=200), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("detector", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=128), nullable=False),
        sa.Column("measure", sa.String(length=64), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.Column("flagged", sa.BigInteger(), nullable=False),
        sa.Column("total", sa.Float(), nullable=False),
        sa.Column("total_sq", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("bucket", "tenant", "bot_id", "model", "role", "detector",
                                "label", "measure", name=op.f("pk_rollups")),
    )
    op.create_index("ix_rollups_label_bucket", "rollups", ["label", "measure", "bucket"])
    op.create_table(
        "phrase_rollups",
        sa.Column("bucket", sa.DateTime(timezone=True), nullable=False),
        sa.Column("tenant", sa.String(length=200), nullable=False),
        sa.Column("bot_id", sa.String(length=200), nullable=False),
        sa.Column("label", sa.String(length=128), nullable=False),
        sa.Column("phrase_key", sa.String(length=40), nullable=False),
        sa.Column("phrase", sa.Text(), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.Column("max_share", sa.Float(), nullable=True),
        sa.Column("max_replies", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("bucket", "tenant", "bot_id", "label", "phrase_key",
                                name=op.f("pk_phrase_rollups")),
    )
    op.create_index("ix_phrase_rollups_label_bucket", "phrase_rollups", ["label", "bucket"])
    op.create_table(
        "conversation_rollups",
        sa.Column("conversation_id", sa.String(length=200), nullable=False),
        sa.Column("tenant", sa.String(length=200), nullable=False),
        sa.Column("bot_id", sa.String(length=200), nullable=False),
        sa.Column("started", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last", sa.DateTime(timezone=True), nullable=False),
        sa.Column("harm_flagged", sa.BigInteger(), nullable=False),
        sa.Column("empathy_n", sa.BigInteger(), nullable=False),
        sa.Column("empathy_total", sa.Float(), nullable=False),
        sa.Column("repetition_flagged", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("conversation_id", name=op.f("pk_conversation_rollups")),
    )
    for name, cols in (("ix_conversation_rollups_started", ["started"]),
                       ("ix_conversation_rollups_harm_flagged", ["harm_flagged", "started"]),
                       ("ix_conversation_rollups_last", ["last"]),
                       ("ix_conversation_rollups_bot", ["bot_id"]),
                       ("ix_conversation_rollups_tenant", ["tenant"])):
        op.create_index(name, "conversation_rollups", cols)


def _hour(dialect: str, column: str = "ts") -> str:
    """The hour start of a timestamp column, as the dialect stores timestamps (SQLAlchemy
    writes SQLite datetimes as 'YYYY-MM-DD HH:MM:SS.ffffff')."""
    if dialect == "postgresql":
        return f"date_trunc('hour', {column})"
    return f"strftime('%Y-%m-%d %H:00:00.000000', {column})"


def _backfill(dialect: str) -> None:
    """The rollups of every stored turn and finding, one INSERT ... SELECT ... GROUP BY per
    kind of row (the kinds never share a key, so plain inserts into the empty tables)."""
    hour = _hour(dialect)
    dims = "tenant, bot_id, model, role"
    num = "double precision"
    insert = f"INSERT INTO rollups ({ROLLUP_KEY}, n, flagged, total, total_sq) "
    # 1. turns, and turns with a flagged finding of any detector
    t_hour = _hour(dialect, "t.ts")
    op.execute(insert + f"""
        SELECT {t_hour}, t.tenant, t.bot_id, t.model, t.role, '', '', '', COUNT(*),
               COUNT(ft.turn_id), 0, 0
        FROM turns t LEFT JOIN (SELECT DISTINCT turn_id FROM findings WHERE flagged) ft
          ON ft.turn_id = t.id
        GROUP BY {t_hour}, t.tenant, t.bot_id, t.model, t.role""")
    # 2. findings per label
    op.execute(insert + f"""
        SELECT {hour}, {dims}, detector, label, '', COUNT(*),
               SUM(CASE WHEN flagged THEN 1 ELSE 0 END), SUM(score), SUM(score * score)
        FROM findings GROUP BY {hour}, {dims}, detector, label""")
    # 3, 4. turns with a (flagged) finding of the label, of the detector
    for label_col, label_out in (("label", "label"), ("''", "''")):
        group = f"{hour}, {dims}, detector" + (", label" if label_col == "label" else "")
        op.execute(insert + f"""
            SELECT h, {dims}, detector, {label_out}, 'turns', COUNT(*), SUM(fl), 0, 0 FROM (
              SELECT {hour} AS h, {dims}, detector, {label_col} AS label, turn_id,
                     MAX(CASE WHEN flagged THEN 1 ELSE 0 END) AS fl
              FROM findings GROUP BY {group}, turn_id) per_turn
            GROUP BY h, {dims}, detector, label""")
    # 5. evidence numbers
    for label, measure, path in EVIDENCE:
        op.execute(insert + f"""
            SELECT h, {dims}, detector, label, '{measure}', COUNT(*), 0, SUM(v), SUM(v * v)
            FROM (SELECT {hour} AS h, {dims}, detector, label, CAST({path} AS {num}) AS v
                  FROM findings WHERE label = '{label}') e
            WHERE v IS NOT NULL
            GROUP BY h, {dims}, detector, label""")
    # phrases; phrase_key is stable_id(phrase): sha256, first 40 hex digits
    if dialect == "postgresql":
        key = "left(encode(sha256(convert_to({p}, 'UTF8')), 'hex'), 40)"
    else:
        op.get_bind().connection.driver_connection.create_function(  # type: ignore[union-attr]
            "chatmon_stable_id", 1,
            lambda s: hashlib.sha256(str(s).encode()).hexdigest()[:40], deterministic=True)
        key = "chatmon_stable_id({p})"
    for label, field in PHRASES:
        phrase = f"evidence->>'{field}'"
        op.execute(f"""
            INSERT INTO phrase_rollups (bucket, tenant, bot_id, label, phrase_key, phrase, n,
                                        max_share, max_replies)
            SELECT h, tenant, bot_id, label, {key.format(p='phrase')}, phrase, COUNT(*),
                   MAX(share), MAX(replies)
            FROM (SELECT {hour} AS h, tenant, bot_id, label, {phrase} AS phrase,
                         CAST(evidence->>'share' AS {num}) AS share,
                         CAST(evidence->>'replies' AS {num}) AS replies
                  FROM findings WHERE label = '{label}') p
            WHERE phrase IS NOT NULL
            GROUP BY h, tenant, bot_id, label, phrase""")
    op.execute(f"""
        INSERT INTO conversation_rollups (conversation_id, tenant, bot_id, started, last,
            harm_flagged, empathy_n, empathy_total, repetition_flagged)
        SELECT conversation_id, MIN(tenant), MIN(bot_id), MIN(ts), MAX(ts),
               SUM(CASE WHEN flagged AND role = 'assistant' AND detector IN {HARM}
                        THEN 1 ELSE 0 END),
               SUM(CASE WHEN label = 'empathy.score' THEN 1 ELSE 0 END),
               COALESCE(SUM(CASE WHEN label = 'empathy.score' THEN score END), 0),
               SUM(CASE WHEN flagged AND detector = 'repetition' THEN 1 ELSE 0 END)
        FROM findings GROUP BY conversation_id""")


def _weekly_counts(dialect: str) -> None:
    """weekly_counts (what expired rows added to each week) into rollups at bucket = the
    week's Monday 00:00 UTC: turns -> the turn row's n; a detector's turns with a flagged
    finding -> its 'turns' row's flagged (and n: what was kept, a lower bound); a label's
    findings, flagged, score sum -> its row (no sum of squares: 0)."""
    week = "week"
    upsert = (f" ON CONFLICT ({ROLLUP_KEY}) DO UPDATE SET n = rollups.n + excluded.n, "
              "flagged = rollups.flagged + excluded.flagged, "
              "total = rollups.total + excluded.total, "
              "total_sq = rollups.total_sq + excluded.total_sq")
    insert = f"INSERT INTO rollups ({ROLLUP_KEY}, n, flagged, total, total_sq) "
    for select in (
        f"SELECT {week}, tenant, bot_id, model, role, '', '', '', turns, 0, 0, 0 "
        "FROM weekly_counts WHERE detector = '' AND label = ''",
        f"SELECT {week}, tenant, bot_id, model, role, detector, '', 'turns', turns, turns, 0, 0 "
        "FROM weekly_counts WHERE detector <> '' AND label = '' AND turns > 0",
        f"SELECT {week}, tenant, bot_id, model, role, detector, label, '', findings, flagged, "
        "score_sum, 0 FROM weekly_counts WHERE label <> '' AND findings > 0",
    ):
        op.execute(insert + select + upsert)


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    _tables()
    _backfill(dialect)
    _weekly_counts(dialect)
    op.drop_table("weekly_counts")
    with op.batch_alter_table("findings", schema=None) as batch_op:
        batch_op.create_index("ix_findings_label_ts", ["label", "ts"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("findings", schema=None) as batch_op:
        batch_op.drop_index("ix_findings_label_ts")
    op.create_table(
        "weekly_counts",
        sa.Column("week", sa.DateTime(timezone=True), nullable=False),
        sa.Column("tenant", sa.String(length=200), nullable=False),
        sa.Column("bot_id", sa.String(length=200), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("detector", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=128), nullable=False),
        sa.Column("turns", sa.Integer(), nullable=False),
        sa.Column("findings", sa.Integer(), nullable=False),
        sa.Column("flagged", sa.Integer(), nullable=False),
        sa.Column("score_sum", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("week", "tenant", "bot_id", "model", "role", "detector", "label",
                                name=op.f("pk_weekly_counts")),
    )
    for name in ("ix_conversation_rollups_tenant", "ix_conversation_rollups_bot",
                 "ix_conversation_rollups_last", "ix_conversation_rollups_harm_flagged",
                 "ix_conversation_rollups_started"):
        op.drop_index(name, table_name="conversation_rollups")
    op.drop_table("conversation_rollups")
    op.drop_index("ix_phrase_rollups_label_bucket", table_name="phrase_rollups")
    op.drop_table("phrase_rollups")
    op.drop_index("ix_rollups_label_bucket", table_name="rollups")
    op.drop_table("rollups")
