"""``chatmon serve``'s HTTP ingest on SQLite and PostgreSQL: bearer token, one event or an array,
a 4xx naming each bad event's reason while good events are stored, health."""

from __future__ import annotations

import json

import pytest
from pydantic import SecretStr
from starlette.testclient import TestClient

from pipeline.embedded.serve import create_app
from tests.conftest import count_rows

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def event(turn: int, text: str = "Hello there", role: str = "user", conv: str = "h1") -> dict:
    return {"conversation_id": conv, "turn": turn, "role": role, "text": text,
            "ts": f"2026-11-20T10:00:{turn:02d}Z", "bot_id": "web"}


@pytest.fixture(params=["sqlite", "postgres"])
def client(request, make_processor, sqlite_url):  # type: ignore[no-untyped-def]
    url = sqlite_url if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    proc = make_processor(url, serve_token=SecretStr(TOKEN), batch_size=8)
    with TestClient(create_app(proc.settings, proc)) as c:
        c.url = url  # type: ignore[attr-defined]
        yield c


def test_requires_the_bearer_token(client) -> None:  # type: ignore[no-untyped-def]
    assert client.post("/v1/turns", json=event(0)).status_code == 401
    bad = {"Authorization": "Bearer wrong"}
    assert client.post("/v1/turns", json=event(0), headers=bad).status_code == 401
    assert count_rows(client.url)["turns"] == 0


def test_one_event_and_an_array(client) -> None:  # type: ignore[no-untyped-def]
    r = client.post("/v1/turns", json=event(0), headers=AUTH)
    assert r.status_code == 200 and r.json()["rejected"] == []
    r = client.post("/v1/turns", json=[event(1, "How can I help?", "assistant"), event(2)],
                    headers=AUTH)
    assert r.status_code == 200 and r.json()["received"] == 2
    assert count_rows(client.url)["turns"] == 3


def test_bad_events_get_a_4xx_naming_each_reason_and_good_ones_are_stored(client) -> None:  # type: ignore[no-untyped-def]
    batch = [event(0), {"conversation_id": "h1", "turn": 1}, event(2),
             {**event(3), "role": "system"}, "not an object", event(4)]
    r = client.post("/v1/turns", content=json.dumps(batch), headers=AUTH)
    assert r.status_code == 422
    assert {(b["index"], b["reason"]) for b in r.json()["rejected"]} == {
        (1, "missing_field"), (3, "unknown_role"), (4, "not_an_object")}
    assert count_rows(client.url)["turns"] == 3
    assert count_rows(client.url)["dead_letters"] == 3


def test_invalid_json_body_is_dead_lettered(client) -> None:  # type: ignore[no-untyped-def]
    r = client.post("/v1/turns", content=b'{"conversation_id": ', headers=AUTH)
    assert r.status_code == 422 and r.json()["rejected"][0]["reason"] == "invalid_json"


def test_replayed_request_adds_nothing(client) -> None:  # type: ignore[no-untyped-def]
    body = [event(0, "My email is ann@example.com"), event(1, "Thanks!", "assistant")]
    client.post("/v1/turns", json=body, headers=AUTH)
    first = count_rows(client.url)
    r = client.post("/v1/turns", json=body, headers=AUTH)
    assert r.status_code == 200 and count_rows(client.url) == first


def test_health(client) -> None:  # type: ignore[no-untyped-def]
    r = client.get("/health")
    assert r.status_code == 200 and r.json()["status"] == "ok" and "pii" in r.json()["detectors"]


def _finding_ids(url: str) -> list[str]:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.connect() as conn:
        ids = [r[0] for r in conn.execute(text("select id from findings order by id"))]
    engine.dispose()
    return ids


def test_reviews_endpoint(client) -> None:  # type: ignore[no-untyped-def]
    client.post("/v1/turns", json=[event(0, "My email is ann@example.com and I'm Ann Lee"),
                                   event(1, "Thanks Ann, noted.", "assistant")], headers=AUTH)
    fid, other = _finding_ids(client.url)[:2]
    review = {"finding_id": fid, "present": True, "reviewer": "ann",
              "note": "mail me at bob.roe@example.org"}
    assert client.post("/v1/reviews", json=review).status_code == 401
    r = client.post("/v1/reviews", json=review, headers=AUTH)
    assert r.status_code == 200 and r.json()["stored"] == 1 and r.json()["errors"] == []
    r = client.post("/v1/reviews", json=[review], headers=AUTH)
    assert r.status_code == 200 and (r.json()["stored"], r.json()["unchanged"]) == (0, 1)
    bad = [{"finding_id": other, "present": False}, {"finding_id": "f" * 40, "present": True},
           {"finding_id": other, "reviewer": "bob"}, "nope"]
    r = client.post("/v1/reviews", json=bad, headers=AUTH)
    assert r.status_code == 422 and r.json()["stored"] == 1
    assert [(e["index"], e["error"][:20]) for e in r.json()["errors"]] == [
        (1, "unknown finding id f"), (2, "present must be true"), (3, "a review is a JSON o")]
    assert client.post("/v1/reviews", content=b"{", headers=AUTH).status_code == 400
    from sqlalchemy import create_engine, text

    engine = create_engine(client.url)
    with engine.connect() as conn:
        notes = [r[0] for r in conn.execute(text("select note from reviews"))]
    engine.dispose()
    assert len(notes) == 2 and not any("bob.roe" in n for n in notes)


def test_a_long_running_serve_purges_expired_raw_text(make_processor, sqlite_url) -> None:  # type: ignore[no-untyped-def]
    """With the raw-text opt-in, serve clears expired raw text while it runs, not only when it
    starts (here every 50 ms instead of hourly)."""
    import time
    from datetime import UTC, datetime, timedelta

    from sqlalchemy import create_engine, text

    proc = make_processor(sqlite_url, serve_token=SecretStr(TOKEN), keep_raw_text=True)
    with TestClient(create_app(proc.settings, proc, purge_every_s=0.05)) as c:
        r = c.post("/v1/turns", json=event(0, "call me on 212-555-0188"), headers=AUTH)
        assert r.status_code == 200
        engine = create_engine(sqlite_url)
        with engine.begin() as conn:
            assert "0188" in conn.execute(text("select text_raw from turns")).scalar_one()
            conn.execute(text("update turns set raw_expires_at = :p"),
                         {"p": datetime.now(UTC) - timedelta(seconds=1)})
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with engine.connect() as conn:
                if conn.execute(text("select text_raw from turns")).scalar_one() is None:
                    break
            time.sleep(0.05)
        with engine.connect() as conn:
            assert conn.execute(text("select text_raw from turns")).scalar_one() is None
