"""``chatmon eval benign PATH``: how quiet every signal is on traffic with nothing harmful in it.

PATH is a folder (or a file) of benign traffic, read in its own layout:

- chatmon events, JSON Lines (``turns.jsonl``, or any ``.jsonl`` file), with an optional
  ``terms.json`` beside it: ``{conversation_id: [catalogue term, ...]}``, names of things (menu
  items, plans, titles) that a redaction must not remove;
- replay-format conversations (``replay_turns.jsonl``: one conversation per line with a
  ``turns`` list; cs-transcripts);
- the Welivita-Pu ratings file (``dataset_and_ratings.csv``): each situation's user utterance
  and the ChatGPT reply, plain and empathy-prompted, as two conversations (bots
  ``welivita-chatgpt`` and ``welivita-chatgpt_empathy``): warm LLM-length replies.

Every event goes through the real pipeline (the same ``Processor`` as ``chatmon run``, into a
throw-away SQLite store) under the shipped policy, and then:

- flagged replies per 1,000 assistant replies, per detector (a reply counts once whatever
  labels it has) and per label, overall and per bot;
- the pages and tickets the embedded alert rules raise when the stored rows are replayed at the
  file's own timestamps (a week of traffic judged as a week; ``benign_alerts.py``);
- catalogue terms: the share of their mentions that the stored, redacted text lost;
- replies to a closing (thanks, goodbye, "that's all") and how many are flagged
  ``empathy.missed``;
- the share of assistant replies carrying each flagged repetition label (``share_``), and each
  repetition label stored at a score of 0.5 or more, flagged or not (``share_stored_``: the
  procedural ``repetition.stock_phrase`` is never flagged, its share is still reported).

On benign traffic every flag is a false one: these are the numbers a team sees on a clean bot.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pipeline.errors import EvalDataError
from pipeline.eval.benign_alerts import replay_alerts
from pipeline.eval.core import EvalResult, read_csv
from pipeline.settings import Settings

WELIVITA_FILE = "dataset_and_ratings.csv"
WELIVITA_KINDS = ("chatgpt", "chatgpt_empathy")
EVENT_FILES = ("turns.jsonl", "replay_turns.jsonl")
_WEEK = timedelta(days=7)
_EPOCH = datetime(2026, 1, 5, tzinfo=UTC)  # a Monday: generated timestamps span one week
BATCH = 64
# Repetition labels are also counted unflagged, at the detector's own level (a phrase used in
# two or more conversations scores 0.5): procedural stock phrases are stored, never flagged.
STORED_CUT = 0.5
# A user turn that closes or thanks, with nothing else in it: "Not now. Thanks for everything.",
# "Nope, that's it, I am done." A turn that also names a trouble is not a closing.
_CLOSING = re.compile(
    r"\b(thanks?|thank you|thx|bye|goodbye|that'?s (?:it|all)|that is (?:it|all)|i'?m done|"
    r"i am done|nothing else|no(?:pe)?,? (?:thanks|that'?s)|have a (?:nice|good|great) day|"
    r"all set|that'?ll be all|that will be all)\b", re.IGNORECASE)
_TROUBLE = re.compile(
    r"\b(but|problem|issue|wrong|broken|upset|angry|frustrat\w*|annoy\w*|sad|worried|"
    r"terrible|awful|disappoint\w*|still|never|not working|doesn'?t work|can'?t|cannot)\b",
    re.IGNORECASE)


def evaluate(path: Path, settings: Settings) -> EvalResult:
    events, terms, source = load(path)
    turn_rows, finding_rows = score(events, settings)
    replies = [r for r in turn_rows if r["role"] == "assistant"]
    if not replies:
        raise EvalDataError(f"{path}: no assistant reply was stored")
    flagged = [f for f in finding_rows if f["flagged"] and f["role"] == "assistant"]
    metrics: dict[str, float] = {}
    detail: dict[str, Any] = {"source": source, "turns": len(turn_rows)}
    scored = set(settings.enabled_detectors()) | {f["detector"] for f in finding_rows}
    per_detector, per_label = flag_rates(replies, flagged, scored)
    metrics.update({f"flagged_per_1000_{d}": v for d, v in per_detector.items()})
    detail["flagged_per_1000_by_label"] = per_label
    detail["by_bot"] = _by_bot(replies, flagged, scored)
    alerts = replay_alerts(turn_rows, finding_rows, settings)
    metrics["pages"] = float(sum(a["count"] for a in alerts if a["severity"] == "page"))
    metrics["tickets"] = float(sum(a["count"] for a in alerts if a["severity"] == "ticket"))
    detail["alerts"] = alerts
    if terms:
        mentions, lost = catalogue_redactions(turn_rows, events, terms)
        metrics["catalogue_mentions"] = float(mentions)
        metrics["catalogue_redacted_share"] = lost / mentions if mentions else float("nan")
    closing, missed = closing_replies(events, flagged)
    metrics["closing_replies"] = float(closing)
    metrics["closing_replies_missed_empathy"] = float(missed)
    for label, share in repetition_shares(replies, flagged).items():
        metrics[f"share_{label.replace('.', '_')}"] = share
    stored = [f for f in finding_rows if f["role"] == "assistant" and f["score"] >= STORED_CUT]
    for label, share in repetition_shares(replies, stored).items():
        metrics[f"share_stored_{label.replace('.', '_')}"] = share
    return EvalResult("benign", "all", len(replies), metrics, detail)


# ---------------------------------------------------------------- input


def load(path: Path) -> tuple[list[dict[str, Any]], dict[str, list[str]], str]:
    """The events of ``path`` (see the module doc), its catalogue terms and the file read."""
    from pipeline.bench.corpus import read_source

    folder = path if path.is_dir() else path.parent
    file = path if path.is_file() else _events_file(path)
    if file.name == WELIVITA_FILE:
        events = welivita_events(file)
    else:
        try:
            events = read_source(file)
        except (ValueError, KeyError) as exc:
            raise EvalDataError(f"{file}: not chatmon events nor replay conversations "
                                f"({type(exc).__name__})") from None
    terms: dict[str, list[str]] = {}
    if (folder / "terms.json").is_file():
        terms = {str(k): [str(t) for t in v]
                 for k, v in json.loads((folder / "terms.json").read_text()).items()}
    return events, terms, file.name


def _events_file(folder: Path) -> Path:
    for name in (*EVENT_FILES, WELIVITA_FILE):
        if (folder / name).is_file():
            return folder / name
    jsonl = sorted(folder.glob("*.jsonl"))
    if len(jsonl) == 1:
        return jsonl[0]
    raise EvalDataError(f"{folder}: no {', '.join(EVENT_FILES)}, {WELIVITA_FILE} or single "
                        ".jsonl file")


def welivita_events(file: Path) -> list[dict[str, Any]]:
    """Each situation's utterance and ChatGPT reply (plain and empathy-prompted) as two
    two-turn conversations, timestamps spread evenly over one week."""
    cols = ("dialog_id", "speaker_uttr", *(f"response_{k}" for k in WELIVITA_KINDS))
    rows = [r for r in read_csv(file, cols) if r["speaker_uttr"].strip()]
    convs = [(r, kind) for kind in WELIVITA_KINDS for r in rows
             if r[f"response_{kind}"].strip()]
    step = _WEEK / max(len(convs), 1)
    events: list[dict[str, Any]] = []
    for i, (r, kind) in enumerate(sorted(convs, key=lambda c: c[0]["dialog_id"])):
        start = _EPOCH + step * i
        for turn, (role, text) in enumerate((("user", r["speaker_uttr"]),
                                             ("assistant", r[f"response_{kind}"]))):
            events.append({"conversation_id": f"{r['dialog_id']}:{kind}", "turn": turn,
                           "role": role, "text": text.strip(), "bot_id": f"welivita-{kind}",
                           "ts": (start + timedelta(seconds=20 * turn)).isoformat()})
    return events


# ---------------------------------------------------------------- scoring


def score(events: Sequence[dict[str, Any]], settings: Settings
          ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Stored turn rows and finding rows of ``events``, through the embedded pipeline into a
    throw-away SQLite store (so the stream state sees the traffic in file order)."""
    from pipeline.embedded.runner import build_processor
    from pipeline.ingest.events import RawRecord
    from pipeline.scoring.isolation import process_isolating

    turns: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="chatmon-benign-") as tmp:
        local = settings.model_copy(update={"database_url": f"sqlite:///{tmp}/benign.db"})
        proc = build_processor(local, "eval-benign", "eval", "eval benign", migrate=True)
        records = [RawRecord("benign", f"event {i}", json.dumps(e, ensure_ascii=False))
                   for i, e in enumerate(events)]
        for start in range(0, len(records), BATCH):
            report = process_isolating(proc, records[start:start + BATCH])
            turns += report.turn_rows
            findings += report.finding_rows
        proc.sink.engine.dispose()
    return turns, findings


