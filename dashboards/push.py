"""``chatmon dashboards push``: create or update the chatmon folder, the two datasources and the
dashboards in a running Grafana through ``grafana-client``, idempotently: a second push updates
by uid and never duplicates. The token is only ever handed to grafana-client's auth; logs and
messages name the Grafana URL without credentials.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from sqlalchemy.engine import make_url

from dashboards.builder import POSTGRES, PROMETHEUS

log = logging.getLogger(__name__)

FOLDER_UID = "chatmon"
FOLDER_TITLE = "chatmon"


@dataclass
class PushReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def safe_url(url: str) -> str:
    """The URL without user info (for messages and logs)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def datasource_definitions(database_url: str, prometheus_url: str,
                           postgres_host: str | None = None) -> list[dict[str, Any]]:
    """Prometheus always; the PostgreSQL store when the store is PostgreSQL (Grafana has no
    built-in SQLite datasource). ``postgres_host`` overrides the host Grafana connects to (the
    store's host as seen from Grafana, e.g. ``postgres:5432`` in compose)."""
    out: list[dict[str, Any]] = [{
        "name": "Prometheus", "uid": PROMETHEUS.uid, "type": PROMETHEUS.type,
        "access": "proxy", "url": prometheus_url, "isDefault": True}]
    url = make_url(database_url)
    if url.get_backend_name() == "postgresql":
        host = postgres_host or f"{url.host or 'localhost'}:{url.port or 5432}"
        out.append({
            "name": "chatmon-store", "uid": POSTGRES.uid, "type": POSTGRES.type,
            "access": "proxy", "url": host, "user": url.username or "", "isDefault": False,
            "jsonData": {"database": url.database, "sslmode": "disable",
                         "postgresVersion": 1600},
            "secureJsonData": {"password": url.password or ""}})
    return out


def _exists(call: Any, *args: Any) -> bool:
    from grafana_client.client import GrafanaClientError

    try:
        call(*args)
    except GrafanaClientError as exc:
        if exc.status_code == 404:
            return False
        raise
    return True


def push(api: Any, dashboards: dict[str, dict[str, Any]],
         datasources: list[dict[str, Any]]) -> PushReport:
    """Folder, then datasources, then dashboards (which reference both by uid)."""
    report = PushReport()
    if _exists(api.folder.get_folder, FOLDER_UID):
        api.folder.update_folder(FOLDER_UID, title=FOLDER_TITLE, overwrite=True)
        report.updated.append(f"folder {FOLDER_UID}")
    else:
        api.folder.create_folder(FOLDER_TITLE, uid=FOLDER_UID)
        report.created.append(f"folder {FOLDER_UID}")
    for ds in datasources:
        if _exists(api.datasource.get_datasource_by_uid, ds["uid"]):
            api.datasource.update_datasource_by_uid(ds["uid"], ds)
            report.updated.append(f"datasource {ds['uid']}")
        else:
            api.datasource.create_datasource(ds)
            report.created.append(f"datasource {ds['uid']}")
    for uid, dash in dashboards.items():
        existed = _exists(api.dashboard.get_dashboard, uid)
        api.dashboard.update_dashboard({"dashboard": {**dash, "id": None}, "folderUid": FOLDER_UID,
                                        "overwrite": True,
                                        "message": "chatmon dashboards push"})
        (report.updated if existed else report.created).append(f"dashboard {uid}")
    log.info("grafana push: %d created, %d updated", len(report.created), len(report.updated))
    return report


def connect(url: str, token: str, timeout: float = 10.0) -> Any:
    from grafana_client import GrafanaApi

    return GrafanaApi.from_url(url=safe_url(url), credential=token, timeout=timeout)
