"""Write the finding profile ``chatmon bench --store`` fills its store with.

    .venv/bin/python scripts/store_bench_profile.py [--file F] [--out PATH]

Runs ``chatmon run`` (every enabled detector, the default policy) on real support traffic: the
cs-transcripts replay sample (``../shared/evaldata/cs-transcripts/replay_turns.jsonl``, about
7,900 turns) by default, into a temporary SQLite store, and keeps per stored turn its role,
length and findings (detector, version, label, score, flagged, span, evidence, excerpt length):
the labels, scores and per-turn counts of a real run, and the conversation lengths.

No text of the source goes into the profile: evidence keeps its keys, numbers and booleans and
short lower-case identifiers (tactic names such as ``apology>info``); every other string (a
phrase, a conversation id) becomes ``x`` plus a digest of it, so equal strings stay equal
(the top-phrase panels group by them) and nothing can be read back. Excerpts and texts are
kept as lengths only.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, text  # noqa: E402

from pipeline.bench.corpus import default_source, read_source  # noqa: E402
from pipeline.bench.store_data import PROFILE  # noqa: E402

_IDENT = re.compile(r"^[a-z_.>:\-]{1,40}$")


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {(k if _IDENT.match(k) else _digest(k)): _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, str) and not _IDENT.match(value):
        return _digest(value)
    return value


def _digest(s: str) -> str:
    return "x" + hashlib.sha256(s.encode()).hexdigest()[:10]


def run_store(source: Path, db_path: Path) -> dict[str, Any]:
    events = read_source(source)
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
        for e in events:
            fh.write(json.dumps(e, ensure_ascii=False) + "\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "run", "--no-progress", "--json",
                          "--database-url", f"sqlite:///{db_path}", fh.name],
                         env=env, capture_output=True, text=True, cwd=ROOT)
    os.unlink(fh.name)
    if out.returncode:
        sys.exit(f"chatmon run failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout)


def profile(db_path: Path, source: Path) -> dict[str, Any]:
    engine = create_engine(f"sqlite:///{db_path}")
    with engine.connect() as conn:
        turns = conn.execute(text(
            "SELECT id, conversation_id, role, n_chars FROM turns ORDER BY conversation_id, turn"
        )).all()
        rows = conn.execute(text(
            "SELECT turn_id, detector, detector_version, label, score, flagged, span_start, "
            "span_end, evidence, length(excerpt), suppressed, suppressed_by, policy_version "
            "FROM findings ORDER BY turn_id, detector, label, span_start")).all()
    engine.dispose()
    by_turn: dict[str, list[list[Any]]] = {}
    for r in rows:
        ev = json.loads(r[8]) if isinstance(r[8], str) else r[8]
        span = [r[6], r[7]] if r[6] is not None else None
        by_turn.setdefault(r[0], []).append(
            [r[1], r[2], r[3], round(float(r[4]), 4), bool(r[5]), span, _clean(ev or {}),
             int(r[9] or 0), bool(r[10]), r[11], r[12]])
    conversations: dict[str, list[list[Any]]] = {}
    for t in turns:
        conversations.setdefault(t.conversation_id, []).append(
            [t.role, int(t.n_chars), by_turn.get(t.id, [])])
    return {
        "source": source.name,
        "fields": ["detector", "detector_version", "label", "score", "flagged", "span",
                   "evidence", "excerpt_chars", "suppressed", "suppressed_by",
                   "policy_version"],
        # Per conversation, per turn in order: [role, characters, [finding, ...]].
        "conversations": list(conversations.values()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=PROFILE)
    args = ap.parse_args()
    source = args.file or default_source()
    with tempfile.TemporaryDirectory() as tmp:
        db_path = Path(tmp) / "profile.db"
        summary = run_store(source, db_path)
        prof = profile(db_path, source)
    prof["run"] = {k: summary.get(k) for k in ("turns_stored", "detector_versions")
                   if k in summary}
    n = sum(len(c) for c in prof["conversations"])
    f = sum(len(t[2]) for c in prof["conversations"] for t in c)
    data = json.dumps(prof, separators=(",", ":"), sort_keys=True).encode()
    with gzip.GzipFile(args.out, "wb", compresslevel=9, mtime=0) as fh:  # same bytes each run
        fh.write(data)
    print(f"{args.out}: {n} turns, {f} findings ({f / max(n, 1):.2f} a turn), "
          f"{args.out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
