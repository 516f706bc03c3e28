"""deploy/k8s as a cluster would take it: every Kubernetes object valid against the Kubernetes
API's JSON schemas (``kubernetes-validate``, strict: an unknown field is an error), every KEDA
``ScaledObject`` against KEDA's CRD (the pydantic models ``cloudcoil-models-keda`` generates
from it; a field the CRD does not know is refused here), and the parts that must agree: a
pool's Deployment, its ScaledObject and the metric it scales on, GPUs and TP groups, graceful
termination and the chunk budget, the settings in the ConfigMap."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import fakeredis
import kubernetes_validate
import pytest
import yaml
from cloudcoil.models.keda.v1alpha1 import ScaledObject
from pydantic import ValidationError

from mtfleet.api import metrics
from mtfleet.core.registry import Registry, WorkerInfo
from mtfleet.core.settings import Settings
from mtfleet.workers.gpus import gpu_groups, parse_gpus

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
#: The Kubernetes version the manifests are checked against (the oldest one still supported).
KUBERNETES = "1.32.0"
#: The metadata KEDA's Prometheus scaler reads (its docs; the CRD leaves trigger metadata free).
PROMETHEUS_METADATA = {
    "serverAddress", "query", "threshold", "activationThreshold", "ignoreNullValues",
    "namespace", "customHeaders", "queryParameters", "unsafeSsl", "timeout",
}  # fmt: skip


def documents() -> list[dict[str, Any]]:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    return [
        doc
        for name in kustomization["resources"]
        for doc in yaml.safe_load_all((K8S / name).read_text())
        if doc
    ]


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [d for d in documents() if d["kind"] == kind]


def known_keys(given: Any, kept: Any, where: str = "") -> list[str]:
    """Keys of ``given`` that did not survive the model's round trip (unknown to the CRD)."""
    if isinstance(given, dict):
        lost = [f"{where}.{k}" for k in given if not isinstance(kept, dict) or k not in kept]
        for k, v in given.items():
            if isinstance(kept, dict) and k in kept:
                lost += known_keys(v, kept[k], f"{where}.{k}")
        return lost
    if isinstance(given, list) and isinstance(kept, list):
        return [x for g, k in zip(given, kept, strict=True) for x in known_keys(g, k, where)]
    return []


def keda_problems(doc: dict[str, Any]) -> list[str]:
    model = ScaledObject.model_validate(doc)
    kept = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    return known_keys(doc, kept)


def test_kustomization_lists_every_manifest_in_the_folder() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    files = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == files
    assert kustomization["namespace"] == "mtfleet"


@pytest.mark.parametrize("doc", [d for d in documents() if d["kind"] != "ScaledObject"],
                         ids=lambda d: f"{d['kind']}/{d['metadata']['name']}")  # fmt: skip
def test_kubernetes_objects_are_valid_against_the_api_schema(doc: dict[str, Any]) -> None:
    kubernetes_validate.validate(doc, KUBERNETES, strict=True)


def test_the_schemas_catch_what_they_should() -> None:
    """The validators are not lenient: a misspelt field fails both, a wrong type fails KEDA's."""
    api = next(d for d in of_kind("Deployment") if d["metadata"]["name"] == "mtfleet-api")
    container = api["spec"]["template"]["spec"]["containers"][0]
    container["imagePullPolicyy"] = "Always"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(api, KUBERNETES, strict=True)
    scaled = of_kind("ScaledObject")[0]
    assert keda_problems(scaled) == []
    assert keda_problems({**scaled, "spec": {**scaled["spec"], "cooldownPeriods": 5}}) == [
        ".spec.cooldownPeriods"
    ]
    with pytest.raises(ValidationError):
        ScaledObject.model_validate({**scaled, "spec": {**scaled["spec"], "minReplicaCount": "x"}})


@pytest.mark.parametrize("doc", of_kind("ScaledObject"), ids=lambda d: d["metadata"]["name"])
def test_scaled_objects_are_valid_against_kedas_crd(doc: dict[str, Any]) -> None:
    assert doc["apiVersion"] == "keda.sh/v1alpha1"
    assert keda_problems(doc) == []
    for trigger in doc["spec"]["triggers"]:
        assert trigger["type"] == "prometheus"
        assert set(trigger["metadata"]) <= PROMETHEUS_METADATA, trigger["metadata"]
        assert set(trigger["metadata"]) >= {"serverAddress", "query", "threshold"}
        assert all(isinstance(v, str) for v in trigger["metadata"].values())  # a string map


