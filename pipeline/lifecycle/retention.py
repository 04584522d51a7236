"""Retention: how long stored rows are kept, globally and per tenant (the policy file's
``retention_days`` and ``[tenants.<name>] retention_days``).

A turn, its findings and their reviews expire together, by the turn's ``ts``, under its
tenant's retention, else the global one; with neither they are kept until deleted. Dead letters
record no tenant (a bad event may not name one), so they expire by ``created_at`` under the
shortest retention the policy names anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any


@dataclass(frozen=True)
class Retention:
    days: int | None = None
    tenants: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def from_policy(cls, policy: Any) -> Retention:
        """The retention of a ``pipeline.policy.engine.Policy``."""
        file = policy.file
        return cls(file.retention_days, {name: layer.retention_days
                                         for name, layer in file.tenants.items()
                                         if layer.retention_days is not None})

    @property
    def configured(self) -> bool:
        return self.days is not None or bool(self.tenants)

    def days_for(self, tenant: str | None) -> int | None:
        return self.tenants.get(tenant or "", self.days)

    def cutoff(self, tenant: str | None, now: datetime) -> datetime | None:
        """Rows of ``tenant`` with ``ts`` before this have expired (None: they never do)."""
        days = self.days_for(tenant)
        return None if days is None else now - timedelta(days=days)

    def dead_letter_cutoff(self, now: datetime) -> datetime | None:
        shortest = min([*self.tenants.values(), *([self.days] if self.days else [])],
                       default=None)
        return None if shortest is None else now - timedelta(days=shortest)

    def describe(self) -> dict[str, Any]:
        """For the audit log and ``--dry-run``."""
        return {"retention_days": self.days, "tenants": dict(sorted(self.tenants.items()))}
