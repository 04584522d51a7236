"""The scenario suite: the built-in one is complete and valid (checked without sending it), paired
scenarios differ only in the stated group, and bad suite files get one clear, specific error."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pipeline.cli import cli
from pipeline.errors import ChatmonError
from pipeline.probe.suite import BUILTIN, SuiteError, load_suite

EMOTIONS = ("grief", "fear", "anger", "frustration", "shame")
AXES = {"age", "gender", "religion", "nationality", "disability"}


def test_builtin_suite_has_every_category() -> None:
    suite = load_suite()
    assert suite.name == "chatmon-core" and re.fullmatch(r"\d+\.\d+\.\d+", suite.version)
    assert len(suite.scenarios) >= 60
    by = Counter(s.category for s in suite.scenarios)
    for emotion in EMOTIONS:
        assert by[emotion] >= 5, emotion
    assert by["support"] >= 5 and by["manipulation_bait"] >= 5 and by["data_bait"] >= 4
    assert by["multi_turn"] >= 5
    assert {s.axis for s in suite.scenarios if s.category == "paired"} == AXES
    assert len({s.id for s in suite.scenarios}) == len(suite.scenarios)


def test_builtin_multi_turn_scenarios_hold_the_feeling_back_to_turn_two() -> None:
    multi = [s for s in load_suite().scenarios if s.category == "multi_turn"]
    feeling = re.compile(r"scared|died|furious|fed up|ashamed|care home|angry|panick", re.I)
    for s in multi:
        assert len(s.turns) == 2 and s.emotion, s.id
        assert not feeling.search(s.turns[0]) and feeling.search(s.turns[1]), s.id


def test_builtin_bait_covers_loneliness_leaving_and_other_peoples_data() -> None:
    suite = load_suite()
    bait = " ".join(t for s in suite.scenarios if s.category == "manipulation_bait"
                    for t in s.turns).lower()
    assert "friend" in bait and "cancel" in bait and "bye" in bait
    data = [s for s in suite.scenarios if s.category == "data_bait"]
    assert all(re.search(r"email|phone|address|card|who|code", s.turns[0], re.I) for s in data)
    # ...and the user's own card number or one-time code, asked back in full (sensitive echo)
    assert {s.id for s in data} >= {"data-card-readback", "data-code-readback"}


def test_builtin_pairs_differ_only_in_the_stated_group() -> None:
    raw = json.loads(BUILTIN.read_text())
    entries = {e["id"]: e for e in raw["scenarios"] if e["category"] == "paired"}
    pairs: dict[str, list[Any]] = defaultdict(list)
    for s in load_suite().scenarios:
        if s.category == "paired":
            pairs[s.pair or ""].append(s)
    assert len(pairs) == len(entries) >= 25
    for pair, variants in pairs.items():
        groups = entries[pair]["groups"]
        assert sorted(v.group for v in variants) == sorted(groups) and len(groups) >= 2
        # put the placeholder back: every variant gives the same template
        templates = {tuple(t.replace(groups[v.group], "{who}") for t in v.turns)
                     for v in variants}
        assert templates == {tuple(entries[pair]["turns"])}, pair
    per_axis = Counter(variants[0].axis for variants in pairs.values())
    assert all(n >= 6 for n in per_axis.values()), per_axis  # enough pairs for a sign test


def test_list_validates_and_prints_the_suite_without_an_endpoint() -> None:
    res = CliRunner().invoke(cli, ["probe", "--list", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["scenarios"] == len(load_suite().scenarios)
    assert sum(out["by_category"].values()) == out["scenarios"]
    res = CliRunner().invoke(cli, ["probe", "--list", "--category", "grief"])
    assert res.output.splitlines()[0].endswith(": 6 scenarios")


def test_probe_without_endpoint_is_a_usage_error() -> None:
    res = CliRunner().invoke(cli, ["probe", "--model", "m"])
    assert res.exit_code == 2 and "--endpoint and --model are required" in res.output


GOOD = {"id": "s1", "category": "grief", "turns": ["My dog died."]}
PAIR = {"id": "p1", "category": "paired", "axis": "age", "groups": {"old": "80", "young": "20"},
        "turns": ["I'm {who} and sad."]}


def _suite(*scenarios: Any, **head: Any) -> dict[str, Any]:
    return {"suite": "mine", "version": "1.0", "scenarios": list(scenarios), **head}


# (file content, words the error must contain)
BAD: list[tuple[Any, tuple[str, ...]]] = [
    ("{not json", ("not valid JSON",)),
    ([GOOD], ("expected a JSON object",)),
    ({"suite": "mine", "scenarios": [GOOD]}, ("version", "Field required")),
    (_suite(), ("scenarios", "at least 1")),
    (_suite(GOOD, {**GOOD}), ("duplicate scenario ids", "s1")),
    (_suite({**GOOD, "id": "Bad Id"}), ("scenarios[0]", "'Bad Id'", "id", "not a slug")),
    (_suite({**GOOD, "id": "p1.old"}), ("'p1.old'", "not a slug")),  # dots are for pairs
    ({"suite": "My Suite", "version": "1", "scenarios": [GOOD]}, ("suite:", "not a slug")),
    (_suite({**GOOD, "turns": []}), ("scenarios[0]", "turns", "at least 1")),
    (_suite({**GOOD, "turns": ["  "]}), ("turns[0] is empty",)),
    (_suite({**GOOD, "turns": "My dog died."}), ("turns",)),
    (_suite({**GOOD, "mood": "sad"}), ("mood", "Extra inputs")),
    (_suite({**GOOD, "turns": ["x" * 4001]}), ("4001 characters",)),
    (_suite({**PAIR, "turns": ["I'm sad."]}), ("must say {who}",)),
    (_suite({**PAIR, "groups": {"old": "80"}}), ("at least two groups",)),
    (_suite({**PAIR, "groups": {"Old": "80", "young": "20"}}), ("lower-case slugs", "Old")),
    (_suite({**PAIR, "axis": None}), ("'axis' and 'groups'",)),
    (_suite({**GOOD, "axis": "age"}), ("'axis' and 'groups'",)),
    (_suite({**GOOD, "turns": ["I'm {who}."]}), ("only for paired",)),
    (_suite(PAIR, {**PAIR}), ("duplicate scenario ids", "p1.old", "p1.young")),
]


@pytest.mark.parametrize(("content", "words"), BAD)
def test_bad_suite_files_get_a_specific_error(tmp_path: Path, content: Any,
                                              words: tuple[str, ...]) -> None:
    path = tmp_path / "suite.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(SuiteError) as err:
        load_suite(path)
    message = str(err.value)
    assert message.startswith(f"suite {path}") or message.startswith(f"cannot read suite {path}")
    for w in words:
        assert w in message, (w, message)
    assert "https://" not in message  # no pydantic URLs


def test_a_good_user_suite_expands_pairs(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(_suite(GOOD, PAIR)))
    suite = load_suite(path)
    assert [s.id for s in suite.scenarios] == ["s1", "p1.old", "p1.young"]
    assert suite.scenarios[1].turns == ("I'm 80 and sad.",)
    assert suite.scenarios[2].marker() == {"scenario": "p1.young", "category": "paired",
                                           "pair": "p1", "axis": "age", "group": "young"}


def test_missing_suite_and_unknown_category_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="cannot read suite"):
        load_suite(tmp_path / "none.json")
    with pytest.raises(SuiteError, match=r"no scenarios of category \['nope'\]"):
        load_suite().select(["nope"])
    res = CliRunner().invoke(cli, ["probe", "--list", "--suite", str(tmp_path / "none.json")])
    assert isinstance(res.exception, ChatmonError)  # `chatmon` prints it as one line, exit 2
