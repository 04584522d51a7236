"""A tiny headless-Chromium driver for tests: the DevTools protocol over
``--remote-debugging-pipe`` (NUL-separated JSON on file descriptors 3 and 4, as Playwright and
Puppeteer use it), so no websocket library and no network port are needed. Collects console
errors, uncaught exceptions, failed loads and every requested URL; evaluates JavaScript; writes
full-page PNG screenshots."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import queue
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio")


class Chromium:
    def __init__(self, user_data_dir: Path, width: int = 1400, height: int = 900) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        ours = (self._to_chrome, self._from_chrome)

        def wire() -> None:  # in the child: the pipe ends become fds 3 and 4
            # Copy first (a pipe end may itself be fd 3 or 4), then place and keep across exec.
            read_end, write_end = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)
            for fd in (3, 4):
                os.set_inheritable(fd, True)
            for fd in {to_chrome_r, from_chrome_w, read_end, write_end, *ours} - {3, 4}:
                os.close(fd)

        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={user_data_dir}",
             f"--window-size={width},{height}", "about:blank"],
            close_fds=False, preexec_fn=wire, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next_id = 0
        self._replies: dict[int, queue.Queue[dict[str, Any]]] = {}
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        self.width, self.height = width, height
        self.session = self.target = ""

    def _read(self) -> None:
        buf = b""
        while chunk := os.read(self._from_chrome, 1 << 16):
            buf += chunk
            *messages, buf = buf.split(b"\0")
            for raw in messages:
                msg = json.loads(raw)
                if "id" in msg and msg["id"] in self._replies:
                    self._replies[msg["id"]].put(msg)
                else:
                    with self._lock:
                        self.events.append(msg)

    def send(self, method: str, params: dict[str, Any] | None = None, timeout: float = 60,
             session: bool = True) -> dict[str, Any]:
        with self._lock:
            self._next_id += 1
            msg_id = self._next_id
            self._replies[msg_id] = queue.Queue()
        msg: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        reply = self._replies[msg_id].get(timeout=timeout)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def open(self, url: str, timeout: float = 60) -> None:
        """A fresh tab on ``url`` (closing the one before), waiting for its load event."""
        if self.target:
            self.send("Target.closeTarget", {"targetId": self.target}, session=False)
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        self.target = target["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target["targetId"],
                                                           "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        self.send("Emulation.setDeviceMetricsOverride", {
            "width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False})
        self.send("Page.navigate", {"url": url})
        self.wait_for_event("Page.loadEventFired", timeout)

    def wait_for_event(self, method: str, timeout: float) -> dict[str, Any]:
        """The first ``method`` event of the current tab (a browser that opened several pages
        holds the events of the earlier tabs too)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                for ev in self.events:
                    if ev.get("method") == method and ev.get("sessionId", "") == self.session:
                        return ev
            time.sleep(0.05)
        raise TimeoutError(method)

    def evaluate(self, expression: str) -> Any:
        res = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                             "awaitPromise": True})
        if "exceptionDetails" in res:
            raise RuntimeError(res["exceptionDetails"])
        return res["result"].get("value")

    def wait_until(self, expression: str, timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if value := self.evaluate(expression):
                return value
            time.sleep(0.1)
        raise TimeoutError(expression)

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions, error log entries and failed loads."""
        out = []
        with self._lock:
            for ev in self.events:
                method, params = ev.get("method"), ev.get("params", {})
                if method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                    out.append(f"console.error: {params.get('args')}")
                elif method == "Runtime.exceptionThrown":
                    out.append(f"exception: {params.get('exceptionDetails')}")
                elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                    out.append(f"log: {params['entry'].get('text')}")
                elif method == "Network.loadingFailed":
                    out.append(f"load failed: {params.get('errorText')}")
        return out

    def requested_urls(self) -> list[str]:
        with self._lock:
            return [ev["params"]["request"]["url"] for ev in self.events
                    if ev.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path: Path, clip: dict[str, float] | None = None) -> Path:
        """A PNG of the whole page (not just the viewport), or of ``clip`` (page pixels: x, y,
        width, height, and scale, e.g. 0.5 for a picture half as wide)."""
        height = int(self.evaluate("document.documentElement.scrollHeight"))
        self.send("Emulation.setDeviceMetricsOverride", {
            "width": self.width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": True}
        if clip is not None:
            params["clip"] = {"scale": 1, **clip}
        data = self.send("Page.captureScreenshot", params)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        with contextlib.suppress(Exception):  # already gone
            self.send("Browser.close", session=False, timeout=5)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_chrome, self._from_chrome):
            with contextlib.suppress(OSError):
                os.close(fd)


DOCS_IMG = Path(__file__).resolve().parents[1] / "docs" / "img"


def shot_path(name: str, tmp_path: Path) -> Path:
    """Where a test writes its screenshot: a temporary folder, so a test run never changes the
    repository; ``docs/img`` when ``CHATMON_UPDATE_SCREENSHOTS=1`` (re-taking the pictures the
    docs show, see docs/development.md)."""
    return (DOCS_IMG if os.environ.get("CHATMON_UPDATE_SCREENSHOTS") == "1" else tmp_path) / name
