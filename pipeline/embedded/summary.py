"""The human-readable run summary."""

from __future__ import annotations

from typing import Any


def _dropped(dropped: dict[str, int]) -> str:
    """Events a deletion record covers or past their retention (docs/privacy.md)."""
    return ", ".join(f"{reason} {n}" for reason, n in dropped.items())


def render_summary(s: dict[str, Any]) -> str:
    lines = [
        "chatmon run finished" + (" (interrupted; pending writes flushed)" if s["interrupted"]
                                  else ""),
        f"  turns read              {s['turns_read']}",
        f"  turns stored            {s['turns_stored']}",
        f"  duplicates skipped      {s['duplicates_skipped']}",
        *([f"  not stored (lifecycle)  {_dropped(s['dropped'])}"] if s.get("dropped") else []),
        f"  assistant turns scored  {s['assistant_turns_scored']}",
        f"  throughput              {s['turns_per_s']} turns/s ({s['seconds']} s)",
        "",
        f"findings (stored / flagged by policy {s.get('policy_version') or '-'}):",
    ]
    flagged = s["flagged_by_label"]
    if not s["findings_by_label"]:
        lines.append("  none")
    current = None
    for label, n in s["findings_by_label"].items():
        det = label.split(".", 1)[0]
        if det != current:
            lines.append(f"  {det} ({s['findings'][det]})")
            current = det
        suppressed = s.get("suppressed_by_label", {}).get(label, 0)
        lines.append(f"    {label:<36} {n:>6}  flagged {flagged.get(label, 0)}"
                     + (f"  suppressed by allow-list {suppressed}" if suppressed else ""))
    lines += ["", f"dead-lettered events: {s['dead_lettered']}"]
    for reason, n in s["dead_letter_reasons"].items():
        lines.append(f"    {reason:<36} {n:>6}")
    if s["detector_errors"]:
        lines.append(f"detector errors: {s['detector_errors']}")
    if s.get("redaction_failures"):
        failed = ", ".join(f"{what} {n}" for what, n in s["redaction_failures"].items())
        lines.append(f"redaction failed, never stored as written: {failed}")
    if s.get("not_scored_language"):
        skipped = ", ".join(f"{det} {n}" for det, n in s["not_scored_language"].items())
        lines.append(f"turns not scored, language not read by the detector: {skipped}")
    lines += [
        "",
        f"results are in {s['database']}",
        _metrics_line(s.get("metrics_endpoint")),
    ]
    if s["dead_letter_files"]:
        lines.append(f"dead letters also in {', '.join(s['dead_letter_files'])}")
    lines += [
        "look at them with:",
        "  chatmon findings --limit 20                 # recent findings as a table",
        "  chatmon findings --detector pii --json      # as JSON",
    ]
    if s["database"].startswith("sqlite:///"):
        path = s["database"].removeprefix("sqlite:///")
        lines.append(f"  sqlite3 {path} 'select label, count(*) from findings group by label'")
    return "\n".join(lines)


def _metrics_line(endpoint: str | None) -> str:
    if endpoint:
        return f"metrics endpoint: {endpoint} (Prometheus format, up while chatmon runs)"
    return ("metrics endpoint: off (chatmon run --metrics-port PORT or CHATMON_METRICS_PORT; "
            "chatmon serve has /metrics on its own port)")
