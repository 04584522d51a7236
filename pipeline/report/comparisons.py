"""Every per-group comparison the report draws, from the replies of the window (``now``) and of
the week before (``before``): keys are what a reader sees (``bot``, ``bot / model``,
``group (category) · bot``), values :class:`~pipeline.report.estimates.Groups`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pipeline.report import estimates as est
from pipeline.report.replies import (
    HARMS,
    MECHANISMS,
    MISSED,
    NEAR_DUPLICATE,
    STOCK_EMPATHY,
    Reply,
)

Key = Callable[[Reply], str | None]


@dataclass(frozen=True)
class Settings:
    min_replies: int = est.MIN_REPLIES
    confidence: float = est.CONFIDENCE


def bot(r: Reply) -> str:
    return r.bot or "(no bot)"


def bot_model(r: Reply) -> str:
    return f"{bot(r)} / {r.model or '(no model)'}"


def _values(replies: Sequence[Reply], key: Key, value: Callable[[Reply], float | None]
            ) -> dict[str, list[float]]:
    return {k: [v for r in rs if (v := value(r)) is not None]
            for k, rs in est.split(replies, key).items()}


def _counts(replies: Sequence[Reply], key: Key, event: Callable[[Reply], bool]
            ) -> dict[str, tuple[int, int]]:
    return {k: (sum(event(r) for r in rs), len(rs)) for k, rs in est.split(replies, key).items()}


def mean(now: Sequence[Reply], before: Sequence[Reply], key: Key,
         value: Callable[[Reply], float | None], s: Settings) -> est.Groups:
    return est.means(_values(now, key, value), _values(before, key, value), s.min_replies,
                     s.confidence)


def rate(now: Sequence[Reply], before: Sequence[Reply], key: Key,
         event: Callable[[Reply], bool], s: Settings) -> est.Groups:
    return est.rates(_counts(now, key, event), _counts(before, key, event), s.min_replies,
                     s.confidence)


def empathy(now: Sequence[Reply], before: Sequence[Reply], s: Settings) -> est.Groups:
    return mean(now, before, bot_model, lambda r: r.empathy, s)


def mechanisms(now: Sequence[Reply], s: Settings) -> dict[str, est.Groups]:
    """Per mechanism (er, ip, ex) and ``alignment``: this window only."""
    def level(mechanism: str) -> Callable[[Reply], float | None]:
        return lambda r: r.levels.get(mechanism)

    out = {m: mean(now, (), bot_model, level(m), s) for m in MECHANISMS}
    out["alignment"] = mean(now, (), bot_model, lambda r: r.alignment, s)
    return out


def harms(now: Sequence[Reply], before: Sequence[Reply], s: Settings) -> dict[str, est.Groups]:
    """Per harm detector: the share of each bot's replies it flagged."""
    def flagged(harm: str) -> Callable[[Reply], bool]:
        return lambda r: harm in r.flagged

    return {h: rate(now, before, bot, flagged(h), s) for h in HARMS}


def near_duplicates(now: Sequence[Reply], before: Sequence[Reply], s: Settings) -> est.Groups:
    return rate(now, before, bot, lambda r: NEAR_DUPLICATE in r.flagged, s)


def stock_empathy(now: Sequence[Reply], before: Sequence[Reply], s: Settings) -> est.Groups:
    """Per bot: the share of replies flagged repetition.stock_empathy (an empathy formula the
    bot says in many conversations)."""
    return rate(now, before, bot, lambda r: STOCK_EMPATHY in r.flagged, s)


def missed(now: Sequence[Reply], before: Sequence[Reply], s: Settings) -> est.Groups:
    """Per bot: the share of replies flagged empathy.missed (an upset user left unengaged)."""
    return rate(now, before, bot, lambda r: MISSED in r.flagged, s)


def empathy_gap(now: Sequence[Reply], s: Settings) -> est.Groups:
    """Per bot and user group: the empathy of the replies to users who mentioned the group,
    minus that of the bot's other replies."""
    pairs: dict[str, tuple[list[float], list[float]]] = {}
    for name, replies in est.split(now, bot).items():
        scored = [(r.group, r.empathy) for r in replies if r.empathy is not None]
        for (category, group) in sorted({g for g, _ in scored if g is not None}):
            inside = [v for g, v in scored if g == (category, group)]
            rest = [v for g, v in scored if g != (category, group)]
            pairs[f"{group} ({category}) · {name}"] = (inside, rest)
    return est.gaps(pairs, s.min_replies, s.confidence)
