"""The policy file and the policy engine: validation with errors naming the key and the rule
(bad files and near misses), threshold layers (bot > tenant > global > shipped), allow-list
entries (literal and RE2 pattern, span overlap, scope, expiry), the version, and
``chatmon policy check``."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from detectors.base import Finding, Turn
from pipeline.cli import cli
from pipeline.policy import shipped_thresholds
from pipeline.policy.engine import Policy
from pipeline.policy.file import PolicyFileError, load_policy_file, parse_policy

ISSUE_POLICY = """
[thresholds]
"toxicity.toxicity" = 0.6
[tenants.globex.thresholds]
"empathy.alignment" = 1.0
[bots."helpdesk-a".thresholds]
"repetition.stock_phrase" = 0.9
"""
PHONE = "+1 800 555 0100"
ALLOW = f"""
version = "2026-11-a"
[[allow]]
id = "globex-support-line"
tenant = "globex"
label = "pii.phone_number"
literal = "{PHONE}"
reason = "our own support number"
expires = 2027-01-01
[[allow]]
id = "status-page"
label = "pii.*"
pattern = "status\\\\.example\\\\.(com|org)"
reason = "our public status page"
[[allow]]
id = "helpdesk-quote"
bot = "helpdesk-a"
label = "toxicity.toxicity"
literal = "damn"
reason = "the bot quotes the customer's complaint back"
"""
TS = datetime(2026, 11, 20, 10, tzinfo=UTC)


def policy(text: str, overrides: dict[str, float] | None = None) -> Policy:
    return Policy(parse_policy(text, Path("p.toml")), overrides, text.encode())


def turn(text: str = "x", tenant: str | None = "acme", bot: str | None = "helpdesk-b",
         ts: datetime = TS) -> Turn:
    return Turn("c1", 1, "assistant", text, ts, bot_id=bot, tenant=tenant)


def finding(label: str, score: float, span: tuple[int, int] | None = None) -> Finding:
    return Finding(label.split(".")[0], "1", label, score, span)


BAD_FILES = [
    # (file, what the error must name)
    ('[thresholds]\n"toxicity.toxicity" = 1.5', 'thresholds."toxicity.toxicity": a threshold '
     "is a number from 0 to 1"),
    ('[thresholds]\n"toxicity.toxicity" = "high"', 'thresholds."toxicity.toxicity": a threshold'),
    ('[thresholds]\n"toxicity.toxicity" = -0.1', "a threshold is a number from 0 to 1"),
    ('[thresholds]\n"nosuch.label" = 0.5', "no detector named 'nosuch'"),
    ('[thresholds]\n"toxicity" = 0.5', "'toxicity' is not a label"),
    ('[tenants.globex.thresholds]\n"empathy.Alignment" = 1.0',
     'tenants.globex.thresholds."empathy.Alignment": \'empathy.Alignment\' is not a label'),
    ('[tenants.globex]\nthreshold = 1', "tenants.globex.threshold: unknown key"),
    ("[tresholds]\n", "tresholds: unknown key"),
    ('[bots.""]\nthresholds = {}', "an empty tenant or bot name"),
    ('[[allow]]\nid = "a"\nlabel = "pii.person"\nreason = "r"', "exactly one of literal or "
     "pattern"),
    ('[[allow]]\nid = "a"\nlabel = "pii.person"\nreason = "r"\nliteral = "x"\npattern = "y"',
     "exactly one of literal or pattern"),
    ('[[allow]]\nid = "a"\nlabel = "pii.person"\nreason = "r"\npattern = "(?<=a)b"',
     "allow[0].pattern: not a valid RE2 pattern"),
    ('[[allow]]\nid = "a"\nlabel = "pii.person"\nliteral = "x"', "allow[0].reason: Field "
     "required"),
    ('[[allow]]\nid = "a"\nlabel = "pii.person"\nliteral = "x"\nreason = "  "',
     "allow[0].reason: say why"),
    ('[[allow]]\nid = "has space"\nlabel = "pii.person"\nliteral = "x"\nreason = "r"',
     "allow[0].id: an id is"),
    ('[[allow]]\nid = "a"\nlabel = "default"\nliteral = "x"\nreason = "r"',
     "allow[0].label: 'default' is not a label"),
    ('[[allow]]\nid = "a"\nlabel = "pii.person"\nliteral = "x"\nreason = "r"\n'
     '[[allow]]\nid = "a"\nlabel = "pii.person"\nliteral = "y"\nreason = "r"',
     "allow-list id 'a' is used twice"),
    ('[[allow]]\nid = "a"\nlabel = "pii.person"\nliteral = "x"\nreason = "r"\nexpires = "soon"',
     "allow[0].expires"),
    ("version = 3", "version: Input should be a valid string"),
    ("[thresholds\n", "not valid TOML"),
]


@pytest.mark.parametrize(("text", "message"), BAD_FILES, ids=[m for _, m in BAD_FILES])
def test_bad_policy_files_name_the_key_and_the_rule(text: str, message: str) -> None:
    with pytest.raises(PolicyFileError) as err:
        parse_policy(text, Path("bad.toml"))
    assert any(message in p for p in err.value.problems), err.value.problems
    assert str(err.value).startswith("policy file bad.toml: ")


def test_every_bad_key_of_a_file_is_reported_at_once() -> None:
    text = '[thresholds]\n"toxicity.toxicity" = 2\n"nosuch.x" = 0.5\n[tenants.a]\nfoo = 1'
    with pytest.raises(PolicyFileError) as err:
        parse_policy(text, Path("bad.toml"))
    assert len(err.value.problems) == 3


@pytest.mark.parametrize("text", [
    ISSUE_POLICY, ALLOW, "", 'version = "v1"',
    '[thresholds]\ndefault = 0.4\n"manipulation.*" = 0.3',  # near misses of the key rules
    '[tenants."Globex Corp".thresholds]\n"pii.person" = 0',
])
def test_good_policy_files_load(text: str) -> None:
    parse_policy(text, Path("good.toml"))


def test_unreadable_and_non_utf8_files(tmp_path: Path) -> None:
    with pytest.raises(PolicyFileError, match="cannot read it"):
        load_policy_file(tmp_path / "missing.toml")
    bad = tmp_path / "latin1.toml"
    bad.write_bytes(b'version = "caf\xe9"')
    with pytest.raises(PolicyFileError, match="not UTF-8"):
        load_policy_file(bad)


LAYERS = [
    # (label, tenant, bot, expected threshold, layer)
    ("toxicity.toxicity", "acme", "helpdesk-b", 0.6, "global"),
    ("empathy.alignment", "globex", "care-c", 1.0, "tenant"),
    ("empathy.alignment", "acme", "care-c", shipped_thresholds()["empathy.alignment"], "shipped"),
    ("repetition.stock_phrase", "globex", "helpdesk-a", 0.9, "bot"),
    ("repetition.stock_phrase", "globex", "helpdesk-b",
     shipped_thresholds()["repetition.stock_phrase"], "shipped"),
    ("empathy.alignment", "globex", "helpdesk-a", 0.2, "bot"),  # bot beats tenant
    ("empathy.er", "globex", "x", 0.3, "tenant"),  # the tenant's empathy.* beats shipped
    ("empathy.alignment", "", "", shipped_thresholds()["empathy.alignment"], "shipped"),
    ("manipulation.guilt", "acme", "x", 0.5, "shipped"),  # shipped manipulation.*
]


@pytest.mark.parametrize(("label", "tenant", "bot", "expected", "layer"), LAYERS)
def test_most_specific_layer_wins(label, tenant, bot, expected, layer) -> None:
    text = ISSUE_POLICY.replace('"repetition.stock_phrase" = 0.9',
                                '"repetition.stock_phrase" = 0.9\n"empathy.alignment" = 0.2')
    text = text.replace('"empathy.alignment" = 1.0', '"empathy.alignment" = 1.0\n'
                        '"empathy.*" = 0.3')
    p = policy(text)
    assert p.resolve(label, tenant, bot) == (pytest.approx(expected), layer)
    assert p.threshold(label, tenant, bot) == pytest.approx(expected)


def test_environment_thresholds_sit_over_the_files_global_ones() -> None:
    p = policy(ISSUE_POLICY, {"toxicity.toxicity": 0.65, "bias.stereotype": 0.7})
    assert p.resolve("toxicity.toxicity", "acme") == (0.65, "global")
    assert p.resolve("bias.stereotype", "acme") == (0.7, "global")
    assert p.resolve("empathy.alignment", "globex") == (1.0, "tenant")


def test_no_file_keeps_the_shipped_thresholds() -> None:
    p = Policy()
    for label, value in shipped_thresholds().items():
        if label != "default" and not label.endswith(".*"):
            assert p.threshold(label, "any", "bot") == value


ALLOW_CASES = [
    # (what, finding, turn, flagged, suppressed_by)
    ("support line in the span, globex", finding("pii.phone_number", 0.9, (8, 23)),
     turn(f"Call us {PHONE} today", "globex"), False, "globex-support-line"),
    ("same number, another tenant", finding("pii.phone_number", 0.9, (8, 23)),
     turn(f"Call us {PHONE} today", "acme"), True, None),
    ("number elsewhere in the text, span on another number",
     finding("pii.phone_number", 0.9, (0, 14)),
     turn(f"+1 212 555 0147 or {PHONE}", "globex"), True, None),
    ("expired for turns from 2027", finding("pii.phone_number", 0.9, (8, 23)),
     turn(f"Call us {PHONE} today", "globex", ts=datetime(2027, 1, 1, tzinfo=UTC)), True, None),
    ("below its threshold: nothing to suppress", finding("pii.phone_number", 0.3, (8, 23)),
     turn(f"Call us {PHONE} today", "globex"), False, None),
    ("pattern on pii.* covers a location finding", finding("pii.location", 0.8, (4, 22)),
     turn("see status.example.org for news"), False, "status-page"),
    ("pattern near miss: another domain", finding("pii.location", 0.8, (4, 22)),
     turn("see status.example.net for news"), True, None),
    ("bot-scoped literal without a span", finding("toxicity.toxicity", 0.9),
     turn("You said the damn thing broke", bot="helpdesk-a"), False, "helpdesk-quote"),
    ("bot-scoped literal, another bot", finding("toxicity.toxicity", 0.9),
     turn("You said the damn thing broke", bot="helpdesk-b"), True, None),
    ("literal is case-sensitive", finding("toxicity.toxicity", 0.9),
     turn("You said the DAMN thing broke", bot="helpdesk-a"), True, None),
]


@pytest.mark.parametrize(("what", "f", "t", "flagged", "by"), ALLOW_CASES,
                         ids=[c[0] for c in ALLOW_CASES])
def test_allow_list(what, f, t, flagged, by) -> None:
    d = policy(ALLOW).decide(f, t)
    assert (d.flagged, d.suppressed_by) == (flagged, by), what


def test_version_is_the_files_version_and_a_content_hash() -> None:
    a, b = policy(ALLOW), policy(ALLOW)
    assert a.version == b.version and a.version.startswith("2026-11-a+")
    assert policy(ALLOW + "\n# a comment\n").version != a.version
    assert policy(ALLOW, {"toxicity.toxicity": 0.8}).version != a.version
    assert "+" not in policy(ISSUE_POLICY).version
    assert Policy().version != policy(ISSUE_POLICY).version


def test_policy_check_cli(tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text(ALLOW + '\n[thresholds]\n"empathy.alignmnet" = 0.4\n[[allow]]\nid = "old"\n'
                    'label = "pii.person"\nliteral = "Ann"\nreason = "r"\nexpires = 2020-01-01\n')
    res = CliRunner().invoke(cli, ["policy", "check", str(good)])
    assert res.exit_code == 0, res.output
    assert "is valid: version 2026-11-a+" in res.output and "4 allow-list entries" in res.output
    assert "'empathy.alignmnet'; check the spelling" in res.output
    assert "'old' expired on 2020-01-01" in res.output
    assert "status-page" not in res.output  # a wildcard label is no warning
    strict = CliRunner().invoke(cli, ["policy", "check", "--strict", str(good)])
    assert strict.exit_code == 1
    bad = tmp_path / "bad.toml"
    bad.write_text('[thresholds]\n"toxicity.toxicity" = 7\n[tenants.x]\nfoo = 1\n')
    res = CliRunner().invoke(cli, ["policy", "check", str(bad)])
    assert res.exit_code == 1
    assert "2 error(s)" in res.output
    assert 'error: thresholds."toxicity.toxicity": a threshold is a number' in res.output
    assert "error: tenants.x.foo: unknown key" in res.output


def test_run_refuses_a_bad_policy_file_with_one_line(tmp_path: Path) -> None:
    from pipeline.settings import Settings

    bad = tmp_path / "bad.toml"
    bad.write_text('[thresholds]\n"toxicity.toxicity" = 7\n')
    with pytest.raises(PolicyFileError, match="a threshold is a number from 0 to 1"):
        Policy.from_settings(Settings(policy_file=bad))
