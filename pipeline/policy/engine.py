"""The policy in force: which findings are flagged, which are suppressed, and its version.

Thresholds come in layers; the most specific layer that names the label wins: the bot's, then
the tenant's, then the global one (the policy file's ``[thresholds]``, with
``CHATMON_THRESHOLDS`` over it like any environment setting over a file), then the shipped
JSON. Inside a layer, the label itself beats ``<detector>.*``, which beats ``default``.

A finding at or above its threshold is flagged unless an allow-list entry covers it: same
label (or ``<detector>.*``), the entry's tenant and bot if it names them, a turn time before
the entry's expiry, and the entry's literal or pattern found in the turn's raw text where the
finding is (overlapping its span; anywhere in the text for a finding without a span). The raw
text is read here, at scoring time, and never stored. A suppressed finding is stored
unflagged with the entry's id, and counted.

The version is a content hash of everything that decides (the shipped thresholds, the
environment's thresholds and the policy file's bytes), prefixed with the file's own
``version``; every finding records it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from detectors.base import Finding, Turn
from pipeline.policy import DEFAULT_THRESHOLD, shipped_thresholds
from pipeline.policy.file import AllowEntry, PolicyFile, compile_pattern, load_policy_file

_CACHE_MAX = 20_000


@dataclass(frozen=True, slots=True)
class Decision:
    flagged: bool
    threshold: float
    suppressed_by: str | None = None


class _Allow:
    """One allow-list entry, with its pattern compiled once."""

    def __init__(self, entry: AllowEntry) -> None:
        self.entry = entry
        self.regex = compile_pattern(entry.pattern) if entry.pattern is not None else None

    def applies(self, turn: Turn) -> bool:
        e = self.entry
        if e.tenant is not None and e.tenant != (turn.tenant or ""):
            return False
        if e.bot is not None and e.bot != (turn.bot_id or ""):
            return False
        # The turn's own time, not the clock: a replay decides as the first run did.
        ts = turn.ts if turn.ts.tzinfo else turn.ts.replace(tzinfo=UTC)
        return e.expires is None or ts < e.expires

    def matches(self, text: str) -> Iterator[tuple[int, int]]:
        if self.regex is not None:
            for m in self.regex.finditer(text):
                yield m.start(), m.end()
            return
        literal = self.entry.literal or ""
        start = text.find(literal)
        while start >= 0:
            yield start, start + len(literal)
            start = text.find(literal, start + 1)

    def covers(self, finding: Finding, text: str) -> bool:
        if finding.span is None:
            return next(self.matches(text), None) is not None
        s, e = finding.span
        return any(ms < e and me > s if e > s else ms <= s < me for ms, me in self.matches(text))


class Policy:
    def __init__(self, file: PolicyFile | None = None, overrides: Mapping[str, float] | None = None,
                 raw: bytes = b"", source: str | None = None) -> None:
        self.file = file or PolicyFile()
        self.source = source
        self.shipped = shipped_thresholds()
        self.global_ = {**self.file.thresholds, **(overrides or {})}
        self.tenants = {k: v.thresholds for k, v in self.file.tenants.items()}
        self.bots = {k: v.thresholds for k, v in self.file.bots.items()}
        self.allow: dict[str, list[_Allow]] = {}
        for entry in self.file.allow:
            self.allow.setdefault(entry.label, []).append(_Allow(entry))
        decided = json.dumps({"shipped": self.shipped, "overrides": dict(overrides or {})},
                             sort_keys=True).encode()
        digest = hashlib.sha256(decided + b"\0" + raw).hexdigest()[:12]
        self.version = f"{self.file.version}+{digest}" if self.file.version else digest
        self._cache: dict[tuple[str, str, str], float] = {}

    @classmethod
    def from_settings(cls, settings: Any, path: Path | None = None) -> Policy:
        """The policy of ``settings`` (``policy_file``, ``thresholds``); ``path`` overrides the
        file."""
        path = path or settings.policy_file
        if path is None:
            return cls(overrides=settings.thresholds)
        file, raw = load_policy_file(Path(path))
        return cls(file, settings.thresholds, raw, str(path))

    def layers(self, tenant: str, bot: str) -> Sequence[tuple[str, Mapping[str, float]]]:
        return (("bot", self.bots.get(bot, {}) if bot else {}),
                ("tenant", self.tenants.get(tenant, {}) if tenant else {}),
                ("global", self.global_), ("shipped", self.shipped))

    def resolve(self, label: str, tenant: str = "", bot: str = "") -> tuple[float, str]:
        """The threshold for ``label`` on this tenant's bot, and the layer it came from."""
        detector = label.split(".", 1)[0]
        for layer, table in self.layers(tenant, bot):
            for key in (label, f"{detector}.*", "default"):
                if key in table:
                    return float(table[key]), layer
        return DEFAULT_THRESHOLD, "shipped"

    def threshold(self, label: str, tenant: str | None = None, bot: str | None = None) -> float:
        key = (label, tenant or "", bot or "")
        cached = self._cache.get(key)
        if cached is None:
            if len(self._cache) > _CACHE_MAX:  # tenants x bots x labels is unbounded
                self._cache.clear()
            cached = self._cache[key] = self.resolve(*key)[0]
        return cached

    def decide(self, finding: Finding, turn: Turn) -> Decision:
        cut = self.threshold(finding.label, turn.tenant, turn.bot_id)
        if finding.score < cut:
            return Decision(False, cut)
        entry = self._allowed(finding, turn)
        if entry is not None:
            return Decision(False, cut, entry)
        return Decision(True, cut)

    def _allowed(self, finding: Finding, turn: Turn) -> str | None:
        wildcard = finding.detector + ".*"
        for key in (finding.label, wildcard):
            for allow in self.allow.get(key, ()):
                if allow.applies(turn) and allow.covers(finding, turn.text):
                    return allow.entry.id
        return None

    def expired(self, now: datetime | None = None) -> list[AllowEntry]:
        now = now or datetime.now(UTC)
        return [e for e in self.file.allow if e.expires is not None and e.expires <= now]
