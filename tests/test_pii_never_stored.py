"""Planted PII never appears raw in the database file, the logs or the dead-letter output.

Runs the real CLI in a subprocess with DEBUG logging, then searches every byte it left behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PLANTED = {
    "name": "Marguerite Okonkwo-Villanueva",
    "email": "marguerite.ov@example.org",
    "phone": "(212) 555-0147",
    "card": "4111 1111 1111 1111",
    "ssn": "536-90-4399",
    "iban": "DE89 3704 0044 0532 0130 00",
    "ip": "198.51.100.23",
    "address": "742 Evergreen Terrace",
}


def _needles() -> list[str]:
    out = []
    for v in PLANTED.values():
        out.append(v)
        compact = v.replace(" ", "").replace("-", "").replace("(", "").replace(")", "")
        if compact != v and any(c.isdigit() for c in v):
            out.append(compact)
    return out


def _events() -> list[bytes]:
    p = PLANTED
    turns = [
        ("user", f"Hi, I'm {p['name']}, email {p['email']}, call me on {p['phone']}."),
        ("assistant", f"Thanks {p['name']}! I have {p['email']} and {p['phone']} on file."),
        ("user", f"My card is {p['card']} and SSN {p['ssn']}; IBAN {p['iban']}."),
        ("assistant", f"Your refund goes to IBAN {p['iban']}. I'll ship to {p['address']}."),
        ("user", f"I logged in from {p['ip']} at {p['address']}, Springfield."),
        ("assistant", "Another customer, jane.roe@example.net, had the same issue."),
    ]
    good = [json.dumps({"conversation_id": "pii-1", "turn": i, "role": r, "text": t,
                        "ts": f"2026-11-20T10:00:{i:02d}Z", "bot_id": "b",
                        "metadata": {"customer_email": p["email"]}}).encode()
            for i, (r, t) in enumerate(turns)]
    bad = [
        f'{{"conversation_id": "pii-2", "text": "my email is {p["email"]}", '.encode(),
        json.dumps({"conversation_id": "pii-3", "turn": 0, "role": "system",
                    "text": f"card {p['card']}", "ts": "2026-11-20T10:00:00Z"}).encode(),
        json.dumps([p["ssn"], p["phone"]]).encode(),
        f"ssn {p['ssn']} \xff".encode("latin-1"),
        json.dumps({"conversation_id": "pii-1", "turn": 0, "role": "user",
                    "text": f"changed: {p['name']} {p['ip']}",
                    "ts": "2026-11-20T10:00:00Z"}).encode(),
    ]
    return good + bad


def test_planted_pii_never_reaches_db_logs_or_dead_letters(tmp_path: Path) -> None:
    src = tmp_path / "pii.jsonl"
    src.write_bytes(b"\n".join(_events()) + b"\n")
    db = tmp_path / "chatmon.db"
    env = {**os.environ, "CHATMON_DATABASE_URL": f"sqlite:///{db}", "CHATMON_LOG_LEVEL": "DEBUG",
           "CHATMON_DETECTORS": '["pii"]'}
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "run", str(src), "--json"],
        env=env, capture_output=True, cwd=tmp_path, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    summary = json.loads(proc.stdout)
    assert summary["turns_stored"] == 6 and summary["dead_lettered"] == 5
    assert summary["findings_by_label"].get("pii.leak", 0) >= 1

    produced = {"stdout": proc.stdout, "stderr": proc.stderr}
    for f in tmp_path.iterdir():
        if f != src:
            produced[f.name] = f.read_bytes()
    assert f"{src}.dlq.jsonl" in {str(tmp_path / n) for n in produced}
    for name, blob in produced.items():
        text = blob.decode("utf-8", errors="replace")
        for needle in _needles():
            assert needle not in text, f"raw PII {needle!r} found in {name}"
