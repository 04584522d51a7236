"""``chatmon review sample|import|agreement``: people judge findings; flags are measured
against them (docs/review.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from pipeline.cli.context import Ctx, parse_when, pass_ctx
from pipeline.settings import Settings


@click.group("review")
def review_group() -> None:
    """Review findings: sample a batch, import people's judgments, measure agreement."""


@review_group.command("sample")
@click.option("--n", "n", type=click.IntRange(1, 100_000), default=100, show_default=True,
              help="Findings in the batch.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="JSON Lines file to write (- for stdout).")
@click.option("--detector", help="Only this detector's findings.")
@click.option("--label", help="Only this label's findings.")
@click.option("--since", help="Only turns from this time (ISO 8601).")
@click.option("--tenant", help="Only this tenant's findings.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Another seed draws another sample.")
@click.option("--include-reviewed", is_flag=True,
              help="Also findings that already have a review (for a second reviewer use the "
                   "first batch's file instead).")
@pass_ctx
def sample_cmd(obj: Ctx, n: int, out: Path, detector: str | None, label: str | None,
               since: str | None, tenant: str | None, seed: int,
               include_reviewed: bool) -> None:
    """Write a batch of findings for people to judge, stratified over labels and over flagged /
    unflagged findings: one JSON object a line with the finding's id, label, score, flag, its
    redacted excerpt and text, and the redacted turn it answers. Reviewers fill in "present"
    (true|false) and optionally "rating" (0-2), "reviewer" and "note"."""
    from pipeline.review.sample import SampleFilter, sample
    from pipeline.store.db import open_store

    engine = open_store(obj.settings().database_url)
    flt = SampleFilter(detector, label, parse_when(since), tenant, include_reviewed)
    lines = sample(engine, n, flt, seed)
    body = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    if str(out) == "-":
        click.echo(body, nl=False)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(body, encoding="utf-8")
    strata: dict[str, list[int]] = {}
    for line in lines:
        strata.setdefault(line["label"], [0, 0])[0 if line["flagged"] else 1] += 1
    click.echo(f"wrote {len(lines)} findings to {out}" + ("" if lines else
               " (no findings match: nothing to review)"))
    for lab, (flagged, unflagged) in sorted(strata.items()):
        click.echo(f"  {lab:<36} flagged {flagged:>4}  unflagged {unflagged:>4}")


def note_redactor(settings: Settings) -> Any:
    """Redacts reviewers' notes with the redaction stage (a PII detector, whatever
    CHATMON_DETECTORS says), loaded only when some note has text."""
    from pipeline.review.importer import safety_net

    def redact(notes: list[str]) -> list[str]:
        if not any(notes):
            return safety_net(notes)
        from pipeline.scoring.redaction import redaction_stage

        return redaction_stage((), settings.detector_options.get("pii")).texts(notes)

    return redact


@review_group.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@pass_ctx
def import_cmd(obj: Ctx, file: Path, as_json: bool) -> None:
    """Store the judgments in a reviewed batch FILE (JSON Lines). Lines without "present" are
    not rated yet and are skipped; a bad line or an unknown finding id is reported with its
    line number and the rest is stored (exit status 1 when any line was bad). Importing the
    same file again adds nothing."""
    from pipeline.review.importer import store_reviews
    from pipeline.review.lines import parse_line
    from pipeline.store.db import open_store

    settings = obj.settings()
    engine = open_store(settings.database_url)
    with file.open(encoding="utf-8", errors="replace") as fh:
        items = [p for i, line in enumerate(fh, start=1)
                 if (p := parse_line(line, i)) is not None]
    result = store_reviews(engine, items, str(file), note_redactor(settings))
    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=2))
    else:
        click.echo(f"{file}: {result.stored} stored, {result.updated} updated, "
                   f"{result.unchanged} already stored, {result.unrated} not rated yet, "
                   f"{len(result.errors)} bad")
        for err in result.errors:
            click.echo(f"  line {err.index}: {err.error}", err=True)
    if result.errors:
        sys.exit(1)


