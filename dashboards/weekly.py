"""*chatmon weekly quality*: how empathic, formulaic, biased, manipulative and safe each bot
was, from the store (PostgreSQL datasource). The SQL lives in :mod:`dashboards.queries`."""

from __future__ import annotations

from dashboards import queries as q
from dashboards.builder import (
    POSTGRES,
    Json,
    Panel,
    bar_gauge,
    dashboard,
    fixed,
    link_column,
    row,
    shades,
    signal_colours,
    stat,
    table,
    textbox_variable,
    timeseries,
)
from dashboards.palette import SIGNAL

UID = "chatmon-weekly-quality"
CONVERSATION_LINK = f"/d/{UID}/?var-conversation=${{__value.raw}}&${{__url_time_range}}"


def _empathy() -> list[Panel]:
    return [
        row("Empathy"),
        timeseries("Empathy per bot and model (weekly mean)", q.EMPATHY_WEEKLY,
                   unit="percentunit", description="Mean empathy.score of assistant replies.",
                   colour=shades(SIGNAL["empathy"])),
        timeseries("Upset users missed per bot (weekly share of replies)",
                   q.EMPATHY_MISSED_WEEKLY, unit="percentunit", colour=shades(SIGNAL["empathy"]),
                   description="Replies flagged empathy.missed: the user was upset and the "
                               "reply did not engage with it (a generic apology does not count "
                               "in full)."),
        timeseries("Emotion alignment per bot (weekly mean)", q.ALIGNMENT_WEEKLY,
                   unit="percentunit", colour=shades(SIGNAL["empathy"]),
                   description="How well the reply's emotion fits the user's (0..1)."),
        timeseries("EPITOME mechanisms per bot (weekly mean level)", q.MECHANISMS_WEEKLY,
                   colour=shades(SIGNAL["empathy"]),
                   description="Emotional reactions, interpretations, explorations: mean "
                               "level 0 (none) .. 2 (strong) per week."),
        table("EPITOME mechanisms per bot and model", q.MECHANISMS, height=8,
              description="Mean levels (0 none, 1 weak, 2 strong: strong needs a sentence "
                          "that engages the user's situation) of emotional reactions, "
                          "interpretations and explorations, emotion alignment, and engagement "
                          "(0..1)."),
        table("Empathy gap between user groups", q.EMPATHY_GAP, width=24, height=7,
              description="Empathy of the replies to users who mention an identity group, "
                          "minus that of the bot's other replies: negative means colder "
                          "replies to that group. A group of a few replies is noise: chatmon "
                          "report draws each gap with its interval and lists groups under 20 "
                          "replies as too few."),
    ]


def _repetition() -> list[Panel]:
    return [
        row("Formulaic replies"),
        table("Top stock empathy formulas", q.STOCK_EMPATHY, unit="percentunit",
              description="Apologies, acknowledgements and validations said the same way in "
                          "many conversations (repetition.stock_empathy, flagged). Share: "
                          "fraction of the bot's recent replies that use the phrase."),
        bar_gauge("Stock empathy share of replies", q.STOCK_EMPATHY_SHARE,
                  colour=fixed(SIGNAL["repetition"])),
        table("Top procedural phrases (scripts)", q.STOCK_PHRASES, unit="percentunit",
              description="The bot's repeated procedure (repetition.stock_phrase: \"your order "
                          "will be ready shortly\"): what a task bot should say, so not "
                          "flagged. Share: fraction of the bot's recent replies that use it."),
        bar_gauge("Near-duplicate share of replies", q.NEAR_DUPLICATES,
                  colour=fixed(SIGNAL["repetition"])),
        table("Tactic templaticity", q.TEMPLATES, unit="percentunit",
              description="Most common tactic sequences (e.g. apology>info) and their share."),
        timeseries("Lexical diversity (weekly mean)", q.DIVERSITY_WEEKLY, unit="percentunit",
                   colour=shades(SIGNAL["repetition"]),
                   description="distinct-2 of recent replies and the share of the top opener."),
    ]


def _harms() -> list[Panel]:
    return [
        row("Toxicity, bias, manipulation, PII"),
        timeseries("Flagged replies per 1,000 replies (weekly)", q.HARMS_WEEKLY, bars=True,
                   width=24, overrides=signal_colours("byRegexp", ".* {signal}$", shades),
                   description="Assistant replies with at least one flagged finding of the "
                               "detector, per 1,000 assistant replies of the bot that week."),
        table("Per bot over the selected range (flagged replies per 1,000)", q.BOT_SUMMARY,
              width=24, height=6),
        table("Week over week (latest week vs the one before)", q.WEEK_OVER_WEEK, width=24,
              height=6),
    ]


def _reviews() -> list[Panel]:
    return [
        row("Reviews: people against flags"),
        table("Agreement with reviewers per label", q.AGREEMENT, width=24, height=7,
              description="Reviews (chatmon review import, POST /v1/reviews) of findings in "
                          "the range: n reviews, agreement (present = flagged), precision "
                          "(present among flagged), Cohen's kappa. chatmon review agreement "
                          "adds inter-rater alpha and threshold suggestions."),
        timeseries("Classifier vs LLM judge agreement per week (weighted kappa)",
                   q.JUDGE_AGREEMENT_WEEKLY, width=24,
                   description="chatmon judge: replies the judge rated that also have the "
                               "finding its rubric compares to (judge.epitome_er with "
                               "empathy.er...), per judge label and model, on the rubric's "
                               "scale: n, agreement (same level; within one on 1-5) and "
                               "quadratic-weighted kappa. A drop means the bot, the classifier "
                               "or the judge changed (alert ChatmonJudgeAgreementDrop)."),
    ]


def _drilldown() -> list[Panel]:
    return [
        row("Conversations"),
        table("Worst conversations", q.WORST_CONVERSATIONS, height=10,
              description="Most flagged harm findings first, then lowest empathy. Click an "
                          "id to show it on the right.",
              overrides=(link_column("conversation_id", "Show conversation",
                                     CONVERSATION_LINK),)),
        table("Conversation $conversation (flagged findings and empathy)", q.CONVERSATION,
              height=10, description="Excerpts are from redacted text."),
        row("Data quality (chatmon validate)"),
        stat("Failed expectations", q.VALIDATION_FAILED_COUNT, red_above=1, height=8,
             description="Same query as the Grafana alert chatmon-data-quality-failed."),
        timeseries("Failed expectations per suite (daily)", q.VALIDATION_FAILURES, bars=True,
                   width=9),
        table("Latest expectation results", q.VALIDATION_LATEST, width=9),
    ]


def build() -> Json:
    return dashboard(UID, "chatmon weekly quality",
                     _empathy() + _repetition() + _harms() + _reviews() + _drilldown(),
                     default_source=POSTGRES,
                     description="Weekly view of empathy, repetition, toxicity, bias, "
                                 "manipulation and PII per bot, from the chatmon store.",
                     # whole days: the phrase and empathy-gap panels count per day
                     time_from="now-30d/d", tags=("chatmon", "quality"),
                     variables=(textbox_variable("conversation", "Conversation id"),))
