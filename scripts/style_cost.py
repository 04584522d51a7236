"""What the style detector costs per assistant turn, alone and inside the full suite (the numbers
in docs/models/style.md).

    .venv/bin/python scripts/style_cost.py --data ../shared/evaldata [--repeats 5] [--no-suite]

Reads every assistant turn of the cs-transcripts replay sample (each with the user turns it
answers as context, as the pipeline passes them), then

1. scores them with the style detector alone in batches of 32, ``--repeats`` times: microseconds
   per turn (median and best run);
2. unless ``--no-suite``, scores them once with the full default suite (every registered
   detector, shared features) and reports each detector's seconds as the suite measures them and
   style's share of the suite's wall time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from detectors.base import Context, ScoringInput, Turn  # noqa: E402
from detectors.registry import REGISTRY, create  # noqa: E402

BATCH = 32


def replay_inputs(path: Path) -> list[ScoringInput]:
    ts = datetime(2026, 1, 1, tzinfo=UTC)
    out: list[ScoringInput] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        conv = json.loads(line)
        history: list[Turn] = []
        for i, t in enumerate(conv["turns"]):
            if t["role"] not in ("user", "assistant") or not t["text"].strip():
                continue
            turn = Turn(str(conv["conversation_id"]), i, t["role"], t["text"], ts, lang="en")
            if turn.role == "assistant":
                out.append(ScoringInput(turn, Context(history=tuple(history[-20:]))))
            history.append(turn)
    return out


def style_alone(items: list[ScoringInput], repeats: int) -> dict[str, float]:
    det = create("style")
    det.load()
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for i in range(0, len(items), BATCH):
            det.score(items[i:i + BATCH])
        runs.append(1e6 * (time.perf_counter() - t0) / len(items))
    return {"us_per_turn_median": round(statistics.median(runs), 1),
            "us_per_turn_best": round(min(runs), 1)}


def full_suite(items: list[ScoringInput]) -> dict[str, object]:
    from pipeline.scoring.suite import DetectorSuite

    suite = DetectorSuite.from_names(list(REGISTRY), encoder_backend="onnx-int8")
    suite.load()
    suite.score(items[:BATCH])  # warm-up
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    for i in range(0, len(items), BATCH):
        for name, s in suite.score(items[i:i + BATCH]).seconds.items():
            seconds[name] = seconds.get(name, 0.0) + s
    wall = time.perf_counter() - t0
    return {"wall_ms_per_turn": round(1e3 * wall / len(items), 3),
            "detector_us_per_turn": {k: round(1e6 * v / len(items), 1)
                                     for k, v in sorted(seconds.items())},
            "style_share_of_wall": round(seconds.get("style", 0.0) / wall, 5)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "evaldata")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-suite", action="store_true")
    args = ap.parse_args()
    items = replay_inputs(args.data / "cs-transcripts" / "replay_turns.jsonl")
    out: dict[str, object] = {"assistant_turns": len(items), "batch": BATCH,
                              "style_alone": style_alone(items, args.repeats)}
    if not args.no_suite:
        out["full_suite"] = full_suite(items)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