def command_option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def fleet_metric_names() -> set[str]:
    """What the API's /metrics exports about the fleet (the collector over a Redis that knows
    one pool)."""
    r = fakeredis.FakeRedis(decode_responses=True)
    info = WorkerInfo(name="gpu0@h", instance="h.1.a", engine="vllm", model="m",
                      fingerprint="f", pairs=[("en", "es")], lanes=["bulk"], pool="p")  # fmt: skip
    Registry(r).beat(info, ttl_s=60)
    collector = metrics.FleetCollector()
    collector.r = r
    return {family.name for family in collector.collect()}


def test_each_gpu_pool_has_a_scaled_object_on_its_own_depth() -> None:
    config = of_kind("ConfigMap")[0]["data"]
    settings = Settings(**{k[3:].lower(): v for k, v in config.items() if k.startswith("MT_")})
    # a chunk's lease budget (docs/reliability.md)
    budget_s = settings.worker.visibility_timeout_s / 2
    exported = fleet_metric_names()
    assert "mt_lane_depth" in exported
    workers = [d for d in of_kind("Deployment") if "mtfleet.pool" in d["metadata"]["labels"]]
    scaled = {d["spec"]["scaleTargetRef"]["name"]: d for d in of_kind("ScaledObject")}
    assert len(workers) >= 2
    assert {w["metadata"]["name"] for w in workers} == set(scaled)
    for deployment in workers:
        pool = deployment["metadata"]["labels"]["mtfleet.pool"]
        pod = deployment["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        command = container["command"]
        assert command[:2] == ["mtfleet", "worker"]
        assert command_option(command, "--pool") == pool
        # one pod is one GPU group: its GPUs, numbered from 0 inside the pod, make exactly one
        # tensor-parallel group, and the pod asks the device plugin for that many
        gpus = parse_gpus(command_option(command, "--gpus"))
        groups = gpu_groups(gpus, int(command_option(command, "--tp")))
        assert len(groups) == 1 and gpus == list(range(len(gpus))), shlex.join(command)
        for need in ("requests", "limits"):
            assert container["resources"][need]["nvidia.com/gpu"] == len(gpus)
        assert pod["terminationGracePeriodSeconds"] > budget_s, pool
        # its ScaledObject reads the pool's depth (queued + held), never the queue alone
        so = scaled[deployment["metadata"]["name"]]
        queries = [t["metadata"]["query"] for t in so["spec"]["triggers"]]
        assert f'mt_lane_depth{{pool="{pool}"}}' in queries[0], queries
        for query in queries:
            assert f'pool="{pool}"' in query
            assert "mt_queue_depth" not in query
            names = {w for w in query.replace("{", " ").replace("(", " ").split() if "mt_" in w}
            assert names <= exported, names
        assert so["spec"]["maxReplicaCount"] >= so["spec"].get("minReplicaCount", 0)
    nightly = scaled["mtfleet-pool-nightly"]["spec"]
    assert nightly["minReplicaCount"] == 0  # an overnight pool scales to zero
    assert nightly["triggers"][0]["metadata"]["activationThreshold"] == "0"
    assert nightly["cooldownPeriod"] >= 300


def test_the_api_pods_are_scraped_on_their_metrics_port() -> None:
    """Prometheus reads each API pod on its metrics port (no key: the public port's /metrics
    wants an operator's), which the Service, the API's public face, does not expose."""
    (api,) = [d for d in of_kind("Deployment") if d["metadata"]["name"] == "mtfleet-api"]
    pod = api["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    port = int(env["MT_API_METRICS_PORT"])
    assert env["MT_API_METRICS_HOST"] == "0.0.0.0"  # the scraper is another pod
    Settings(api_metrics_port=port, api_metrics_host=env["MT_API_METRICS_HOST"])  # valid
    annotations = pod["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == str(port)
    assert annotations["prometheus.io/path"] == "/metrics"
    declared = {p["containerPort"]: p.get("name") for p in container["ports"]}
    assert declared[port] == "metrics"
    assert "--workers" not in container["command"]  # one process: one metrics port
    (service,) = [d for d in of_kind("Service") if d["metadata"]["name"] == "mtfleet-api"]
    exposed = {p.get("targetPort") for p in service["spec"]["ports"]}
    assert exposed == {"http"} and not exposed & {port, "metrics"}
