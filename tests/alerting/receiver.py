"""A tiny loopback webhook receiver for alerting tests: records every POST (path and JSON body)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Request = tuple[str, dict[str, Any], bytes]


class Receiver:
    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.requests: list[Request] = []
        self._cond = threading.Condition()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                with owner._cond:
                    owner.requests.append((self.path, body, raw))
                    owner._cond.notify_all()
                self.send_response(owner.status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, match: Callable[[Request], bool], timeout_s: float) -> Request | None:
        """The first recorded request that matches, waiting up to ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                for req in self.requests:
                    if match(req):
                        return req
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)
