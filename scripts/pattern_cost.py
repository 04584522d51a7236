"""Which regular expression, recognizer or tokenizer is super-linear on a hostile text: the
profiler behind the cost bounds in docs/hostile_input.md.

    .venv/bin/python scripts/pattern_cost.py [--chars 5000] [--top 25] [--kinds one_token,dots]

Times, on every text shape of ``pipeline.bench.hostile.HOSTILE`` and on an ordinary text of the
same length,

1. every compiled pattern (``re`` or ``regex``) found in the detector modules' globals and class
   attributes (also inside lists, tuples and dicts): ``finditer`` to the end;
2. every recognizer of the loaded PII analyser (``analyze`` alone, no NLP artefacts), spaCy's
   pipeline, and each registered detector's ``score`` on one turn (user and assistant);

and prints the slowest (seconds, and the ratio to the ordinary text) as JSON lines.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import pkgutil
import re
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import regex  # noqa: E402

import detectors  # noqa: E402
from detectors.base import Context, ScoringInput, Turn  # noqa: E402
from pipeline.bench.hostile import HOSTILE, ordinary  # noqa: E402

PATTERN_TYPES = (re.Pattern, regex.Pattern)
PREPARE: list[Callable[[str], Any]] = []  # run on a text before its probes are timed


def _patterns(obj: Any, where: str, depth: int = 0) -> Iterator[tuple[str, Any]]:
    if isinstance(obj, PATTERN_TYPES):
        yield where, obj
    elif depth < 3 and isinstance(obj, list | tuple | set | frozenset):
        for i, v in enumerate(obj):
            yield from _patterns(v, f"{where}[{i}]", depth + 1)
    elif depth < 3 and isinstance(obj, dict):
        for k, v in obj.items():
            yield from _patterns(v, f"{where}[{k!r}]", depth + 1)
    elif depth == 0 and isinstance(obj, type):
        for k, v in vars(obj).items():
            yield from _patterns(v, f"{where}.{k}", depth + 1)
    elif depth < 3 and dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        name = getattr(obj, "name", "")
        for f in dataclasses.fields(obj):
            yield from _patterns(getattr(obj, f.name), f"{where}({name}).{f.name}", depth + 1)


def module_patterns() -> dict[str, Any]:
    found: dict[str, Any] = {}
    for info in pkgutil.walk_packages(detectors.__path__, "detectors."):
        mod = importlib.import_module(info.name)
        for name, value in vars(mod).items():
            for where, pat in _patterns(value, f"{info.name}.{name}"):
                found.setdefault(where, pat)
    return found


def _time(fn: Callable[[], Any], budget: float = 30.0) -> float:
    t0 = time.process_time()
    fn()
    return min(time.process_time() - t0, budget)


def _turn(text: str, role: str) -> ScoringInput:
    user = Turn("c", 0, "user", "hello, my parcel is late", datetime(2026, 1, 1, tzinfo=UTC))
    turn = Turn("c", 1, role, text, datetime(2026, 1, 1, tzinfo=UTC), lang="en")
    return ScoringInput(turn, Context(history=(user,)))


def _finditer(pattern: Any) -> Callable[[str], int]:
    return lambda t: sum(1 for _ in pattern.finditer(t))


def probes(with_models: bool) -> dict[str, Callable[[str], Any]]:
    out: dict[str, Callable[[str], Any]] = {
        f"re {k}": _finditer(p) for k, p in module_patterns().items()}
    if not with_models:
        return out
    from detectors.registry import REGISTRY
    from pipeline.scoring.suite import DetectorSuite, _score_one

    suite = DetectorSuite.from_names(list(REGISTRY))
    suite.load()
    featured: dict[tuple[str, str], Any] = {}

    def features(text: str, role: str) -> Any:
        if (text, role) not in featured:
            featured.clear()
            featured[(text, role)] = suite.features.add([_turn(text, role)])
        return featured[(text, role)]

    out["shared features user"] = lambda t: suite.features.add([_turn(t, "user")])
    out["shared features assistant"] = lambda t: suite.features.add([_turn(t, "assistant")])
    PREPARE.extend([lambda t: features(t, "user"), lambda t: features(t, "assistant")])
    for det in suite.detectors:
        if hasattr(det, "configure_cache"):
            det.configure_cache(0)
        if det.name == "pii":
            engine = det.analyzer
            nlp = engine.nlp_engine.nlp["en"]
            out["spacy pipeline"] = nlp
            out["spacy tokenizer"] = nlp.tokenizer
            for rec in engine.registry.recognizers:
                out[f"recognizer {rec.name}"] = (
                    lambda r: lambda t: r.analyze(t, r.supported_entities, None))(rec)
        for role in ("user", "assistant"):
            if role in det.roles:
                out[f"detector {det.name} {role}"] = (
                    lambda d, r: lambda t: _score_one(d, features(t, r)))(
                        det, role)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chars", type=int, default=5000)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--kinds", default=",".join(HOSTILE))
    ap.add_argument("--no-models", action="store_true", help="Module patterns only.")
    args = ap.parse_args()
    fns = probes(not args.no_models)
    base = {}
    for name, fn in fns.items():
        for prep in PREPARE:
            prep(ordinary(args.chars))
        base[name] = _time(lambda f=fn: f(ordinary(args.chars)))
    rows = []
    for kind in args.kinds.split(","):
        text = HOSTILE[kind](args.chars)
        for name, fn in fns.items():
            for prep in PREPARE:
                prep(text)
            s = _time(lambda f=fn, t=text: f(t))
            rows.append({"kind": kind, "probe": name, "s": round(s, 4),
                         "ordinary_s": round(base[name], 4),
                         "ratio": round(s / max(base[name], 1e-3), 1)})
    rows.sort(key=lambda r: -r["s"])
    for r in rows[: args.top]:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
