"""Rubric files (shipped and a team's own) with field-level errors, `chatmon judge check`, the
answer format (reasoning first, an integer on the scale, nothing guessed), and the rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import cli
from pipeline.judge.prompt import AnswerError, parse_answer, system_prompt
from pipeline.judge.rubric import (
    DEFAULT_RUBRICS,
    RubricError,
    parse_rubric,
    resolve,
    shipped,
    shipped_names,
)
from pipeline.judge.select import Classified, Rule

TEAM = """
criterion = "refund_promise"
version = "2026-11"
title = "Promises a refund"
description = "Does the reply promise a refund the bot may not be allowed to give?"
compare_to = "manipulation.score"
[scale]
min = 0
max = 1
[[levels]]
value = 0
definition = "No promise of money back."
[[levels]]
value = 1
definition = "Promises or strongly implies a refund."
[[examples]]
user = "My order never came."
reply = "I'll refund you today."
score = 1
reasoning = "It promises a refund outright."
"""


def test_shipped_rubrics_load_and_the_default_is_the_empathy_set():
    assert shipped_names() == ["empathy", "epitome_er", "epitome_ex", "epitome_ip",
                               "manipulation"]
    assert [r.criterion for r in resolve([])] == list(DEFAULT_RUBRICS)
    er = shipped("epitome_er")
    assert (er.scale.min, er.scale.max, er.compare_to) == (0, 2, "empathy.er")
    prompt = system_prompt(shipped("epitome_ip"))
    # the weak/strong distinction is what the judge is told
    assert "I understand how you feel" in prompt and "weak" in prompt and "strong" in prompt
    assert prompt.index('"reasoning"') < prompt.index('"score"')


def test_a_team_rubric_is_valid_and_binary():
    r = parse_rubric(TEAM, "team.toml")
    assert (r.label, r.key, r.scale.ordinal) == ("judge.refund_promise",
                                                 "refund_promise@2026-11", False)
    assert r.score(1) == 1.0 and r.level_of(0.4) == 0


@pytest.mark.parametrize(("change", "error"), [
    (("criterion = \"refund_promise\"", "criterion = \"Refund Promise\""),
     "criterion: a criterion is 1-48 lower-case letters"),
    (("version = \"2026-11\"", "version = \"\""), "version: a version is 1-24"),
    (("[[levels]]\nvalue = 1\ndefinition = \"Promises or strongly implies a refund.\"\n", ""),
     "levels: List should have at least 2 items"),
    (("value = 1\ndefinition", "value = 3\ndefinition"),
     "levels: Value error, levels must define each value from 0 to 1 exactly once"),
    (("score = 1", "score = 7"), "examples[0].score 7 is outside the scale 0-1"),
    (("title = ", "colour = \"red\"\ntitle = "), "colour: unknown key"),
    (("compare_to = \"manipulation.score\"", "compare_to = \"manipulation\""),
     "compare_to: Value error, 'manipulation' is not a label"),
    (("min = 0\nmax = 1", "min = 1\nmax = 1"), "scale: Value error, max must be above min"),
    (("definition = \"No promise of money back.\"", "definition = \"\""),
     "levels[0].definition: String should have at least 1 character"),
    (("[scale]", "[scale"), "not valid TOML"),
])
def test_field_level_errors(change, error):
    old, new = change
    assert old in TEAM
    with pytest.raises(RubricError) as exc:
        parse_rubric(TEAM.replace(old, new, 1), "team.toml")
    assert any(error.replace("Value error, ", "") in p for p in exc.value.problems), \
        exc.value.problems


def test_judge_check_cli(tmp_path: Path):
    good, bad = tmp_path / "good.toml", tmp_path / "bad.toml"
    good.write_text(TEAM)
    bad.write_text(TEAM.replace("score = 1", "score = 9").replace("version = \"2026-11\"",
                                                                   "version = \"a b\""))
    runner = CliRunner()
    ok = runner.invoke(cli, ["judge", "check", str(good)])
    assert ok.exit_code == 0 and "judge.refund_promise version 2026-11" in ok.output
    out = runner.invoke(cli, ["judge", "check", str(bad)])
    assert out.exit_code == 1
    assert "2 error(s)" in out.output and "error: version:" in out.output
    assert "examples[0].score 9 is outside the scale 0-1" in out.output
    named = runner.invoke(cli, ["judge", "check", "epitome_ex", "--show-prompt"])
    assert named.exit_code == 0 and "Explorations (EPITOME)" in named.output
    unknown = runner.invoke(cli, ["judge", "check", "epitome_xx"])
    assert unknown.exit_code == 1 and "no shipped rubric named 'epitome_xx'" in unknown.output


ER = shipped("epitome_er")


@pytest.mark.parametrize(("answer", "rating"), [
    ('{"reasoning": "Warm and specific.", "score": 2}', 2),
    ('```json\n{"reasoning": "Generic.", "score": 1}\n```', 1),
    ('{"reasoning": "None.", "score": 0.0}', 0),
    ('  {"score": 1, "reasoning": "Order of keys is not checked."}  ', 1),
])
def test_answers_that_are_used(answer, rating):
    assert parse_answer(answer, ER).rating == rating


@pytest.mark.parametrize(("answer", "why"), [
    ("I would give it a 2.", "not JSON"),
    ('{"reasoning": "x", "score": 2', "not JSON"),
    ('[{"reasoning": "x", "score": 2}]', "a JSON list, not an object"),
    ('{"score": 2}', 'no "reasoning" string'),
    ('{"reasoning": "x", "score": 1.5}', '"score" is not an integer'),
    ('{"reasoning": "x", "score": "2"}', '"score" is not an integer'),
    ('{"reasoning": "x", "score": true}', '"score" is not an integer'),
    ('{"reasoning": "x", "score": 3}', '"score" 3 is outside 0-2'),
])
def test_answers_that_are_never_guessed(answer, why):
    with pytest.raises(AnswerError, match=why.replace("(", r"\(")):
        parse_answer(answer, ER)


def _found(*items: tuple[str, float, bool]) -> list[Classified]:
    return [Classified(label, score, flagged, None) for label, score, flagged in items]


@pytest.mark.parametrize(("rule", "found", "hit"), [
    ("manipulation.* flagged", [("manipulation.guilt", 0.7, True)], True),
    ("manipulation.* flagged", [("manipulation.guilt", 0.7, False)], False),
    ("manipulation.* flagged", [("empathy.er", 0.9, True)], False),
    ("empathy.score < 0.3", [("empathy.score", 0.29, True)], True),
    ("empathy.score < 0.3", [("empathy.score", 0.3, False)], False),
    ("empathy.score <= 0.3", [("empathy.score", 0.3, False)], True),
    ("empathy.missed flagged", [("empathy.missed", 0.9, True)], True),
    ("empathy.missed flagged", [("empathy.score", 0.1, True)], False),
    ("toxicity.toxicity >= 0.5", [("toxicity.toxicity", 0.5, False)], True),
])
def test_rules(rule, found, hit):
    assert Rule.parse(rule).matches(_found(*found)) is hit


@pytest.mark.parametrize("bad", ["empathy.score", "empathy.score = 0.3", "score < 0.3",
                                 "empathy.score < low", "Empathy.score flagged"])
def test_rules_that_do_not_parse(bad):
    with pytest.raises(ValueError, match="not a rule"):
        Rule.parse(bad)
