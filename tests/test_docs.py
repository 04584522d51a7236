"""The README stays true to the code: every setting and every command is documented."""

from __future__ import annotations

import pytest

from pipeline.cli import cli
from pipeline.settings import Settings
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()


@pytest.mark.parametrize("field", sorted(Settings.model_fields))
def test_every_setting_is_in_the_readme(field: str) -> None:
    assert f"CHATMON_{field.upper()}" in README


@pytest.mark.parametrize("command", sorted(cli.commands))
def test_every_command_is_in_the_readme(command: str) -> None:
    assert f"`chatmon {command}" in README


def test_quick_start_has_exactly_two_commands() -> None:
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = quick.split("```sh", 1)[1].split("```", 1)[0]
    assert [line.split("#")[0].strip() for line in block.strip().splitlines()] == [
        "make run", "make test"]
