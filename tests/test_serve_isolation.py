"""``chatmon serve`` under hostile input, on SQLite and PostgreSQL: one client's bad event never
changes another client's answer, a body nested 10,000 deep is a dead letter and not a 500, a
store outage answers 503 with Retry-After (then the same request succeeds), and a write the
store refuses becomes that event's dead letter, with no SQL parameter in any log."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from starlette.testclient import TestClient

from pipeline.embedded.serve import Batcher, create_app, split_body
from pipeline.ingest.events import RawRecord
from pipeline.logs import TEXT_LOGGING_LIBRARIES
from tests.conftest import count_rows
from tests.tcp_proxy import TcpProxy

PLANTED = ("Marguerite Okonkwo-Villanueva", "4111 1111 1111 1111", "marguerite.ov@example.org")
TEXT = f"I'm {PLANTED[0]}, card {PLANTED[1]}, mail {PLANTED[2]}"


def event(conv: str, turn: int = 0, text: str = "Hello there") -> dict[str, Any]:
    return {"conversation_id": conv, "turn": turn, "role": "user", "text": text,
            "ts": f"2026-11-20T10:00:{turn:02d}Z", "bot_id": "web"}


SURROGATE_BODY = json.dumps(event("bad", 0, "bad \ud800 here")).encode()  # JSON-escaped


@pytest.fixture(params=["sqlite", "postgres"])
def url(request, sqlite_url: str) -> str:  # type: ignore[no-untyped-def]
    return sqlite_url if request.param == "sqlite" else request.getfixturevalue("postgres_url")


def test_a_lone_surrogate_shares_the_batch_of_8_valid_requests_and_fails_only_itself(
        url: str, make_processor) -> None:  # type: ignore[no-untyped-def]
    proc = make_processor(url, batch_size=64)
    batches: list[Any] = []
    proc.on_batch = batches.append

    async def main() -> list[dict[str, Any]]:
        batcher = Batcher(proc, batch_size=64)
        await batcher.start()
        bodies = [json.dumps(event(f"ok-{k}")).encode() for k in range(8)] + [SURROGATE_BODY]
        jobs = [batcher.submit([RawRecord(f"http:{k}", "event 0", item)
                                for item in split_body(body)]) for k, body in enumerate(bodies)]
        try:
            return await asyncio.gather(*jobs)
        finally:
            await batcher.stop()

    answers = asyncio.run(main())
    assert [b.records for b in batches] == [9]  # all nine in one micro-batch
    assert all(a["rejected"] == [] for a in answers[:8])
    assert [r["reason"] for r in answers[8]["rejected"]] == ["lone_surrogate"]
    assert count_rows(url)["turns"] == 8 and count_rows(url)["dead_letters"] == 1


@contextlib.contextmanager
def live_server(app: Any) -> Iterator[str]:
    """The app under a real uvicorn server on a free port, in a thread."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def test_over_http_8_concurrent_clients_get_200_beside_one_bad_one(
        url: str, make_processor) -> None:  # type: ignore[no-untyped-def]
    proc = make_processor(url, batch_size=64)
    bodies = [json.dumps(event(f"ok-{k}")).encode() for k in range(8)] + [SURROGATE_BODY]
    barrier = threading.Barrier(len(bodies))
    answers: dict[int, httpx.Response] = {}

    def client(k: int, base: str) -> None:
        with httpx.Client(base_url=base, timeout=60) as c:
            barrier.wait()
            answers[k] = c.post("/v1/turns", content=bodies[k],
                                headers={"content-type": "application/json"})

    with live_server(create_app(proc.settings, proc)) as base:
        threads = [threading.Thread(target=client, args=(k, base)) for k in range(len(bodies))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert [answers[k].status_code for k in range(8)] == [200] * 8
    assert answers[8].status_code == 422
    assert answers[8].json()["rejected"][0]["reason"] == "lone_surrogate"
    engine = create_engine(url)
    with engine.connect() as conn:
        stored = set(conn.execute(text("select conversation_id from turns")).scalars())
    engine.dispose()
    assert stored == {f"ok-{k}" for k in range(8)}


@pytest.mark.parametrize("body", [
    b"[" * 10_000 + b"]" * 10_000,
    b"{\"a\": " * 5_000 + b"1" + b"}" * 5_000,
])
def test_a_body_nested_10000_deep_is_a_dead_letter(url: str, make_processor,  # type: ignore[no-untyped-def]
                                                   body: bytes) -> None:
    proc = make_processor(url)
    with TestClient(create_app(proc.settings, proc)) as client:
        r = client.post("/v1/turns", content=body)
    assert r.status_code == 422
    assert [x["reason"] for x in r.json()["rejected"]] == ["nesting_too_deep"]
    assert count_rows(url)["dead_letters"] == 1


def test_one_deep_event_in_an_array_is_refused_alone(url: str, make_processor) -> None:  # type: ignore[no-untyped-def]
    proc = make_processor(url)
    deep = event("deep")
    inner: dict[str, Any] = {"leaf": 1}
    for _ in range(25):
        inner = {"k": inner}
    deep["metadata"] = inner
    with TestClient(create_app(proc.settings, proc)) as client:
        r = client.post("/v1/turns", json=[event("a"), deep, event("b")])
    assert r.status_code == 422
    assert [(x["index"], x["reason"]) for x in r.json()["rejected"]] == [(1, "nesting_too_deep")]
    assert count_rows(url)["turns"] == 2


def test_a_store_outage_answers_503_with_retry_after_and_the_retry_stores(
        postgres_url: str, make_processor) -> None:  # type: ignore[no-untyped-def]
    pg = make_url(postgres_url)
    proxy = TcpProxy(pg.host or "127.0.0.1", pg.port or 5432)
    via_proxy = pg.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    proc = make_processor(via_proxy)
    body = [event("outage", 0, "Hello"), event("outage", 1, "Still there?")]
    try:
        with TestClient(create_app(proc.settings, proc)) as client:
            proxy.cut()
            down = client.post("/v1/turns", json=body)
            assert down.status_code == 503 and down.headers["retry-after"].isdigit()
            assert "request_id" in down.json()
            proxy.restore()
            assert count_rows(postgres_url)["turns"] == 0  # refused whole: nothing half-stored
            up = client.post("/v1/turns", json=body)
            assert up.status_code == 200 and up.json()["rejected"] == []
    finally:
        proxy.close()
    assert count_rows(postgres_url)["turns"] == 2


@contextlib.contextmanager
def store_refuses(url: str, conversation_id: str) -> Iterator[None]:
    """The store itself refuses turns of one conversation (a trigger on SQLite, a CHECK
    constraint on PostgreSQL), as it would a value validation did not foresee."""
    engine = create_engine(url)
    pg = engine.dialect.name == "postgresql"
    with engine.begin() as conn:
        conn.execute(text(
            f"ALTER TABLE turns ADD CONSTRAINT refuse_test CHECK (conversation_id <> "
            f"'{conversation_id}')" if pg else
            f"CREATE TRIGGER refuse_test BEFORE INSERT ON turns WHEN NEW.conversation_id = "
            f"'{conversation_id}' BEGIN SELECT RAISE(ABORT, 'refused'); END"))
    try:
        yield
    finally:
        with engine.begin() as conn:
            conn.execute(text("ALTER TABLE turns DROP CONSTRAINT refuse_test" if pg
                              else "DROP TRIGGER refuse_test"))
        engine.dispose()


def test_a_write_the_store_refuses_is_that_events_dead_letter_with_no_parameters_logged(
        url: str, make_processor, caplog) -> None:  # type: ignore[no-untyped-def]
    # Every logger at DEBUG, SQLAlchemy's statement log included (it would print parameters),
    # but the libraries that log analysed text at DEBUG, which chatmon holds at WARNING.
    caplog.set_level(logging.DEBUG)
    for name in TEXT_LOGGING_LIBRARIES:
        caplog.set_level(logging.WARNING, logger=name)
    caplog.set_level(logging.DEBUG, logger="sqlalchemy.engine")
    proc = make_processor(url, keep_raw_text=True)
    with store_refuses(url, "refused"), TestClient(create_app(proc.settings, proc)) as client:
        r = client.post("/v1/turns", json=[event("fine", 0, TEXT), event("refused", 0, TEXT),
                                           event("fine", 1, "Thanks")])
    assert r.status_code == 422
    assert [(x["index"], x["reason"]) for x in r.json()["rejected"]] == [(1, "processing_error")]
    assert "IntegrityError" in r.json()["rejected"][0]["detail"]
    assert count_rows(url)["turns"] == 2
    logged = caplog.text + r.text
    assert "INSERT INTO turns" in caplog.text  # the statement log was on
    assert "[parameters:" not in caplog.text and "[SQL parameters hidden" in caplog.text
    for value in PLANTED:
        assert value not in logged, value


def test_a_client_that_goes_away_does_not_stop_the_batcher(sqlite_url: str,  # type: ignore[no-untyped-def]
                                                           make_processor) -> None:
    proc = make_processor(sqlite_url)

    async def main() -> dict[str, Any]:
        batcher = Batcher(proc, batch_size=8)
        await batcher.start()
        gone = asyncio.ensure_future(batcher.submit([RawRecord("http:a", "event 0",
                                                                event("gone"))]))
        await asyncio.sleep(0)
        gone.cancel()  # the client disconnected while its job waits in the queue
        answer = await batcher.submit([RawRecord("http:b", "event 0", event("stays"))])
        await batcher.stop()
        return answer

    assert asyncio.run(main())["rejected"] == []
    assert count_rows(sqlite_url)["turns"] == 2
