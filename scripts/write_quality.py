"""Run ``chatmon eval`` over every bench in BENCHES on the dev sets and write QUALITY.md.

    .venv/bin/python scripts/write_quality.py --data ../shared/evaldata --out QUALITY.md \
        [--backend onnx-int8|torch] [--json-out results.json] [--compare other.json]

Each bench runs in this process with the shared encoder on ``--backend``; ``--compare`` adds the
change against an earlier ``--json-out`` (for example the torch backend's) to the table.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# bench name -> folder under the evaldata root
FOLDERS = {
    "presidio-synth": "presidio-synth-pii", "epitome": "epitome",
    "welivita-pu": "empathy-welivita-pu", "kumar": "empathy-kumar-llm-judges",
    "mentalmanip": "mentalmanip", "persuasionforgood": "persuasionforgood",
    "crows-pairs": "crows-pairs", "bbq": "bbq", "davidson": "davidson-hate-offensive",
    "toxigen": "toxigen-seeds", "jigsaw": "jigsaw-toxic-sample",
    "goemotions": "goemotions-ekman",
}
# Benches whose data lives in this repository (written by us), not under the evaldata root.
IN_REPO = {"contrast": ROOT / "tests" / "eval" / "contrast"}
# ``chatmon eval benign`` runs once per set of benign traffic (result key -> folder under the
# evaldata root): real support dialogs (issue 39) and warm ChatGPT replies (issue 42).
BENIGN = {"benign:support-benign": "support-benign/dev", "benign:cs-transcripts": "cs-transcripts",
          "benign:welivita-chatgpt": "empathy-welivita-pu/dev"}
_QUIET = [(f"flagged_per_1000_{d}", "<=", 0.5, 39) for d in ("toxicity", "manipulation", "bias")]
_QUIET_SUPPORT = [*_QUIET, ("pages", "<=", 0.0, 39), ("catalogue_redacted_share", "<=", 0.02, 39),
                  ("closing_replies_missed_empathy", "<=", 0.0, 39)]
# (metric, ">=" or "<=", value, issue) from the issues' targets
TARGETS: dict[str, list[tuple[str, str, float, int]]] = {
    "presidio-synth": [("recall", ">=", 0.90, 2), ("precision", ">=", 0.85, 2)],
    "epitome": [("auroc_er", ">=", 0.90, 3), ("auroc_ip", ">=", 0.92, 3),
                ("auroc_ex", ">=", 0.95, 3)],
    "welivita-pu": [("pairwise_acc", ">=", 0.68, 3)],
    "davidson": [("auroc_toxic", ">=", 0.97, 4), ("auprc_hate", ">=", 0.45, 4)],
    "toxigen": [("auroc", ">=", 0.93, 4), ("max_group_fpr", "<=", 0.25, 4)],
    "crows-pairs": [("pairwise_acc", ">=", 0.80, 4), ("pairwise_acc_antistereo", ">=", 0.60, 4)],
    "mentalmanip": [("auroc", ">=", 0.78, 4)],
    "persuasionforgood": [("fpr_utterance", "<=", 0.03, 4)],
    "goemotions": [("macro_f1", ">=", 0.60, 27)],
    "contrast": [(f"{part}{m}", op, v, 27) for part in ("heldout_", "")
                 for m, op, v in (("pairwise_tailored_stock", ">=", 0.90),
                                  ("pairwise_tailored_cold", ">=", 0.95),
                                  ("stock_level_le1", ">=", 0.90),
                                  ("formulaic_stock", ">=", 0.80),
                                  ("formulaic_tailored", "<=", 0.10))],
    "benign:support-benign": _QUIET_SUPPORT,
    "benign:cs-transcripts": [t for t in _QUIET_SUPPORT if t[0] != "catalogue_redacted_share"],
    # issue 42: each kind of ChatGPT reply on its own (a bot of the benign run each)
    "benign:welivita-chatgpt": [(f"flagged_per_1000_{d}@welivita-{kind}", "<=", 1.0, 42)
                                for kind in ("chatgpt", "chatgpt_empathy")
                                for d in ("toxicity", "manipulation", "bias")],
}


# Sets the shipped offline toxicity heads were trained on: chatmon eval on them is in-sample.
IN_SAMPLE = {"davidson", "toxigen", "jigsaw"}


def run_all(data: Path, backend: str, only: list[str]) -> dict[str, Any]:
    from pipeline.eval import BENCHES, run_benchmark
    from pipeline.scoring.suite import set_default_encoder_backend
    from pipeline.settings import Settings

    set_default_encoder_backend(backend)
    settings = Settings(encoder_backend=backend)
    out: dict[str, Any] = {}
    runs = [(name, IN_REPO.get(name) or data / FOLDERS.get(name, name) / "dev")
            for name in BENCHES if name != "benign"]
    runs += [(key, data / folder) for key, folder in BENIGN.items()]
    for key, path in runs:
        name = key.partition(":")[0]
        if only and name not in only and key not in only:
            continue
        t0 = time.perf_counter()
        try:
            res = run_benchmark(name, path, settings).as_dict()
        except Exception as exc:  # one broken bench must not hide the others
            res = {"benchmark": name, "error": f"{type(exc).__name__}: {exc}"[:300]}
        res["seconds"] = round(time.perf_counter() - t0, 1)
        res["path"] = str(path)
        out[key] = res
        print(f"{key}: {res.get('metrics', res.get('error'))}", file=sys.stderr, flush=True)
    return out


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{v:.4f}" if isinstance(v, float) else str(v)


def _metric(result: dict[str, Any], metric: str) -> Any:
    """A metric of a result; ``flagged_per_1000_<detector>@<bot>`` reads one bot of a benign
    run (``detail.by_bot``)."""
    name, _, bot = metric.partition("@")
    if not bot:
        return result.get("metrics", {}).get(name)
    per_bot = result.get("detail", {}).get("by_bot", {}).get(bot, {})
    return per_bot.get("flagged_per_1000", {}).get(name.removeprefix("flagged_per_1000_"))


def _met(v: Any, op: str, want: float) -> str:
    if v is None:
        return "MISS (no value)"
    return "pass" if (v >= want if op == ">=" else v <= want) else "MISS"


def pii_grouped_cv(results: dict[str, Any]) -> list[str]:
    """The PII section: presidio-synth's grouped cross-validation (the numbers to trust)."""
    cv = results.get("presidio-synth", {}).get("detail", {}).get("grouped_cv")
    if not cv:
        return []
    lines = ["", "## PII: grouped cross-validation (the numbers to trust)", "",
             f"`chatmon eval presidio-synth` on the dev half, {cv['k']} folds grouped by "
             "`template_id`: each fold's thresholds are picked on the other folds' templates and "
             "scored on its own, so no template is both tuned on and scored. The recognizers' "
             "hand-written cue lists were read off the whole dev half and stay in-sample (the "
             "encoder NER head was trained on Faker-filled templates only, never on dev), so "
             "these numbers still overstate recall on new phrasing; the fresh-phrasing check "
             "and what it shows are in `docs/models/pii.md`.", "",
             "| entity | gold spans | recall | precision | F1 |", "|---|---:|---:|---:|---:|",
             f"| **micro** | {sum(v['n_gold'] for v in cv['per_entity'].values())} | "
             f"**{_fmt(cv['recall'])}** | **{_fmt(cv['precision'])}** | {_fmt(cv['f1'])} |"]
    for entity, v in cv["per_entity"].items():
        if v["n_gold"] or v["n_pred"]:
            lines.append(f"| {entity} | {v['n_gold']} | {_fmt(v['recall'])} | "
                         f"{_fmt(v['precision'])} | {_fmt(v['f1'])} |")
    lines += ["", f"Targets (issue 28): grouped recall >= 0.92: {_met(cv['recall'], '>=', 0.92)}; "
              f"grouped precision >= 0.88: {_met(cv['precision'], '>=', 0.88)}. Recall on fresh "
              "phrasing (target 0.90) is reported apart on the model card: seven sets written "
              "blind, each scored once when first frozen against, gave 0.877, 0.879, 0.823, "
              "0.869, 0.883, 0.899 and, the latest (`tests/data/pii_fresh7`, pii 1.5.2), "
              "0.912."]
    return lines