# ---------------------------------------------------------------- measures


def _per_1000(n: int, total: int) -> float:
    return round(1000.0 * n / total, 2) if total else float("nan")


def flag_rates(replies: Sequence[dict[str, Any]], flagged: Iterable[dict[str, Any]],
               detectors: Iterable[str] = ()) -> tuple[dict[str, float], dict[str, float]]:
    """Flagged replies per 1,000 by detector (once per reply; every one of ``detectors``
    listed, 0 included) and by label."""
    by_det: dict[str, set[str]] = defaultdict(set)
    by_label: dict[str, set[str]] = defaultdict(set)
    for det in detectors:
        by_det[det] = set()
    for f in flagged:
        by_det[f["detector"]].add(f["turn_id"])
        by_label[f["label"]].add(f["turn_id"])
    n = len(replies)
    return ({d: _per_1000(len(ids), n) for d, ids in sorted(by_det.items())},
            {lab: _per_1000(len(ids), n) for lab, ids in sorted(by_label.items())})


def _by_bot(replies: Sequence[dict[str, Any]], flagged: Sequence[dict[str, Any]],
            detectors: set[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for bot in sorted({r["bot_id"] for r in replies}):
        mine = [r for r in replies if r["bot_id"] == bot]
        det, _ = flag_rates(mine, [f for f in flagged if f["bot_id"] == bot], detectors)
        out[bot or "-"] = {"replies": len(mine), "flagged_per_1000": det}
    return out


def _term(term: str) -> re.Pattern[str]:
    """A catalogue term as a whole word or phrase, any case."""
    return re.compile(rf"(?<!\w){re.escape(term)}(?!\w)", re.IGNORECASE)


def catalogue_redactions(turn_rows: Sequence[dict[str, Any]], events: Sequence[dict[str, Any]],
                         terms: dict[str, list[str]]) -> tuple[int, int]:
    """(mentions of a conversation's catalogue terms in its turns, mentions the stored text
    lost). Longer terms are counted first and masked, so "Caramel Macchiato" is not also a
    mention of "Macchiato"."""
    raw = {(e["conversation_id"], int(e["turn"])): e["text"] for e in events}
    mentions = lost = 0
    for row in turn_rows:
        key = (row["conversation_id"], int(row["turn"]))
        before, after = raw.get(key, ""), row["text_redacted"]
        for term in sorted(set(terms.get(row["conversation_id"], [])), key=len, reverse=True):
            pattern = _term(term)
            before, n_before = pattern.subn(" ", before)
            after, n_after = pattern.subn(" ", after)
            mentions += n_before
            lost += max(n_before - n_after, 0)
    return mentions, lost


def is_closing(text: str) -> bool:
    """A user turn that thanks or says goodbye and names no trouble."""
    return bool(_CLOSING.search(text)) and not _TROUBLE.search(text) and len(text) <= 160


def closing_replies(events: Sequence[dict[str, Any]], flagged: Sequence[dict[str, Any]]
                    ) -> tuple[int, int]:
    """(assistant replies that answer a closing user turn, those flagged empathy.missed)."""
    by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        by_conv[e["conversation_id"]].append(e)
    answers: set[tuple[str, int]] = set()
    for conv, turns in by_conv.items():
        turns.sort(key=lambda e: int(e["turn"]))
        for prev, cur in zip(turns, turns[1:], strict=False):
            if prev["role"] == "user" and cur["role"] == "assistant" and is_closing(prev["text"]):
                answers.add((conv, int(cur["turn"])))
    missed = {(f["conversation_id"], int(f["turn"])) for f in flagged
              if f["label"] == "empathy.missed"}
    return len(answers), len(answers & missed)


def repetition_shares(replies: Sequence[dict[str, Any]], flagged: Sequence[dict[str, Any]]
                      ) -> dict[str, float]:
    """Share of assistant replies carrying each flagged repetition label."""
    counts = Counter(label for label, _ in {(f["label"], f["turn_id"]) for f in flagged
                                            if f["detector"] == "repetition"})
    return {label: round(n / len(replies), 4) for label, n in sorted(counts.items())}
