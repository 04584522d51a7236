"""One event's failure stays that event's: a detector failing on one turn loses only that turn's
findings of that detector, an event whose processing raises is its own ``processing_error`` dead
letter while the batch around it is stored, and ``chatmon run`` reads to the end."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from detectors.base import Finding, Turn
from pipeline.embedded import runner
from pipeline.scoring.context import MemoryContextStore
from pipeline.scoring.suite import DetectorSuite, simple_input
from tests.conftest import count_rows


class FailsOnBoom:
    """A test double detector: it raises on any batch holding a text with BOOM (as a model can
    on one odd input) and finds one ``fails.ok`` per turn otherwise."""

    name, version, roles = "fails", "0", frozenset({"assistant"})

    def load(self) -> None: ...

    def score(self, batch):  # type: ignore[no-untyped-def]
        if any("BOOM" in item.turn.text for item in batch):
            raise ValueError(f"cannot score {batch[0].turn.text!r}")
        return [[Finding(self.name, self.version, "fails.ok", 0.5)] for _ in batch]


class Counting:
    name, version, roles = "counting", "0", frozenset({"assistant"})

    def load(self) -> None: ...

    def score(self, batch):  # type: ignore[no-untyped-def]
        return [[Finding(self.name, self.version, "counting.n", 0.1)] for _ in batch]


@pytest.mark.parametrize(("texts", "failing"), [
    (["fine one", "BOOM two", "fine three", "fine four"], [1]),
    (["BOOM", "BOOM again"], [0, 1]),
    (["BOOM alone"], [0]),
    (["all", "fine", "here"], []),
])
def test_a_detector_failing_on_one_turn_keeps_the_batchs_other_turns(
        texts: list[str], failing: list[int]) -> None:
    batch = [simple_input(t, conversation_id=f"c{i}") for i, t in enumerate(texts)]
    result = DetectorSuite([FailsOnBoom(), Counting()]).score(batch)
    failed_keys = [key for f in result.failures for key in f.keys]
    assert failed_keys == [batch[i].turn.key for i in failing]
    for i, found in enumerate(result.findings):
        labels = sorted(f.label for f in found)
        assert labels == (["counting.n"] if i in failing else ["counting.n", "fails.ok"])
    assert all("ValueError" in f.error and "BOOM" not in f.error for f in result.failures)


class BrokenHistory(MemoryContextStore):
    """A context store that raises for one conversation: in production a faust Table or any
    injected store could; nothing in the shipped code path raises here on its own."""

    def history(self, conversation_id: str) -> tuple[Turn, ...]:
        if conversation_id == "broken":
            raise KeyError("corrupt entry")
        return super().history(conversation_id)


def line(conv: str, turn: int, text: str = "Hello", role: str = "user") -> str:
    return json.dumps({"conversation_id": conv, "turn": turn, "role": role, "text": text,
                       "ts": f"2026-11-20T10:00:{turn:02d}Z"})


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_an_event_whose_processing_raises_is_its_own_dead_letter(
        store: str, request, sqlite_url: str, make_processor, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url = sqlite_url if store == "sqlite" else request.getfixturevalue("postgres_url")
    proc = make_processor(url, batch_size=8)
    proc.contexts = BrokenHistory()
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join([line("a", 0), line("broken", 0), line("a", 1, "Hi!", "assistant"),
                              line("b", 0)]) + "\n")
    summary = runner.run([str(src)], proc.settings, progress=False, processor=proc).as_dict()
    assert summary["turns_stored"] == 3
    assert summary["dead_letter_reasons"] == {"processing_error": 1}
    rows = [json.loads(x) for x in Path(f"{src}.dlq.jsonl").read_text().splitlines()]
    assert [(r["position"], r["reason"]) for r in rows] == [("line 2", "processing_error")]
    assert "KeyError" in rows[0]["detail"] and "corrupt" not in rows[0]["detail"]
    rows_in_store = count_rows(url)
    assert rows_in_store["turns"] == 3 and rows_in_store["dead_letters"] == 1


def test_a_retried_turn_is_not_its_own_history() -> None:
    store = MemoryContextStore(5)
    ts = datetime(2026, 1, 1, tzinfo=UTC)
    first = Turn("c", 0, "user", "hi", ts)
    store.append(first)
    store.append(first)  # a replay or a retry after a store outage
    assert store.history("c") == (first,)
