"""The Prometheus Operator's monitors as a real Prometheus scrapes them, for the node's suite.

The operator cannot run here (its Prometheus runs in pods from quay.io's images), so what it would
generate from each ServiceMonitor and PodMonitor is made here from the objects the stack installed,
read back from the API server: one job per endpoint that discovers its targets through the API
server (kubernetes_sd: EndpointSlices for a ServiceMonitor, pods for a PodMonitor), keeps those the
monitor's selector and port name select, applies its relabelings, and presents the credentials and
CA it names, read from the Secrets and ConfigMaps it names. So a monitor that selects nothing, names
a port no pod has, or a credential the target refuses shows as a target missing or down."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import httpx

API = "/apis/monitoring.coreos.com/v1"
PLURALS = {"ServiceMonitor": "servicemonitors", "PodMonitor": "podmonitors"}


def _label(name: str) -> str:
    """A Kubernetes label's name as Prometheus's discovery meta label spells it."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def _keep(meta: str, labels: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {
            "source_labels": [f"{meta}_label_{_label(k)}", f"{meta}_labelpresent_{_label(k)}"],
            "regex": f"({re.escape(v)});true",
            "action": "keep",
        }
        for k, v in sorted(labels.items())
    ]


def _relabelings(endpoint: dict[str, Any]) -> list[dict[str, Any]]:
    spelled = {"targetLabel": "target_label", "sourceLabels": "source_labels"}
    return [{spelled.get(k, k): v for k, v in r.items()} for r in endpoint.get("relabelings", [])]


class Resolver:
    """Reads the Secrets and ConfigMaps a monitor names, writing each value to a file in ``workdir``
    as the operator mounts them into Prometheus."""

    def __init__(self, k: httpx.Client, workdir: Path) -> None:
        self.k, self.workdir = k, workdir
        workdir.mkdir(parents=True, exist_ok=True)

    def _file(self, kind: str, namespace: str, name: str, key: str) -> str:
        got = self.k.get(f"/api/v1/namespaces/{namespace}/{kind}/{name}")
        assert got.status_code == 200, f"{kind} {namespace}/{name} named by a monitor: {got.status_code}"
        data = got.json().get("data") or {}
        assert key in data, f"{kind} {namespace}/{name} has no key {key!r}"
        value = base64.b64decode(data[key]) if kind == "secrets" else data[key].encode()
        path = self.workdir / f"{kind}-{namespace}-{name}-{key}"
        path.write_bytes(value)
        path.chmod(0o600)
        return str(path)

    def secret(self, namespace: str, ref: dict[str, str]) -> str:
        return self._file("secrets", namespace, ref["name"], ref["key"])

    def config_map(self, namespace: str, ref: dict[str, str]) -> str:
        return self._file("configmaps", namespace, ref["name"], ref["key"])


def scrape_jobs(k: httpx.Client, kind: str, namespace: str, name: str, server: str, token_file: str, workdir: Path):
    """The scrape configs of the monitor ``kind`` ``namespace``/``name`` as the operator would make
    them, discovering through the API server at ``server`` with the bearer token in ``token_file``."""
    got = k.get(f"{API}/namespaces/{namespace}/{PLURALS[kind]}/{name}")
    assert got.status_code == 200, f"{kind} {namespace}/{name}: {got.status_code} {got.text[:200]}"
    spec = got.json()["spec"]
    resolve = Resolver(k, workdir)
    service = kind == "ServiceMonitor"
    role, meta = ("endpointslice", "__meta_kubernetes_service") if service else ("pod", "__meta_kubernetes_pod")
    port_label = "__meta_kubernetes_endpointslice_port_name" if service else "__meta_kubernetes_pod_container_port_name"
    jobs = []
    for i, endpoint in enumerate(spec["endpoints" if service else "podMetricsEndpoints"]):
        relabel = _keep(meta, spec["selector"]["matchLabels"])
        relabel.append({"source_labels": [port_label], "regex": endpoint["port"], "action": "keep"})
        if not service:  # the operator drops pods that have ended
            relabel.append(
                {"source_labels": ["__meta_kubernetes_pod_phase"], "regex": "(Failed|Succeeded)", "action": "drop"}
            )
        job: dict[str, Any] = {
            "job_name": f"{'serviceMonitor' if service else 'podMonitor'}/{namespace}/{name}/{i}",
            "scheme": endpoint.get("scheme", "http"),
            "metrics_path": endpoint.get("path", "/metrics"),
            "scrape_interval": endpoint.get("interval", "30s"),
            "kubernetes_sd_configs": [
                {
                    "role": role,
                    "api_server": server,
                    "namespaces": {"names": [namespace]},
                    "authorization": {"type": "Bearer", "credentials_file": token_file},
                    "tls_config": {"insecure_skip_verify": True},  # the loopback API server's own certificate
                }
            ],
            "relabel_configs": relabel + _relabelings(endpoint),
        }
        if auth := endpoint.get("authorization"):
            job["authorization"] = {
                "type": auth["type"],
                "credentials_file": resolve.secret(namespace, auth["credentials"]),
            }
        if tls := endpoint.get("tlsConfig"):
            job["tls_config"] = {
                "server_name": tls["serverName"],
                "ca_file": resolve.config_map(namespace, tls["ca"]["configMap"]),
            }
        jobs.append(job)
    return jobs
