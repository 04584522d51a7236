"""deploy/k8s/ validated offline against the Kubernetes API's OpenAPI schemas (the
kubernetes-validate package ships them), strictly (an unknown field is an error), for the oldest
and newest Kubernetes versions it knows; and the worker's pod spec checked against what the image
really declares (user, ports, read-only root file system)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.containers import ROOT, Runtime

kubernetes_validate = pytest.importorskip("kubernetes_validate")

K8S = ROOT / "deploy" / "k8s"
# The oldest schema set kubernetes-validate ships, and its newest.
VERSIONS = ("1.25.0", kubernetes_validate.latest_version())


def _resources() -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc["kind"] != "Kustomization":  # kustomize's file, not an API object
                out.append((path, doc))
    return out


def _deployment() -> dict[str, Any]:
    return next(d for _, d in _resources() if d["kind"] == "Deployment")


@pytest.mark.parametrize("version", VERSIONS)
def test_every_manifest_validates_strictly_against_the_api_schemas(version: str) -> None:
    resources = _resources()
    assert {d["kind"] for _, d in resources} >= {"Deployment", "Service", "ConfigMap", "Secret",
                                                 "Job", "HorizontalPodAutoscaler"}
    for path, doc in resources:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            raise AssertionError(f"{path.name}: {exc}") from exc


def test_the_validator_rejects_what_a_cluster_would() -> None:
    """The check is not vacuous: a mistyped field and a wrong type are both refused."""
    typo = copy.deepcopy(_deployment())
    typo["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {}
    wrong = copy.deepcopy(_deployment())
    wrong["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "6066"
    for doc in (typo, wrong):
        with pytest.raises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(doc, VERSIONS[-1], strict=True)


@pytest.mark.container
def test_worker_pod_matches_what_the_image_declares(image: str, runtime: Runtime) -> None:
    config = runtime.inspect(image)["Config"]
    pod = _deployment()["spec"]["template"]["spec"]
    (worker,) = pod["containers"]
    assert worker["image"].split(":")[0].rsplit("/", 1)[-1] == "chatmon"
    exposed = {int(p.split("/")[0]) for p in config["ExposedPorts"]}
    assert {p["containerPort"] for p in worker["ports"]} <= exposed
    assert str(pod["securityContext"]["runAsUser"]) == config["User"]
    # The image needs no writable root: the manifest says so, and gives /tmp an emptyDir.
    assert worker["securityContext"]["readOnlyRootFilesystem"] is True
    mounts = {m["mountPath"]: m["name"] for m in worker.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    assert "emptyDir" in volumes[mounts["/tmp"]]
    # The image's own HEALTHCHECK probes the port the manifest's probes use.
    env = dict(e.split("=", 1) for e in config["Env"])
    assert int(env["CHATMON_WORKER_WEB_PORT"]) == worker["ports"][0]["containerPort"]