@review_group.command("agreement")
@click.option("--json", "as_json", is_flag=True, help="One JSON object, labels under 'labels'.")
@click.option("--since", help="Only reviews of findings on turns from this time (ISO 8601).")
@click.option("--tenant", help="Only this tenant's findings.")
@click.option("--target-precision", type=click.FloatRange(0, 1), default=0.9,
              show_default=True, help="Precision a suggested threshold must reach.")
@click.option("--min-reviewed", type=click.IntRange(1), default=30, show_default=True,
              help="Reviewed findings of a label before a threshold is suggested.")
@click.option("--policy", "policy_file", type=click.Path(exists=True, dir_okay=False,
              path_type=Path), help="Policy file for the current thresholds (default "
              "CHATMON_POLICY_FILE).")
@pass_ctx
def agreement_cmd(obj: Ctx, as_json: bool, since: str | None, tenant: str | None,
                  target_precision: float, min_reviewed: int, policy_file: Path | None) -> None:
    """Per label: reviews (n), agreement of flags with people, precision, Cohen's kappa,
    Krippendorff's alpha between reviewers, and a suggested threshold for the target precision
    with its 95% interval (or why the sample is too small to say). Then the judge's rows
    (chatmon judge): judge vs classifier and judge vs people per judge label and model: n,
    agreement on the rubric's scale, kappa on flags, quadratic-weighted kappa on ordinal
    scales, Krippendorff's alpha."""
    from pipeline.policy.engine import Policy
    from pipeline.review.agreement import agreement
    from pipeline.store.db import open_store

    settings = obj.settings()
    engine = open_store(settings.database_url)
    policy = Policy.from_settings(settings, policy_file)
    out = agreement(engine, parse_when(since), tenant, target_precision, min_reviewed, policy)
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    click.echo(render_agreement(out))


def render_agreement(out: dict[str, Any]) -> str:
    judge = render_judge(out.get("judge") or {})
    if not out["labels"]:
        return "\n\n".join(["no reviews yet: chatmon review sample, then chatmon review "
                            "import", *([judge] if judge else [])])
    lines = [f"{'label':<32} {'n':>5} {'agree':>6} {'prec':>6} {'kappa':>6} {'alpha':>6}  "
             f"suggested threshold (precision >= {out['target_precision']:g})"]
    for label, s in out["labels"].items():
        ir = s["inter_rater"] or {}
        sug = s["suggestion"]
        hint = (f"{sug['threshold']:.3f} (precision {sug['precision']:.2f}, 95% "
                f"{sug['ci95'][0]:.2f}-{sug['ci95'][1]:.2f}, {sug['above']} above)"
                if sug["status"] == "ok" else sug["reason"])
        lines.append(f"{label[:32]:<32} {s['n']:>5} {_f(s['agreement'])} {_f(s['precision'])} "
                     f"{_f(s['kappa'])} {_f(ir.get('alpha_present'))}  {hint}")
    return "\n".join(lines) + (f"\n\n{judge}" if judge else "")


def render_judge(judge: dict[str, Any]) -> str:
    """The judge rows: against the classifiers, then against people (docs/judge.md)."""
    rows = judge.get("vs_classifier", []) + judge.get("vs_people", [])
    if not rows:
        return ""
    lines = [f"{'judge label / model':<34} {'against':<26} {'n':>5} {'agree':>6} {'kappa':>6} "
             f"{'qw-k':>6} {'alpha':>6}"]
    for r in rows:
        who = f"{r['judge_label']} / {r['model']}"
        lines.append(f"{who[:34]:<34} {r['compared_with'][:26]:<26} {r['n']:>5} "
                     f"{_f(r['agreement'])} {_f(r['kappa'])} {_f(r['kappa_quadratic'])} "
                     f"{_f(r['alpha'])}")
    return "\n".join(lines)


def _f(x: float | None) -> str:
    return f"{x:>6.2f}" if x is not None else f"{'-':>6}"
