"""SQLAlchemy 2.0 typed models. Alembic (``migrations/``) is the only thing that changes the
schema; ``tests/test_migrations.py`` checks that these models match the migrations.

Every primary key is a deterministic id derived from the content it identifies, so writes are
idempotent: replays and at-least-once redelivery never add rows.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    false,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp that keeps its zone on every database: written in UTC, read back as an aware
    UTC datetime, so every output can print it as RFC 3339 (``2026-11-19T12:59:00+00:00``).

    SQLite has no zone: SQLAlchemy wrote the wall-clock time of whatever offset a value carried
    (17:59+05:00 became 17:59) and read it back naive. PostgreSQL's ``timestamptz`` answers in
    the session's zone. A naive value (a filter typed without a zone) is taken as UTC."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {dict[str, Any]: JSON, datetime: UTCDateTime()}


class Run(Base):
    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    mode: Mapped[str] = mapped_column(String(16))  # run | serve | worker
    source: Mapped[str] = mapped_column(Text)
    chatmon_version: Mapped[str] = mapped_column(String(32))
    detector_versions: Mapped[dict[str, Any]]
    counts: Mapped[dict[str, Any]]
    duration_s: Mapped[float | None] = mapped_column(Float)


class TurnRow(Base):
    __tablename__ = "turns"
    __table_args__ = (
        Index("ix_turns_conversation", "conversation_id", "turn", unique=True),
        Index("ix_turns_bot_ts", "bot_id", "ts"),
        Index("ix_turns_model_ts", "model", "ts"),  # chatmon compare
        Index("ix_turns_stored_at", "stored_at", "id"),  # chatmon judge --follow


        Index("ix_turns_tenant_ts", "tenant", "ts"),  # chatmon purge: retention per tenant
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    conversation_id: Mapped[str] = mapped_column(String(200))
    turn: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(16))
    ts: Mapped[datetime]
    bot_id: Mapped[str] = mapped_column(String(200), default="")
    model: Mapped[str] = mapped_column(String(200), default="")
    tenant: Mapped[str] = mapped_column(String(200), default="")
    lang: Mapped[str | None] = mapped_column(String(16))
    text_redacted: Mapped[str] = mapped_column(Text)
    # sha256 of the raw event's content: tells an exact duplicate from a conflicting one.
    content_hash: Mapped[str] = mapped_column(String(64))
    n_chars: Mapped[int] = mapped_column(Integer)
    turn_metadata: Mapped[dict[str, Any]] = mapped_column("metadata", JSON)
    # Unredacted text only with keep_raw_text, purged after raw_expires_at.
    text_raw: Mapped[str | None] = mapped_column(Text)
    raw_expires_at: Mapped[datetime | None]
    run_id: Mapped[str | None] = mapped_column(String(36))
    stored_at: Mapped[datetime]


class FindingRow(Base):
    __tablename__ = "findings"
    __table_args__ = (
        Index("ix_findings_turn", "turn_id"),
        Index("ix_findings_detector_label", "detector", "label"),
        Index("ix_findings_bot_ts", "bot_id", "ts"),
        Index("ix_findings_conversation", "conversation_id", "turn"),
        Index("ix_findings_model_ts", "model", "ts"),  # chatmon compare, findings --model
        Index("ix_findings_label_ts", "label", "ts"),  # drill-downs of one label (empathy gap)
        # The judge's findings alone (a budgeted sample): the agreement panel reads them by
        # time at the cost of the judged replies, not of the day partitions' other findings.
        Index("ix_findings_judge_ts", "ts", postgresql_where=text("detector = 'judge'"),
              sqlite_where=text("detector = 'judge'")),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    turn_id: Mapped[str] = mapped_column(String(40), ForeignKey("turns.id", ondelete="CASCADE"))
    conversation_id: Mapped[str] = mapped_column(String(200))
    turn: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(16))
    ts: Mapped[datetime]
    bot_id: Mapped[str] = mapped_column(String(200), default="")
    model: Mapped[str] = mapped_column(String(200), default="")
    tenant: Mapped[str] = mapped_column(String(200), default="")
    detector: Mapped[str] = mapped_column(String(64))
    detector_version: Mapped[str] = mapped_column(String(64))
    label: Mapped[str] = mapped_column(String(128))
    score: Mapped[float] = mapped_column(Float)
    flagged: Mapped[bool]
    span_start: Mapped[int | None] = mapped_column(Integer)
    span_end: Mapped[int | None] = mapped_column(Integer)
    evidence: Mapped[dict[str, Any]]
    # A short excerpt around the span, taken from the redacted text.
    excerpt: Mapped[str] = mapped_column(Text, default="")
    run_id: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime]
    # Policy (pipeline/policy/engine.py): a finding at its threshold that an allow-list entry
    # covers is stored unflagged with suppressed set and the entry's id; policy_version names
    # the policy that decided (None on findings stored before policies were versioned).
    suppressed: Mapped[bool] = mapped_column(default=False, server_default=false())
    suppressed_by: Mapped[str | None] = mapped_column(String(64))
    policy_version: Mapped[str | None] = mapped_column(String(64))


class ReviewRow(Base):
    """A person's judgment of one finding (``chatmon review import``, ``POST /v1/reviews``).

    One row per finding and reviewer (the id is derived from both): importing the same file
    again changes nothing, a reviewer who changes their mind replaces their earlier answer.
    """

    __tablename__ = "reviews"
    __table_args__ = (Index("ix_reviews_finding", "finding_id"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    finding_id: Mapped[str] = mapped_column(String(40),
                                            ForeignKey("findings.id", ondelete="CASCADE"))
    reviewer: Mapped[str] = mapped_column(String(100), default="")
    # The signal is really there (the finding's label applies to the turn).
    present: Mapped[bool]
    # 0-2, as EPITOME rates the empathy mechanisms.
    rating: Mapped[int | None] = mapped_column(Integer)
    # Free text, redacted like transcripts before it is stored.
    note: Mapped[str] = mapped_column(Text, default="")
    source: Mapped[str] = mapped_column(Text)
    imported_at: Mapped[datetime]


class DeadLetterRow(Base):
    __tablename__ = "dead_letters"
    __table_args__ = (
        Index("ix_dead_letters_reason", "reason"),
        Index("ix_dead_letters_conversation", "conversation_id"),  # chatmon purge
        Index("ix_dead_letters_created_at", "created_at"),  # chatmon purge --expired
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    reason: Mapped[str] = mapped_column(String(64))
    detail: Mapped[str] = mapped_column(Text)
    source: Mapped[str] = mapped_column(Text)
    position: Mapped[str] = mapped_column(String(64))
    # Truncated and redacted copy of the raw input.
    raw_excerpt: Mapped[str] = mapped_column(Text)
    detector: Mapped[str | None] = mapped_column(String(64))
    conversation_id: Mapped[str | None] = mapped_column(String(200))
    turn: Mapped[int | None] = mapped_column(Integer)
    run_id: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime]


class ValidationResultRow(Base):
    """One expectation's outcome in one ``chatmon validate`` run (a file or the store)."""

    __tablename__ = "validation_results"
    __table_args__ = (Index("ix_validation_results_checked_at", "checked_at"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    validation_id: Mapped[str] = mapped_column(String(36))
    checked_at: Mapped[datetime]
    suite: Mapped[str] = mapped_column(String(64))
    source: Mapped[str] = mapped_column(Text)
    expectation: Mapped[str] = mapped_column(String(128))
    column_name: Mapped[str] = mapped_column(String(128), default="")
    success: Mapped[bool]
    unexpected_count: Mapped[int | None] = mapped_column(Integer)
    observed: Mapped[dict[str, Any]]


class JudgeCacheRow(Base):
    """The judge's answers, keyed by a hash of (rubric and its version, judge model, the exact
    redacted messages sent): judging the same text again costs no request (docs/judge.md)."""

    __tablename__ = "judge_cache"
    __table_args__ = (Index("ix_judge_cache_conversation", "conversation_id"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    # The conversation whose reply was asked about first: a purge of it removes the entry
    # (the reason may quote the reply); another conversation with the same text asks again.
    conversation_id: Mapped[str | None] = mapped_column(String(200))
    rubric: Mapped[str] = mapped_column(String(80))  # criterion@version
    model: Mapped[str] = mapped_column(String(200))
    rating: Mapped[int] = mapped_column(Integer)
    # The judge's short reason, redacted by the safety net before it is stored.
    reason: Mapped[str] = mapped_column(Text)
    tokens: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime]


class JudgeUsageRow(Base):
    """Requests and tokens spent per UTC day and judge model: the daily token budget holds
    across restarts and across judge processes sharing the store."""

    __tablename__ = "judge_usage"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    day: Mapped[str] = mapped_column(String(10))
    model: Mapped[str] = mapped_column(String(200))
    requests: Mapped[int] = mapped_column(Integer)
    tokens: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime]


class JudgeCursorRow(Base):
    """How far ``chatmon judge --follow`` has read the stored turns (by ``stored_at``, then id)."""

    __tablename__ = "judge_cursors"

    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    stored_at: Mapped[datetime]
    turn_id: Mapped[str] = mapped_column(String(40))
    updated_at: Mapped[datetime]


# Data lifecycle (pipeline/lifecycle/, docs/privacy.md#data-lifecycle). None of these tables
# holds a conversation id or any text: conversations are named by the SHA-256 of their id.


class DeletionRow(Base):
    """What was deleted on request, and when: events it covers with ``ts`` at or before
    ``deleted_at`` are dropped at ingest (the no-resurrection rule)."""

    __tablename__ = "deletions"
    __table_args__ = (
        Index("ix_deletions_key", "key"),
        Index("ix_deletions_deleted_at", "deleted_at"),  # serve and workers poll for new ones
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)  # from (scope, key)
    scope: Mapped[str] = mapped_column(String(16))  # conversation | tenant | bot
    # conversation: the SHA-256 hex digest of its id; tenant, bot: the name.
    key: Mapped[str] = mapped_column(String(200))
    deleted_at: Mapped[datetime]
    purge_id: Mapped[str] = mapped_column(String(36))


class PurgeRow(Base):
    """The audit log: one row per purge (``chatmon purge --log``)."""

    __tablename__ = "purges"
    __table_args__ = (Index("ix_purges_started_at", "started_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    # Who asked: "chatmon purge --conversation", "DELETE /v1/conversations", "serve expiry"...
    command: Mapped[str] = mapped_column(String(200))
    scope: Mapped[str] = mapped_column(String(16))  # expired | conversation | tenant | bot
    # What was asked: conversation digests, tenant, bot, the retention cuts.
    request: Mapped[dict[str, Any]]
    rows: Mapped[dict[str, Any]]  # table (or worker table) -> rows removed
    status: Mapped[str] = mapped_column(String(16))  # running | done | failed


# What the panels and the report read of a rollup row beside its index key (and the tenant,
# which none of them groups by, left out).
ROLLUP_INCLUDE = ("role", "bot_id", "model", "detector", "n", "flagged", "total", "total_sq")
ROLLUP_TURNS_INCLUDE = ("bot_id", "n", "flagged")


class RollupRow(Base):
    """Counts and sums per hour (``bucket``, UTC), tenant, bot, model and role, written by the
    sink with the rows it newly stores (``pipeline/store/rollups.py``): the dashboards' trends
    and the report read these instead of the rows. Kinds of row, by (detector, label, measure):
    ('', '', '') turns (``n``) and turns with a flagged finding (``flagged``); (d, l, '')
    findings, flagged findings, ``total`` and ``total_sq`` of scores; (d, l, 'turns') and
    (d, '', 'turns') turns with a finding (``n``) and with a flagged finding (``flagged``) of
    the label or detector; (d, l, key) an evidence number's count, sum and sum of squares.
    Retention leaves them (counts outlive rows); deletion on request subtracts."""

    __tablename__ = "rollups"
    __table_args__ = (
        # One panel's label, covering on PostgreSQL: the panels and the report read only the
        # index (an index-only scan), so their cost follows the rows they need, not the table.
        Index("ix_rollups_label_bucket", "label", "measure", "bucket",
              postgresql_include=list(ROLLUP_INCLUDE)),
        # The turn counts alone (label ''), keyed down to the detector and narrow: the harm and
        # bot-summary panels read a bot's replies and its flagged ones from fewer pages than the
        # wide index above holds for them (cold at 3M turns 2,358 against 6,562, the index as
        # the sink grew it; an eighth when freshly built), which counts when they are cold.
        Index("ix_rollups_turns", "measure", "role", "detector", "bucket",
              postgresql_include=list(ROLLUP_TURNS_INCLUDE),
              postgresql_where=text("label = ''"), sqlite_where=text("label = ''")),
    )

    bucket: Mapped[datetime] = mapped_column(primary_key=True)
    tenant: Mapped[str] = mapped_column(String(200), primary_key=True)
    bot_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    role: Mapped[str] = mapped_column(String(16), primary_key=True)
    detector: Mapped[str] = mapped_column(String(64), primary_key=True)
    label: Mapped[str] = mapped_column(String(128), primary_key=True)
    measure: Mapped[str] = mapped_column(String(64), primary_key=True)
    n: Mapped[int] = mapped_column(BigInteger)
    flagged: Mapped[int] = mapped_column(BigInteger)
    total: Mapped[float] = mapped_column(Float)
    total_sq: Mapped[float] = mapped_column(Float)


class PhraseRollupRow(Base):
    """The repeated phrases and tactic templates per day (``bucket``, UTC midnight; migration
    0013), tenant, bot and label (the top-phrase and template panels): findings, the largest
    share and reply count seen. The phrase is the already redacted text
    the finding's evidence holds; ``phrase_key`` is its ``stable_id``."""

    __tablename__ = "phrase_rollups"
    __table_args__ = (Index("ix_phrase_rollups_label_bucket", "label", "bucket"),)

    bucket: Mapped[datetime] = mapped_column(primary_key=True)
    tenant: Mapped[str] = mapped_column(String(200), primary_key=True)
    bot_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    label: Mapped[str] = mapped_column(String(128), primary_key=True)
    phrase_key: Mapped[str] = mapped_column(String(40), primary_key=True)
    phrase: Mapped[str] = mapped_column(Text)
    n: Mapped[int] = mapped_column(BigInteger)
    max_share: Mapped[float | None] = mapped_column(Float)
    max_replies: Mapped[float | None] = mapped_column(Float)


class GroupRollupRow(Base):
    """The empathy of the replies that answer a user group's mention, per day of the reply
    (UTC midnight; migration 0013), tenant, bot, model, category and group (the empathy-gap
    panel and the report's gap): pairs of a ``bias.user_group`` finding at turn k and an
    ``empathy.score`` finding at turn k + 1 of the same conversation, how many (``n``) and the
    sum and sum of squares of the reply's empathy score. The sink adds a pair when its second
    side is stored, whichever it is (``pipeline/store/rollups.py``). Group and category names
    come from the bias lexicon, never from the text. Retention leaves them; deletion on request
    subtracts."""

    __tablename__ = "group_rollups"
    __table_args__ = (Index("ix_group_rollups_bucket", "bucket"),)

    bucket: Mapped[datetime] = mapped_column(primary_key=True)
    tenant: Mapped[str] = mapped_column(String(200), primary_key=True)
    bot_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    category: Mapped[str] = mapped_column(String(128), primary_key=True)
    user_group: Mapped[str] = mapped_column(String(200), primary_key=True)
    n: Mapped[int] = mapped_column(BigInteger)
    total: Mapped[float] = mapped_column(Float)
    total_sq: Mapped[float] = mapped_column(Float)


# ix_conversation_rollups_worst's key before conversation_id (the SQL of WORST_CONVERSATIONS'
# ORDER BY: an expression index serves a query only when both spell it alike).
WORST_ORDER = (text("harm_flagged DESC"), text("(empathy_total / NULLIF(empathy_n, 0))"))


class ConversationRollupRow(Base):
    """Per conversation, from its findings: the worst-conversations drill-down reads it by
    index with a limit. Deleted with the conversation, and when its ``last`` finding expires."""

    __tablename__ = "conversation_rollups"
    __table_args__ = (
        Index("ix_conversation_rollups_started", "started"),
        # The worst-conversations panel's order (most flagged, then the least empathic), so
        # that it reads its 20 rows off the index however many conversations tie at the top.
        Index("ix_conversation_rollups_worst", *WORST_ORDER, "conversation_id"),
        Index("ix_conversation_rollups_last", "last"),  # retention
        Index("ix_conversation_rollups_bot", "bot_id"),  # deletion of a bot
        Index("ix_conversation_rollups_tenant", "tenant"),  # deletion of a tenant
    )

    conversation_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    tenant: Mapped[str] = mapped_column(String(200))
    bot_id: Mapped[str] = mapped_column(String(200))
    started: Mapped[datetime]
    last: Mapped[datetime]
    harm_flagged: Mapped[int] = mapped_column(BigInteger)
    empathy_n: Mapped[int] = mapped_column(BigInteger)
    empathy_total: Mapped[float] = mapped_column(Float)
    repetition_flagged: Mapped[int] = mapped_column(BigInteger)
