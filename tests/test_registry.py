"""Every registered detector ships canonical examples, and gets them right through the suite."""

from __future__ import annotations

import importlib

import pytest

from detectors.base import Detector, Example
from detectors.registry import REGISTRY, create, module_of
from pipeline.scoring.suite import DetectorSuite, simple_input


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_registered_detector_has_examples(name: str) -> None:
    examples = getattr(importlib.import_module(module_of(name)), "EXAMPLES", ())
    assert len(examples) >= 3, f"{name} ships fewer than 3 EXAMPLES"
    assert all(isinstance(e, Example) for e in examples)
    assert any(e.expect for e in examples), f"{name} has no positive example"
    assert any(e.absent for e in examples), f"{name} has no near-miss example"


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_detector_is_cheap_to_construct_and_follows_the_protocol(name: str) -> None:
    det = create(name)
    assert isinstance(det, Detector)
    assert det.name == name and det.version and det.roles <= {"user", "assistant"}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_detector_gets_its_examples_right(name: str) -> None:
    examples: tuple[Example, ...] = importlib.import_module(module_of(name)).EXAMPLES
    suite = DetectorSuite([create(name)])
    # each example gets a bot of its own, so state from one never leaks into another
    warmup = [simple_input(text, conversation_id=f"warm-{i}-{j}", bot_id=f"ex-bot-{i}")
              for i, e in enumerate(examples) for j, text in enumerate(e.preceded_by)]
    items = [simple_input(e.text, e.role, e.prompt, conversation_id=f"ex-{i}",
                          bot_id=f"ex-bot-{i}") for i, e in enumerate(examples)]
    from pipeline.policy import is_flagged, threshold

    if warmup:
        assert not suite.score(warmup).failures
    result = suite.score(items)
    assert not result.failures, result.failures
    for ex, found in zip(examples, result.findings, strict=True):
        # A label the shipped policy can never flag (threshold above 1, e.g. style) is a
        # measurement: for it, "fires" means the finding is there.
        flagged = {f.label for f in found
                   if is_flagged(f.label, f.score) or threshold(f.label) > 1.0}
        assert ex.expect <= flagged, (ex.text, ex.expect - flagged)
        assert not (ex.absent & flagged), (ex.text, ex.absent & flagged)


def test_unknown_detector_is_a_clear_error() -> None:
    with pytest.raises(KeyError, match="registered"):
        create("nope")


def test_an_unknown_option_is_a_clear_error_naming_it() -> None:
    from detectors.base import DetectorError
    from detectors.registry import create

    with pytest.raises(DetectorError, match="bad detector options.*'colour'.*colour"):
        create("toxicity", {"colour": "blue"})
    assert create("toxicity", {}).name == "toxicity"  # the same detector, valid options


def test_the_cli_reports_a_bad_option_in_one_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    src = tmp_path / "t.jsonl"
    src.write_text('{"conversation_id": "c", "turn": 0, "role": "assistant", "text": "Hi", '
                   '"ts": "2026-11-20T10:00:00Z"}\n')
    env = {"CHATMON_DETECTORS": '["toxicity"]', "PATH": "/usr/bin:/bin",
           "CHATMON_DETECTOR_OPTIONS": '{"toxicity": {"colour": "blue"}}',
           "CHATMON_DATABASE_URL": f"sqlite:///{tmp_path / 'c.db'}", "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "run", str(src)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: bad detector options ['colour']")
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
