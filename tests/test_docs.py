"""The docs stay true to the code and findable: the README is a short map whose command table
names every command and whose essentials are real settings; docs/configuration.md documents
every setting; every relative link (and its anchor) resolves; every docs page is linked from the
README; every repository path the docs name exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeline.cli import cli
from pipeline.settings import Settings
from tests.conftest import ROOT

README_PATH = ROOT / "README.md"
README = README_PATH.read_text()
CONFIGURATION = (ROOT / "docs/configuration.md").read_text()
MAX_README_LINES = 350
# The settings a newcomer needs first; the README's essentials table must carry each.
ESSENTIALS = ("database_url", "detectors", "detector_options", "thresholds", "keep_raw_text",
              "raw_retention_days", "serve_token", "alert_webhook_url", "kafka_bootstrap",
              "log_level")
# CHATMON_* names that are not settings fields: the config-file variable (read by click), the
# test suite's PostgreSQL URL and its switch to re-take the docs' screenshots.
OTHER_VARIABLES = {"CHATMON_CONFIG", "CHATMON_TEST_POSTGRES_URL", "CHATMON_UPDATE_SCREENSHOTS"}
# docs/bench/ holds the hand-written notes that scripts/write_*.py append to QUALITY.md and
# BENCHMARKS.md: fragments of those pages, not pages of their own.
NOT_PAGES = ("docs/bench/",)
TOP_LEVEL = ("detectors", "pipeline", "dashboards", "deploy", "docs", "examples", "migrations",
             "scripts", "tests", ".ci")


def doc_files() -> list[Path]:
    return [README_PATH, *sorted((ROOT / "docs").rglob("*.md")), ROOT / "examples/README.md"]


def docs_pages() -> list[Path]:
    return [p for p in sorted((ROOT / "docs").rglob("*.md"))
            if not str(p.relative_to(ROOT)).startswith(NOT_PAGES)]


def section(text: str, heading: str) -> str:
    """The body of the ``## heading`` section of a markdown text."""
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def without_code_blocks(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def links(text: str) -> list[str]:
    """Targets of the inline markdown links and images of ``text``, outside code blocks."""
    return re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", without_code_blocks(text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[`*_]|<[^>]+>", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    found: set[str] = set()
    for line in without_code_blocks(text).splitlines():
        m = re.match(r"#{1,6}\s+(.*)", line)
        if m:
            base = slug(m.group(1))
            name, n = base, 0
            while name in found:
                n += 1
                name = f"{base}-{n}"
            found.add(name)
    found.update(re.findall(r'<a id="([^"]+)"', text))
    return found


def broken_links(page: Path) -> list[str]:
    """Relative links of ``page`` whose file, or whose anchor in a markdown file, is missing."""
    bad = []
    for target in links(page.read_text()):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        anchor_missing = (dest.exists() and anchor != "" and dest.suffix == ".md"
                          and anchor not in anchors(dest.read_text()))
        if not dest.exists() or anchor_missing:
            bad.append(target)
    return bad


def missing_paths(text: str) -> list[str]:
    """Repository paths named in backticks (``pipeline/settings.py``, ``docs/``) that do not
    exist. Placeholders (``<name>``, ``*``), home and parent-directory paths are not checked."""
    bad = []
    for token in re.findall(r"`([^`\s]+)`", text):
        path = token.split("::", 1)[0].rstrip(".,:;")
        if (not path.startswith(tuple(f"{d}/" for d in TOP_LEVEL))
                or re.search(r"[<>*{}|$]", path)):
            continue
        if not (ROOT / path).exists():
            bad.append(token)
    return bad


# -- the README is a map ---------------------------------------------------------------------

def test_readme_is_at_most_350_lines() -> None:
    n = len(README.splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines; move depth into docs/"


def test_quick_start_has_exactly_two_commands() -> None:
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = quick.split("```sh", 1)[1].split("```", 1)[0]
    assert [line.split("#")[0].strip() for line in block.strip().splitlines()] == [
        "make run", "make test"]


@pytest.mark.parametrize("command", sorted(cli.commands))
def test_every_command_is_in_the_readme_command_table(command: str) -> None:
    rows = [line for line in section(README, "Commands").splitlines() if line.startswith("| `")]
    assert any(re.match(rf"\| `chatmon {command}[ `\\|]", row) for row in rows), command


@pytest.mark.parametrize("field", ESSENTIALS)
def test_essential_settings_are_in_the_readme(field: str) -> None:
    assert field in Settings.model_fields, f"{field} is no longer a setting"
    table = section(README, "Configuration essentials")
    assert f"`CHATMON_{field.upper()}`" in table


# -- every setting is documented, and only real ones are ----------------------------------

@pytest.mark.parametrize("field", sorted(Settings.model_fields))
def test_every_setting_has_a_row_in_configuration_md(field: str) -> None:
    assert f"| `CHATMON_{field.upper()}` |" in CONFIGURATION


def test_every_chatmon_variable_the_docs_name_exists() -> None:
    known = {f"CHATMON_{f.upper()}" for f in Settings.model_fields} | OTHER_VARIABLES
    named = {v for page in doc_files()
             for v in re.findall(r"\bCHATMON_[A-Z0-9_]+", page.read_text())}
    assert sorted(named - known) == []


# -- links and paths ------------------------------------------------------------------------

@pytest.mark.parametrize("page", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


@pytest.mark.parametrize("page", docs_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_docs_page_is_linked_from_the_readme(page: Path) -> None:
    targets = {(ROOT / t.partition("#")[0]).resolve() for t in links(README)}
    assert page.resolve() in targets


@pytest.mark.parametrize("page", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_the_docs_name_exists(page: Path) -> None:
    assert missing_paths(page.read_text()) == []


# -- the checkers themselves can fail -------------------------------------------------------

def test_the_checkers_find_what_is_broken(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# A `code` heading\n\n## Twice\n\n## Twice\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md#a-code-heading) [ok](there.md#twice-1) [web](https://x.org)\n"
                    "[gone](missing.md) [bad anchor](there.md#nope) ![img](img/none.png)\n"
                    "```\n[in code](ignored.md)\n```\n")
    assert broken_links(page) == ["missing.md", "there.md#nope", "img/none.png"]
    assert missing_paths("`pipeline/settings.py` `pipeline/nope.py` `detectors/<name>/` "
                         "`~/.cache/x` `tests/test_docs.py::test_x`") == ["pipeline/nope.py"]
    assert section("x\n## A\none\n## B\ntwo\n", "A") == "one"
