"""deploy/: the Dockerfile, compose stack and Kubernetes manifests parse, and their
cross-references hold: image names and tags, ports, the CHATMON_* variables the code really
reads (from ``Settings.model_fields``), probe paths that the worker serves, the commands the CLI
has, the files the Prometheus/Alertmanager/Grafana containers mount. tests/deploy/ builds the
images and starts them (and validates the manifests against the Kubernetes schemas)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from pipeline import __version__
from pipeline.cli import cli
from pipeline.kafka.app import HEALTH_PATH, METRICS_PATH, READY_PATH
from pipeline.metrics import ALL_METRICS
from pipeline.settings import Settings

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
K8S = DEPLOY / "k8s"
IMAGE = f"chatmon:{__version__}"  # Kubernetes: the image pushed to a registry
LOCAL_IMAGE = "localhost/chatmon:latest"  # compose: the one `make image` builds
WORKER_PORT = Settings().worker_web_port
# The variables chatmon reads: every Settings field, plus CHATMON_CONFIG (the --config option).
KNOWN_ENV = {f"CHATMON_{name.upper()}" for name in Settings.model_fields} | {"CHATMON_CONFIG"}


def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def manifests() -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") != "Kustomization":
                out[(doc["kind"], doc["metadata"]["name"])] = doc
    return out


def chatmon_services() -> dict[str, dict[str, Any]]:
    return {n: s for n, s in compose()["services"].items() if n.startswith("chatmon-")}


def test_compose_has_the_stack() -> None:
    services = compose()["services"]
    assert {"broker", "postgres", "prometheus", "alertmanager", "grafana"} <= set(services)
    # Every service but the optional Grafana runs an image built here, from deploy/.
    for name, svc in services.items():
        if name == "grafana":
            assert svc["profiles"] == ["grafana"]
            continue
        assert svc["image"].startswith("localhost/chatmon"), name
    for svc in services.values():
        if "build" in svc:
            assert (DEPLOY / svc["build"]["context"] / svc["build"]["dockerfile"]).is_file()
    assert services["broker"]["environment"]["ADVERTISED_LISTENER_URL"] == "tcp://broker:9092"
    workers = [n for n, s in services.items() if s.get("command", [None])[0] == "worker"]
    assert len(workers) >= 2


def test_images_are_the_one_chatmon_image_of_this_version() -> None:
    assert {s["image"] for s in chatmon_services().values()} == {LOCAL_IMAGE}
    assert {c["image"] for doc in manifests().values()
            for c in _pod(doc).get("containers", [])} == {IMAGE}
    builders = [s for s in chatmon_services().values() if "build" in s]
    assert len(builders) == 1 and builders[0]["build"]["dockerfile"] == "deploy/Dockerfile"
    assert (DEPLOY / builders[0]["build"]["context"] / "pyproject.toml").is_file()


def _pod(doc: dict[str, Any]) -> dict[str, Any]:
    return doc.get("spec", {}).get("template", {}).get("spec", {})


def _env_names() -> list[str]:
    names = []
    for svc in chatmon_services().values():
        names += list(svc.get("environment", {}))
    for (kind, _), doc in manifests().items():
        if kind in ("ConfigMap", "Secret"):
            names += list(doc.get("data", {})) + list(doc.get("stringData", {}))
        for c in _pod(doc).get("containers", []):
            names += [e["name"] for e in c.get("env", [])]
    names += re.findall(r"\b(CHATMON_[A-Z_]+)=", (DEPLOY / "Dockerfile").read_text())
    return names


def test_every_chatmon_variable_is_one_the_code_reads() -> None:
    names = _env_names()
    assert {"CHATMON_KAFKA_BOOTSTRAP", "CHATMON_DATABASE_URL"} <= set(names)
    unknown = sorted({n for n in names if n.startswith("CHATMON_")} - KNOWN_ENV)
    assert unknown == []


def test_database_url_comes_from_a_secret_in_kubernetes() -> None:
    docs = manifests()
    assert "CHATMON_DATABASE_URL" not in docs[("ConfigMap", "chatmon-config")]["data"]
    assert "CHATMON_DATABASE_URL" in docs[("Secret", "chatmon-db")]["stringData"]
    for doc in docs.values():
        for c in _pod(doc).get("containers", []):
            for ref in c.get("envFrom", []):
                kind = "ConfigMap" if "configMapRef" in ref else "Secret"
                name = (ref.get("configMapRef") or ref.get("secretRef"))["name"]
                assert (kind, name) in docs, f"{c['name']} refers to a missing {kind} {name}"


def test_worker_deployment_ports_probes_and_resources() -> None:
    docs = manifests()
    dep = docs[("Deployment", "chatmon-worker")]
    (c,) = _pod(dep)["containers"]
    assert c["args"][0] == "worker"
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports["http"] == WORKER_PORT
    assert int(docs[("ConfigMap", "chatmon-config")]["data"]["CHATMON_WORKER_WEB_PORT"]) \
        == WORKER_PORT
    probes = {k: c[k]["httpGet"] for k in ("startupProbe", "livenessProbe", "readinessProbe")}
    assert {p["port"] for p in probes.values()} == {"http"}
    assert probes["livenessProbe"]["path"] == HEALTH_PATH
    assert probes["readinessProbe"]["path"] == READY_PATH
    annotations = dep["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/path"] == METRICS_PATH
    assert int(annotations["prometheus.io/port"]) == WORKER_PORT
    for key in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(c["resources"][key])
    assert _pod(dep)["securityContext"]["runAsNonRoot"] is True
    service = docs[("Service", "chatmon-worker")]
    assert service["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"]


def test_hpa_targets_the_workers_and_never_exceeds_the_partitions() -> None:
    docs = manifests()
    hpa = docs[("HorizontalPodAutoscaler", "chatmon-worker")]
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) in docs
    partitions = int(docs[("ConfigMap", "chatmon-config")]["data"]["CHATMON_KAFKA_PARTITIONS"])
    assert hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"] <= partitions
    metric_names = {m["external"]["metric"]["name"] for m in hpa["spec"]["metrics"]
                    if m["type"] == "External"}
    assert metric_names <= set(ALL_METRICS) and metric_names
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == sorted(
        p.name for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")


def test_dockerfile_warms_the_models_and_runs_as_non_root() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    assert "RUN HOME=/opt/chatmon/home chatmon models warm" in text
    assert "HOME=/opt/chatmon/home" in text.split("AS runtime")[1]  # where the exports are
    users = re.findall(r"^USER\s+(\S+)", text, re.M)
    assert users and users[-1] not in ("root", "0")
    assert f"EXPOSE {WORKER_PORT}" in text
    assert f"CHATMON_WORKER_WEB_PORT={WORKER_PORT}" in text
    assert HEALTH_PATH in (DEPLOY / "healthcheck.py").read_text()
    assert 'ENTRYPOINT ["tini", "--", "chatmon"]' in text
    assert "HF_HUB_OFFLINE=1" in text
    for copied in re.findall(r"^COPY (?!--from)(.+) \S+$", text, re.M):
        for path in copied.split():
            assert (DEPLOY.parent / path).exists(), path


def _commands() -> list[list[str]]:
    cmds = [s["command"] for s in chatmon_services().values()]
    cmds += [c["args"] for doc in manifests().values() for c in _pod(doc).get("containers", [])]
    cmd = re.search(r'^CMD (\[.*\])', (DEPLOY / "Dockerfile").read_text(), re.M)
    assert cmd is not None
    return [*cmds, json.loads(cmd.group(1))]


def test_every_chatmon_command_used_exists() -> None:
    ctx = click.Context(cli)
    for argv in _commands():
        group: click.Command = cli
        for word in argv:
            if word.startswith("-") or not isinstance(group, click.Group):
                break
            sub = group.get_command(ctx, word)
            assert sub is not None, f"chatmon has no command {' '.join(argv)}"
            group = sub
        opts = {o for p in group.params for o in getattr(p, "opts", [])}
        assert {w for w in argv if w.startswith("--")} <= opts, argv


def test_models_fetch_used_at_build_time_is_a_chatmon_command() -> None:
    models = cli.get_command(click.Context(cli), "models")
    if models is None:
        pytest.skip("`chatmon models` is not registered yet (pipeline/models_fetch.py)")
    assert isinstance(models, click.Group) and "fetch" in models.commands


def test_prometheus_scrapes_the_compose_services_on_their_ports() -> None:
    services = compose()["services"]
    prom = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    worker_targets = [t for job in prom["scrape_configs"] if job["job_name"] == "chatmon-worker"
                      for sc in job["static_configs"] for t in sc["targets"]]
    assert worker_targets
    for target in worker_targets:
        host, port = target.split(":")
        assert host in services and services[host]["command"][0] == "worker"
        assert int(port) == WORKER_PORT
    for am in prom["alerting"]["alertmanagers"]:
        for target in am["static_configs"][0]["targets"]:
            host, port = target.split(":")
            assert host in services
            assert any(p.endswith(f":{port}") for p in services[host]["ports"])
    for rule_file in prom["rule_files"]:
        assert (DEPLOY / "prometheus" / rule_file).is_file()


def _mounts(service: str) -> dict[str, Path]:
    out = {}
    for vol in compose()["services"][service]["volumes"]:
        host, container = vol.split(":")[:2]
        out[container] = (DEPLOY / host).resolve()
    return out


def test_monitoring_containers_mount_files_that_exist() -> None:
    services = compose()["services"]
    prom = _mounts("prometheus")["/etc/prometheus"]
    assert "--config.file=/etc/prometheus/prometheus.yml" in services["prometheus"]["command"]
    assert (prom / "prometheus.yml").is_file()
    am = _mounts("alertmanager")["/etc/alertmanager"]
    assert (am / "alertmanager.yml").is_file()
    grafana = _mounts("grafana")
    provisioning = grafana["/etc/grafana/provisioning"]
    sources = yaml.safe_load((provisioning / "datasources" / "chatmon.yml").read_text())
    uids = {s["uid"] for s in sources["datasources"]}
    providers = yaml.safe_load((provisioning / "dashboards" / "chatmon.yml").read_text())
    (provider,) = providers["providers"]
    dashboards = grafana[provider["options"]["path"]]
    files = list(dashboards.glob("*.json"))
    assert files
    for path in files:
        _check_dashboard(json.loads(path.read_text()), uids)


def _check_dashboard(dash: dict[str, Any], uids: set[str]) -> None:
    for panel in dash["panels"]:
        assert panel["datasource"]["uid"] in uids
        for target in panel["targets"]:
            expr = target.get("expr")
            if expr:
                used = set(re.findall(r"\b(chatmon_[a-z_]+?)(?:_bucket|_sum|_count)?\b", expr))
                assert used and used <= set(ALL_METRICS), expr
