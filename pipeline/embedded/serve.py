"""``chatmon serve``: the embedded pipeline behind an HTTP ingest endpoint.

Requests are queued and processed in micro-batches (up to ``batch_size`` events or 20 ms) by one
worker thread that owns the Processor, so concurrent requests share detector batches.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from pipeline.alerts.embedded import start_alerting
from pipeline.embedded.lifecycle import EmbeddedLifecycle
from pipeline.errors import MissingExtraError, SinkError, StoreUnavailable
from pipeline.ingest import limits
from pipeline.ingest.events import DETECTOR_ERROR, RawRecord
from pipeline.ingest.otel_http import traces_route
from pipeline.metrics import get_metrics, render_latest
from pipeline.scoring.isolation import process_isolating
from pipeline.scoring.process import BatchReport, Processor
from pipeline.settings import Settings
from pipeline.store.sink import RAW_PURGE_INTERVAL_S

log = logging.getLogger(__name__)
MAX_BODY_BYTES = 10 * 1024 * 1024
BATCH_WAIT_S = 0.02
RETRY_AFTER_S = 5  # what a 503 asks clients to wait while the store is unavailable


@dataclass
class _Job:
    records: list[RawRecord]
    done: asyncio.Future[dict[str, Any]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class Batcher:
    """Collects jobs from concurrent requests and runs them through the processor in batches.

    One event's failure never reaches another request: the batch is processed with per-event
    isolation (``process_isolating``), so each event is stored or dead-lettered with its reason.
    Only a store outage fails the requests of a batch, with ``StoreUnavailable`` (a 503).
    """

    def __init__(self, processor: Processor, batch_size: int) -> None:
        self.processor = processor
        self.batch_size = batch_size
        # The PII detector is shared with review-note redaction; one caller at a time. The
        # lifecycle changes the processor's state under it too, never inside a batch.
        self.lock = threading.Lock()
        self.lifecycle = EmbeddedLifecycle(processor, "serve", self.lock)
        self.queue: asyncio.Queue[_Job] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        """Flush what is queued, then stop (SIGINT/SIGTERM go through uvicorn's shutdown)."""
        while not self.queue.empty():
            await asyncio.sleep(BATCH_WAIT_S)
        if self.task:
            self.task.cancel()

    async def submit(self, records: list[RawRecord]) -> dict[str, Any]:
        job = _Job(records)
        await self.queue.put(job)
        return await job.done

    def _process(self, records: list[RawRecord]) -> BatchReport:
        with self.lock, get_metrics().track(len(records)):
            return process_isolating(self.processor, records)

    def store_reviews(self, items: list[Any], source: str) -> dict[str, Any]:
        from pipeline.review.importer import store_reviews
        from pipeline.review.lines import parse

        parsed = [parse(item, i, allow_unrated=False) for i, item in enumerate(items)]

        def redact(notes: list[str]) -> list[str]:
            with self.lock:
                return self.processor.redactor.texts(notes)

        return store_reviews(self.processor.sink.engine, parsed, source, redact).as_dict()

    async def _loop(self) -> None:
        while True:
            jobs = await self._collect()
            records = [r for j in jobs for r in j.records]
            try:
                report = await asyncio.to_thread(self._process, records)
            except Exception as exc:  # the store is down (503) or a failure of the store itself
                log.error("batch of %d events failed: %s", len(records), type(exc).__name__)
                for j in jobs:
                    if not j.done.done():  # done: its client went away (cancelled)
                        j.done.set_exception(exc)
                continue
            for j in jobs:
                if not j.done.done():
                    j.done.set_result(_answer(j.records, report))

    async def _collect(self) -> list[_Job]:
        """The next micro-batch: jobs until ``batch_size`` events or ``BATCH_WAIT_S``."""
        loop = asyncio.get_running_loop()
        jobs = [await self.queue.get()]
        deadline = loop.time() + BATCH_WAIT_S
        while sum(len(j.records) for j in jobs) < self.batch_size:
            timeout = deadline - loop.time()
            if timeout <= 0:
                break
            try:
                jobs.append(await asyncio.wait_for(self.queue.get(), timeout))
            except TimeoutError:
                break
        return jobs


def _answer(records: list[RawRecord], report: BatchReport) -> dict[str, Any]:
    """One request's answer: the events refused (not stored) with their reason, and the stored
    events a detector failed on (stored without that detector's findings)."""
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in report.dead_letter_rows:
        rows.setdefault((row["source"], row["position"]), []).append(row)
    rejected, detector_errors = [], []
    for i, rec in enumerate(records):
        for row in rows.get((rec.source, rec.position), ()):
            if row["reason"] == DETECTOR_ERROR:
                detector_errors.append({"index": i, "detector": row["detector"]})
            else:
                rejected.append({"index": i, "reason": row["reason"], "detail": row["detail"]})
    return {"received": len(records), "rejected": rejected, "detector_errors": detector_errors}


def split_body(body: bytes) -> list[bytes | str | dict[str, Any]]:
    """A request body as its events: the items of a JSON array, or the one object. A body that
    is not UTF-8 JSON, or nests too deep to parse safely, is one event: validation gives it its
    dead-letter reason."""
    try:
        payload = limits.loads(body.decode("utf-8"), limits.MAX_DEPTH + 1)  # +1: the array
    except ValueError:  # UnicodeDecodeError, TooDeep and invalid JSON are all ValueErrors
        return [body]
    items = payload if isinstance(payload, list) else [payload]
    return [item if isinstance(item, dict) else json.dumps(item) for item in items]


async def read_body(request: Any, limit: int = MAX_BODY_BYTES) -> bytes | None:
    """The request body, or None when it is over ``limit`` bytes (read no further than that)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def periodically(what: str, fn: Callable[[], Any], every_s: float,
                       at_start: bool = False) -> None:
    """``chatmon serve`` runs for weeks: opt-in raw text and rows past their retention must
    expire while it does, and deletions made by ``chatmon purge`` must reach its state."""
    if not at_start:
        await asyncio.sleep(every_s)
    while True:
        try:
            await asyncio.to_thread(fn)
        except SinkError as exc:  # the store is down: the next round tries again
            log.warning("%s failed: %s", what, exc)
        await asyncio.sleep(every_s)


def create_app(settings: Settings, processor: Processor,
               purge_every_s: float = RAW_PURGE_INTERVAL_S) -> Any:
    try:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse, Response
        from starlette.routing import Route
    except ImportError as exc:
        raise MissingExtraError("starlette", "serve") from exc

    token = settings.serve_token.get_secret_value() if settings.serve_token else None
    batcher = Batcher(processor, settings.batch_size)

    def authorized(request: Request) -> bool:
        if token is None:
            return True
        given = request.headers.get("authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {token}".encode())

    async def ingest(request: Request) -> JSONResponse:
        if not authorized(request):
            return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401,
                                headers={"WWW-Authenticate": "Bearer"})
        body = await read_body(request)
        if body is None:
            return JSONResponse({"error": f"body over {MAX_BODY_BYTES} bytes"}, status_code=413)
        req_id = uuid.uuid4().hex[:12]
        items = split_body(body)
        if not items:
            return JSONResponse({"error": "empty array"}, status_code=400)
        records = [RawRecord(f"http:{req_id}", f"event {i}", item) for i, item in enumerate(items)]
        try:
            result = await batcher.submit(records)
        except StoreUnavailable:
            return JSONResponse(
                {"error": "the store is unavailable: send this request again later "
                 "(replays are idempotent)", "request_id": req_id},
                status_code=503, headers={"Retry-After": str(RETRY_AFTER_S)})
        except Exception as exc:
            log.error("request %s failed: %s", req_id, type(exc).__name__)
            return JSONResponse({"error": "internal error", "request_id": req_id},
                                status_code=500)
        result["request_id"] = req_id
        status = 422 if result["rejected"] else 200
        return JSONResponse(result, status_code=status)

    async def reviews(request: Request) -> JSONResponse:
        """Reviewers' judgments, the objects of a reviewed `chatmon review sample` line."""
        if not authorized(request):
            return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401,
                                headers={"WWW-Authenticate": "Bearer"})
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            return JSONResponse({"error": f"body over {MAX_BODY_BYTES} bytes"}, status_code=413)
        try:
            payload = json.loads(body)
        except ValueError:
            return JSONResponse({"error": "the body is not JSON: send one review object or an "
                                 "array of them"}, status_code=400)
        items = payload if isinstance(payload, list) else [payload]
        if not items:
            return JSONResponse({"error": "empty array"}, status_code=400)
        req_id = uuid.uuid4().hex[:12]
        result = await asyncio.to_thread(batcher.store_reviews, items, f"http:{req_id}")
        result["request_id"] = req_id
        return JSONResponse(result, status_code=422 if result["errors"] else 200)

    async def delete_conversation(request: Request) -> JSONResponse:
        """Deletion on request: the conversation leaves the store and this process's state,
        its old events are refused from now on, and the audit log says what went."""
        if not authorized(request):
            return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401,
                                headers={"WWW-Authenticate": "Bearer"})
        cid = request.path_params["conversation_id"]
        try:
            result = await asyncio.to_thread(batcher.lifecycle.delete_conversation, cid,
                                             "DELETE /v1/conversations")
        except StoreUnavailable:
            return JSONResponse({"error": "the store is unavailable: send this request again "
                                 "later"}, status_code=503, headers={"Retry-After":
                                                                      str(RETRY_AFTER_S)})
        return JSONResponse({"purge_id": result.purge_id,
                             "rows": dict(sorted(result.rows.items()))})

    async def health(_request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "detectors": processor.suite.versions})

    async def metrics(_request: Request) -> Response:
        body, content_type = render_latest()
        return Response(body, media_type=content_type)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        await batcher.start()
        alerting = start_alerting(settings, get_metrics())
        lifecycle = batcher.lifecycle
        tasks = [asyncio.create_task(periodically(
            "deletion records", lifecycle.poll, settings.deletion_poll_s))]
        if lifecycle.retention.configured:  # at start too: serve may have been down a while
            tasks.append(asyncio.create_task(periodically(
                "expiry", lifecycle.expire, settings.purge_interval_s, at_start=True)))
        if settings.keep_raw_text:
            tasks.append(asyncio.create_task(periodically(
                "raw text purge", processor.sink.purge_expired_raw, purge_every_s)))
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await batcher.stop()
            if alerting is not None:
                await asyncio.to_thread(alerting.close)

    routes = [Route("/v1/turns", ingest, methods=["POST"]),
              Route("/v1/traces", traces_route(settings, batcher.submit, authorized, read_body,
                                               RETRY_AFTER_S), methods=["POST"]),
              Route("/v1/reviews", reviews, methods=["POST"]),
              Route("/v1/conversations/{conversation_id:path}", delete_conversation,
                    methods=["DELETE"]),
              Route("/health", health), Route("/metrics", metrics)]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.processor = processor
    return app


def serve(settings: Settings, host: str, port: int) -> None:
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingExtraError("uvicorn", "serve") from exc
    from pipeline.embedded.runner import build_processor

    run_id = str(uuid.uuid4())
    processor = build_processor(settings, run_id, "serve", f"http://{host}:{port}")
    if settings.serve_token is None:
        log.warning("CHATMON_SERVE_TOKEN is not set: the ingest endpoint accepts anyone")
    uvicorn.run(create_app(settings, processor), host=host, port=port, log_level="warning")