def render(results: dict[str, Any], backend: str, data: str,
           compare: dict[str, Any] | None, compare_label: str) -> str:
    lines = ["# Quality", "",
             "Generated by `scripts/write_quality.py` from `chatmon eval BENCH PATH --json` on the "
             "public dev sets; do not edit by hand. Thresholds come from shipped policy; the dev "
             "halves were also used to pick them, so these are dev numbers, not held-out ones. "
             "The offline toxicity heads were trained on the davidson, toxigen and jigsaw dev "
             "halves, so those three rows are in-sample; their out-of-fold numbers are in "
             "`docs/models/toxicity.md`. `contrast` is our own set (`tests/eval/contrast`): "
             "the empathy detector's engagement constants were chosen on its tuning half, so "
             "its `heldout_` rows are the ones to trust; `goemotions` is the dev split, the "
             "emotion model was trained on the train split only.", "",
             f"- Shared encoder backend: `{backend}`; data: `{data}/<set>/dev`",
             f"- Reproduce: `.venv/bin/python scripts/write_quality.py --data {data} "
             f"--backend {backend} --out QUALITY.md`"]
    if compare:
        lines.append(f"- Change: this run minus {compare_label}")
    lines += ["", "## Targets from the issues", "",
              "| bench | metric | target | measured | status | issue |",
              "|---|---|---|---|---|---|"]
    for name, goals in TARGETS.items():
        for metric, op, want, issue in goals:
            v = _metric(results.get(name, {}), metric)
            status = _met(v, op, want) if name in results else "not run"
            if name in IN_SAMPLE and name in results:
                status = f"in-sample {status}; out-of-fold below"
            lines.append(f"| {name} | {metric} | {op} {want} | {_fmt(v)} | {status} | #{issue} |")
    lines += ["", "## Every metric", ""]
    head = "| bench | detector | n | metric | value |" + (" change |" if compare else "")
    lines += [head, "|---|---|---:|---|---:|" + ("---:|" if compare else "")]
    missing = [b for b in [*FOLDERS, *IN_REPO, *BENIGN] if b not in results]
    if missing:
        lines.append(f"| {', '.join(missing)} | - | - | not run in this generation | - |"
                     + (" |" if compare else ""))
    for name, res in results.items():
        if "error" in res:
            lines.append(f"| {name} | - | - | error | {res['error']} |" + (" |" if compare else ""))
            continue
        for metric, v in res["metrics"].items():
            row = f"| {name} | {res['detector']} | {res['n']} | {metric} | {_fmt(v)} |"
            if compare:
                old = compare.get(name, {}).get("metrics", {}).get(metric)
                both = isinstance(v, float) and isinstance(old, float)
                row += f" {_fmt(v - old) if both else '-'} |"
            lines.append(row)
    lines += pii_grouped_cv(results)
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "evaldata"))
    ap.add_argument("--backend", default="onnx-int8", choices=["onnx-int8", "torch"])
    ap.add_argument("--only", default="", help="comma-separated benches")
    ap.add_argument("--json-out", type=Path)
    ap.add_argument("--from-json", type=Path, help="render from an earlier --json-out")
    ap.add_argument("--compare", type=Path, help="an earlier --json-out to diff against")
    ap.add_argument("--compare-label", default="`torch` on the same code",
                    help="what --compare holds, for the Change line")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--notes", type=Path, help="markdown appended at the end")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.from_json:
        results = json.loads(args.from_json.read_text())
    else:
        only = [b for b in args.only.split(",") if b]
        results = run_all(Path(args.data), args.backend, only)
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=2))
    compare = json.loads(args.compare.read_text()) if args.compare else None
    md = render(results, args.backend, "../shared/evaldata", compare, args.compare_label)
    if args.notes:
        md += "\n" + args.notes.read_text()
    if args.out:
        args.out.write_text(md)
    else:
        print(md)


if __name__ == "__main__":
    main()
