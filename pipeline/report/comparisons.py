"""Every per-group comparison the report draws, from the rollups of the window (``now``) and of
the week before (:mod:`pipeline.report.rollups`): keys are what a reader sees (``bot``,
``bot / model``, ``group (category) · bot``), values :class:`~pipeline.report.estimates.Groups`.

Rates are (replies with a flagged finding, replies) per group, from the ``'turns'`` rows; means
are moments (count, sum, sum of squares) of ``empathy.score`` and its evidence numbers. Nothing
here grows with the number of turns: only with bots, models and user groups.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pipeline.compare.stats import Moments
from pipeline.report import estimates as est
from pipeline.report.rollups import (
    BEFORE,
    EMPTY,
    NOW,
    TURNS,
    Cells,
    Key,
    Sums,
    detector_turns,
    empathy,
    label_turns,
)

HARMS = ("toxicity", "bias", "manipulation", "pii")
MISSED = "empathy.missed"  # an upset user the reply did not engage with (issue 27)
MECHANISMS = ("er", "ip", "ex")
NEAR_DUPLICATE = "repetition.near_duplicate"
STOCK_EMPATHY = "repetition.stock_empathy"  # formulaic empathy (issue "Quiet on a clean bot")
LABELS = (MISSED, NEAR_DUPLICATE, STOCK_EMPATHY)  # rates of one label ('turns' rows)
MEASURES = (*MECHANISMS, "alignment")  # empathy.score's evidence numbers averaged

GroupKey = Callable[[str, str], str]


@dataclass(frozen=True)
class Settings:
    min_replies: int = est.MIN_REPLIES
    confidence: float = est.CONFIDENCE


def bot(bot_id: str, model: str) -> str:
    return bot_id or "(no bot)"


def bot_model(bot_id: str, model: str) -> str:
    return f"{bot(bot_id, model)} / {model or '(no model)'}"


def replies(cells: Cells) -> int:
    return cells.get(TURNS, EMPTY).n


def mean(sums: Sums, key: GroupKey, row: Key, s: Settings, *, before: bool = True,
         within: tuple[float, float] = est.UNIT) -> est.Groups:
    """Per group with replies now: the mean of ``row``'s values (which lie ``within``) now and
    the week before."""
    def moments(period: str) -> dict[str, Moments]:
        return {k: cells.get(row, EMPTY).moments for k, cells in sums.groups(period, key).items()}

    return est.means(moments(NOW), moments(BEFORE) if before else {}, s.min_replies,
                     s.confidence, within)


def rate(sums: Sums, key: GroupKey, row: Key, s: Settings) -> est.Groups:
    """Per group with replies now: the share of replies flagged in ``row``, now and before."""
    def counts(period: str) -> dict[str, tuple[int, int]]:
        return {k: (cells.get(row, EMPTY).flagged, replies(cells))
                for k, cells in sums.groups(period, key).items()}

    return est.rates(counts(NOW), counts(BEFORE), s.min_replies, s.confidence)


def empathy_means(sums: Sums, s: Settings) -> est.Groups:
    return mean(sums, bot_model, empathy(), s)


def mechanisms(sums: Sums, s: Settings) -> dict[str, est.Groups]:
    """Per mechanism (er, ip, ex) and ``alignment``: this window only."""
    out = {m: mean(sums, bot_model, empathy(m), s, before=False, within=est.LEVELS)
           for m in MECHANISMS}
    out["alignment"] = mean(sums, bot_model, empathy("alignment"), s, before=False)
    return out


def harms(sums: Sums, s: Settings) -> dict[str, est.Groups]:
    """Per harm detector: the share of each bot's replies it flagged."""
    return {h: rate(sums, bot, detector_turns(h), s) for h in HARMS}


def near_duplicates(sums: Sums, s: Settings) -> est.Groups:
    return rate(sums, bot, label_turns(NEAR_DUPLICATE), s)


def stock_empathy(sums: Sums, s: Settings) -> est.Groups:
    """Per bot: the share of replies flagged repetition.stock_empathy (an empathy formula the
    bot says in many conversations)."""
    return rate(sums, bot, label_turns(STOCK_EMPATHY), s)


def missed(sums: Sums, s: Settings) -> est.Groups:
    """Per bot: the share of replies flagged empathy.missed (an upset user left unengaged)."""
    return rate(sums, bot, label_turns(MISSED), s)


def empathy_gap(sums: Sums, groups: dict[tuple[str, str, str], Moments], s: Settings
                ) -> est.Groups:
    """Per bot and user group: the empathy of the replies to users who mentioned the group
    (``groups``: (bot_id, category, group) -> moments, :func:`rollups.group_empathy`), minus
    that of the bot's other replies (the bot's moments minus the group's)."""
    totals = {k: cells.get(empathy(), EMPTY).moments
              for k, cells in sums.groups(NOW, bot).items()}
    pairs: dict[str, tuple[Moments, Moments]] = {}
    for (bot_id, category, group), inside in sorted(
            groups.items(), key=lambda kv: (bot(kv[0][0], ""), kv[0][1], kv[0][2])):
        name = bot(bot_id, "")
        total = totals.get(name, Moments())
        pairs[f"{group} ({category}) · {name}"] = (inside, total - inside)
    return est.gaps(pairs, s.min_replies, s.confidence)
