"""chatmon dashboards push, through grafana-client, against a FAKE Grafana: no Grafana server
can run on these machines, so this test starts a local HTTP server that records every request
and answers the folder, datasource and dashboard endpoints the way Grafana's HTTP API does
(404 for unknown uids, 409 for a duplicate datasource, versions bumped on overwrite, 401 without
the bearer token). It checks what was created, that a second push updates instead of
duplicating, and that the token never reaches logs or output."""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from click.testing import CliRunner

from dashboards import builders
from dashboards.push import datasource_definitions, safe_url
from pipeline.cli import cli

TOKEN = "glsa_TESTtoken_0123456789abcdef"
PG_URL = "postgresql+psycopg://chatmon:pg-secret@db.internal:5433/chatmon"


@dataclass
class FakeGrafana:
    folders: dict[str, dict[str, Any]] = field(default_factory=dict)
    datasources: dict[str, dict[str, Any]] = field(default_factory=dict)
    dashboards: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[tuple[str, str, str]] = field(default_factory=list)  # method, path, auth

    def handle(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        routes = [
            ("GET", r"/api/folders/([\w-]+)", lambda m: self._get(self.folders, m[1])),
            ("POST", r"/api/folders", lambda m: self._create_folder(body)),
            ("PUT", r"/api/folders/([\w-]+)", lambda m: self._update(self.folders, m[1], body)),
            ("GET", r"/api/datasources/uid/([\w-]+)",
             lambda m: self._get(self.datasources, m[1])),
            ("POST", r"/api/datasources", lambda m: self._create_datasource(body)),
            ("PUT", r"/api/datasources/uid/([\w-]+)",
             lambda m: self._update(self.datasources, m[1], body)),
            ("GET", r"/api/dashboards/uid/([\w-]+)", lambda m: self._get_dashboard(m[1])),
            ("POST", r"/api/dashboards/db", lambda m: self._save_dashboard(body)),
        ]
        for verb, pattern, answer in routes:
            if verb == method and (match := re.fullmatch(pattern, path)):
                return answer(match)
        return 404, {"message": "Not found"}

    def _get(self, store: dict[str, Any], uid: str) -> tuple[int, Any]:
        return (200, store[uid]) if uid in store else (404, {"message": "not found"})

    def _update(self, store: dict[str, Any], uid: str, body: Any) -> tuple[int, Any]:
        if uid not in store:
            return 404, {"message": "not found"}
        store[uid] = {**store[uid], **body, "version": store[uid].get("version", 1) + 1}
        return 200, store[uid]

    def _create_folder(self, body: Any) -> tuple[int, Any]:
        if body["uid"] in self.folders:
            return 409, {"message": "a folder with the same uid already exists"}
        self.folders[body["uid"]] = {**body, "id": len(self.folders) + 1, "version": 1}
        return 200, self.folders[body["uid"]]

    def _create_datasource(self, body: Any) -> tuple[int, Any]:
        if body["uid"] in self.datasources or any(
                d["name"] == body["name"] for d in self.datasources.values()):
            return 409, {"message": "data source with the same name already exists"}
        self.datasources[body["uid"]] = {**body, "id": len(self.datasources) + 1}
        return 200, {"message": "Datasource added", "datasource": self.datasources[body["uid"]]}

    def _get_dashboard(self, uid: str) -> tuple[int, Any]:
        if uid not in self.dashboards:
            return 404, {"message": "Dashboard not found"}
        return 200, {"dashboard": self.dashboards[uid]["dashboard"], "meta": {}}

    def _save_dashboard(self, body: Any) -> tuple[int, Any]:
        dash, uid = body["dashboard"], body["dashboard"]["uid"]
        if body.get("folderUid") not in self.folders:
            return 400, {"message": "folder not found"}
        if uid in self.dashboards and not body.get("overwrite"):
            return 412, {"status": "name-exists", "message": "dashboard exists"}
        version = self.dashboards.get(uid, {}).get("version", 0) + 1
        self.dashboards[uid] = {"dashboard": dash, "folderUid": body["folderUid"],
                                "version": version}
        return 200, {"uid": uid, "status": "success", "version": version, "url": f"/d/{uid}"}


@pytest.fixture
def grafana() -> Iterator[tuple[str, FakeGrafana]]:
    fake = FakeGrafana()

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            auth = self.headers.get("Authorization", "")
            fake.requests.append((self.command, self.path, auth))
            status, answer = ((401, {"message": "Unauthorized"}) if auth != f"Bearer {TOKEN}"
                              else fake.handle(self.command, self.path, body))
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = _serve  # noqa: N815

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", fake
    server.shutdown()
    server.server_close()


def _push(url: str, token: str = TOKEN) -> Any:
    env = {"CHATMON_GRAFANA_URL": url, "CHATMON_GRAFANA_TOKEN": token,
           "CHATMON_DATABASE_URL": PG_URL, "CHATMON_LOG_LEVEL": "DEBUG"}
    return CliRunner().invoke(cli, ["dashboards", "push", "--postgres-host", "postgres:5432"],
                              env=env)


def test_push_creates_then_updates_without_duplicates(
        grafana: tuple[str, FakeGrafana], caplog: pytest.LogCaptureFixture) -> None:
    url, fake = grafana
    caplog.set_level(logging.DEBUG)
    first = _push(url)
    assert first.exit_code == 0, first.output
    assert set(fake.folders) == {"chatmon"}
    assert set(fake.datasources) == {"chatmon-prometheus", "chatmon-postgres"}
    pg = fake.datasources["chatmon-postgres"]
    assert pg["url"] == "postgres:5432" and pg["jsonData"]["database"] == "chatmon"
    uids = {b()["uid"] for b in builders().values()}
    assert set(fake.dashboards) == uids
    assert all(d["folderUid"] == "chatmon" and d["version"] == 1
               for d in fake.dashboards.values())
    assert first.output.count("created") == 5
    n_first = len(fake.requests)

    second = _push(url)
    assert second.exit_code == 0, second.output
    assert second.output.count("updated") == 5 and "created" not in second.output
    assert len(fake.folders) == 1 and len(fake.datasources) == 2
    assert set(fake.dashboards) == uids and all(d["version"] == 2
                                                for d in fake.dashboards.values())
    again = fake.requests[n_first:]
    assert not [r for r in again if r[0] == "POST" and r[1] in ("/api/folders",
                                                                 "/api/datasources")]
    assert all(auth == f"Bearer {TOKEN}" for _, _, auth in fake.requests)
    for text in (first.output, second.output, caplog.text):
        assert TOKEN not in text and "pg-secret" not in text


def test_a_wrong_token_fails_cleanly_without_echoing_it(grafana: tuple[str, FakeGrafana]) -> None:
    url, fake = grafana
    result = _push(url, token="glsa_wrong_secret_value")
    assert result.exit_code != 0
    assert "glsa_wrong_secret_value" not in result.output
    assert not fake.folders and not fake.dashboards


def test_push_needs_url_and_token() -> None:
    result = CliRunner().invoke(cli, ["dashboards", "push"],
                                env={"CHATMON_GRAFANA_URL": "", "CHATMON_GRAFANA_TOKEN": ""})
    assert result.exit_code != 0
    assert "CHATMON_GRAFANA_TOKEN" in str(result.exception) + result.output


def test_datasources_follow_the_store() -> None:
    assert [d["uid"] for d in datasource_definitions("sqlite:///x.db", "http://p:9090")] == [
        "chatmon-prometheus"]
    pg = datasource_definitions(PG_URL, "http://p:9090")[1]
    assert pg["url"] == "db.internal:5433" and pg["user"] == "chatmon"
    assert pg["secureJsonData"] == {"password": "pg-secret"}
    assert safe_url("https://admin:pw@grafana.example:3000/sub?x=1") == (
        "https://grafana.example:3000/sub")
