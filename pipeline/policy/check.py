"""``chatmon policy check``: a policy file's errors (it is refused) and warnings (it loads, but
something in it probably does not do what was meant)."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

from pipeline.policy import shipped_thresholds
from pipeline.policy.engine import Policy
from pipeline.policy.file import load_policy_file


@cache
def known_labels() -> frozenset[str]:
    """Labels chatmon knows to exist: the shipped thresholds' and the detectors' examples'."""
    from detectors.registry import REGISTRY, module_of

    labels = {k for k in shipped_thresholds() if not k.endswith(".*") and k != "default"}
    for name in REGISTRY:
        for ex in getattr(importlib.import_module(module_of(name)), "EXAMPLES", ()):
            labels |= set(ex.expect) | set(ex.absent)
    return frozenset(labels)


@dataclass
class CheckResult:
    policy: Policy
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        from pipeline.lifecycle.retention import Retention

        f = self.policy.file
        r = Retention.from_policy(self.policy)
        kept = (f"; rows kept {r.days or 'until deleted'}"
                f"{' days' if r.days else ''}, {len(r.tenants)} tenants with their own "
                "retention" if r.configured else "")
        return (f"policy {self.policy.source} is valid: version {self.policy.version}; "
                f"{len(f.thresholds)} global thresholds, {len(f.tenants)} tenants, "
                f"{len(f.bots)} bots, {len(f.allow)} allow-list entries{kept}")


def _unknown(where: str, labels: Iterable[str]) -> list[str]:
    known = known_labels()
    wildcards = {k.split(".", 1)[0] for k in shipped_thresholds() if k.endswith(".*")}
    out = []
    for label in labels:
        if label == "default" or label.endswith(".*") or label in known:
            continue
        if label.split(".", 1)[0] in wildcards:  # open label sets (manipulation cues, pii)
            continue
        out.append(f"{where}: no shipped threshold or example names {label!r}; check the "
                   "spelling (it is used as written)")
    return out


def check_file(path: Path, overrides: dict[str, float] | None = None,
               now: datetime | None = None) -> CheckResult:
    """Raises ``PolicyFileError`` (one line per problem) when the file is refused."""
    file, raw = load_policy_file(path)
    result = CheckResult(Policy(file, overrides, raw, str(path)))
    result.warnings += _unknown("thresholds", file.thresholds)
    for kind, layers in (("tenants", file.tenants), ("bots", file.bots)):
        for name, layer in layers.items():
            result.warnings += _unknown(f"{kind}.{name}.thresholds", layer.thresholds)
    result.warnings += _unknown("allow", [e.label for e in file.allow])
    for entry in result.policy.expired(now or datetime.now(UTC)):
        result.warnings.append(f"allow-list entry {entry.id!r} expired on "
                               f"{entry.expires:%Y-%m-%d %H:%M} UTC: it covers only turns "
                               "before then")
    return result
