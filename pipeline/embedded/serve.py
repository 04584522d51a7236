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
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from pipeline.alerts.embedded import start_alerting
from pipeline.errors import MissingExtraError
from pipeline.ingest.events import RawRecord
from pipeline.metrics import get_metrics, render_latest
from pipeline.scoring.process import Processor
from pipeline.settings import Settings

log = logging.getLogger(__name__)
MAX_BODY_BYTES = 10 * 1024 * 1024
BATCH_WAIT_S = 0.02


@dataclass
class _Job:
    records: list[RawRecord]
    done: asyncio.Future[dict[str, Any]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class Batcher:
    """Collects jobs from concurrent requests and runs them through the processor in batches."""

    def __init__(self, processor: Processor, batch_size: int) -> None:
        self.processor = processor
        self.batch_size = batch_size
        # The PII detector is shared with review-note redaction; one caller at a time.
        self.lock = threading.Lock()
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

    def _process(self, records: list[RawRecord]) -> Any:
        with self.lock, get_metrics().track(len(records)):
            return self.processor.process(records)

    def store_reviews(self, items: list[Any], source: str) -> dict[str, Any]:
        from pipeline.review.importer import store_reviews
        from pipeline.review.lines import parse

        parsed = [parse(item, i, allow_unrated=False) for i, item in enumerate(items)]

        def redact(notes: list[str]) -> list[str]:
            with self.lock:
                return self.processor.redactor.texts(notes)

        return store_reviews(self.processor.sink.engine, parsed, source, redact).as_dict()

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
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
            records = [r for j in jobs for r in j.records]
            try:
                report = await asyncio.to_thread(self._process, records)
            except Exception as exc:  # the store is down or similar: fail these requests
                log.error("batch of %d events failed: %s", len(records), type(exc).__name__)
                for j in jobs:
                    j.done.set_exception(exc)
                continue
            rejected = {(row["source"], row["position"]): row for row in report.dead_letter_rows}
            for j in jobs:
                bad = [
                    {"index": i, "reason": rejected[(r.source, r.position)]["reason"],
                     "detail": rejected[(r.source, r.position)]["detail"]}
                    for i, r in enumerate(j.records) if (r.source, r.position) in rejected
                ]
                j.done.set_result({"received": len(j.records), "rejected": bad})


def create_app(settings: Settings, processor: Processor) -> Any:
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
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            return JSONResponse({"error": f"body over {MAX_BODY_BYTES} bytes"}, status_code=413)
        req_id = uuid.uuid4().hex[:12]
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        items = payload if isinstance(payload, list) else [body if payload is None else payload]
        if not items:
            return JSONResponse({"error": "empty array"}, status_code=400)
        records = [RawRecord(f"http:{req_id}", f"event {i}", item if isinstance(item, bytes | dict)
                             else json.dumps(item)) for i, item in enumerate(items)]
        result = await batcher.submit(records)
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

    async def health(_request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "detectors": processor.suite.versions})

    async def metrics(_request: Request) -> Response:
        body, content_type = render_latest()
        return Response(body, media_type=content_type)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        await batcher.start()
        alerting = start_alerting(settings, get_metrics())
        try:
            yield
        finally:
            await batcher.stop()
            if alerting is not None:
                await asyncio.to_thread(alerting.close)

    routes = [Route("/v1/turns", ingest, methods=["POST"]),
              Route("/v1/reviews", reviews, methods=["POST"]), Route("/health", health),
              Route("/metrics", metrics)]
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
