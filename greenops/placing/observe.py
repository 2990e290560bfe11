"""Read a workload's objects back from the cluster and say what their operator reports.

Placement asks this while the objects exist (Provisioning, Running): the VM object's readiness
moves the lifecycle to Running, a terminal condition on any object or an object deleted by hand
ends it as Failed. The per-provider condition rules live with the renderers
(``greenops/renderers/providers``), beside the objects they describe.
"""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import datetime
from typing import Any

from greenops.catalog import load_catalog
from greenops.common.clock import parse_time
from greenops.common.errors import GreenOpsError, one_line
from greenops.common.user_yaml import load_yaml_text
from greenops.renderers import object_state, vm_kind

from .lifecycle import Observation


class ClusterUnavailable(GreenOpsError):
    """The objects could not be read back; the message names the workload and the cause."""


class ClusterObserver:
    """Reads objects with the stack's kubeconfig (the secret ``greenops:kubeconfig``), or, like the
    Kubernetes provider, with the pod's service account inside a cluster (the Pulumi Kubernetes
    Operator's workspace) or ``$KUBECONFIG`` / ``~/.kube/config`` when the stack sets none."""

    def __init__(self, kubeconfig: str | None, context: str | None = None):
        from kubernetes import client, config

        try:
            if kubeconfig:
                document = load_yaml_text(kubeconfig, "greenops:kubeconfig")
                self._client = config.new_client_from_config_dict(document, context=context)
            elif os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
                in_cluster = client.Configuration()
                config.load_incluster_config(client_configuration=in_cluster)
                self._client = client.ApiClient(in_cluster)
            else:
                self._client = config.new_client_from_config(context=context)
        except Exception as exc:  # a malformed or absent kubeconfig: say so, no traceback
            raise ClusterUnavailable(
                f"cannot use the kubeconfig to read the operators' verdict: {one_line(str(exc))}"
            ) from None

    def close(self) -> None:
        self._client.close()

    def _get(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        from kubernetes import client

        group, version = obj["apiVersion"].split("/")
        plural = load_catalog().crd_kinds[(group, obj["kind"])].plural
        meta = obj["metadata"]
        try:
            found: dict[str, Any] = client.CustomObjectsApi(self._client).get_namespaced_custom_object(
                group, version, meta["namespace"], plural, meta["name"]
            )
            return found
        except client.ApiException as exc:
            if exc.status == 404:
                return None
            raise ClusterUnavailable(
                f"{obj['kind']} {meta['namespace']}/{meta['name']}: the API server answered {exc.status} {exc.reason}"
            ) from None

    def observe(self, workload: str, provider: str, manifests: list[dict[str, Any]]) -> Observation:
        """The operator's verdict on ``manifests`` (what Placement applied for ``workload``)."""
        try:
            live = [(m, self._get(m)) for m in manifests]
        except ClusterUnavailable as exc:
            raise ClusterUnavailable(f"workload {workload!r}: cannot read its objects back: {exc}") from None
        except Exception as exc:  # connection refused, TLS, timeouts: name them, never a traceback
            raise ClusterUnavailable(
                f"workload {workload!r}: cannot read its objects back from the cluster: {type(exc).__name__}: {exc}"
            ) from None
        missing = tuple(f"{m['kind']} {m['metadata']['name']}" for m, got in live if got is None)
        seen = verdict(provider, [got for _, got in live if got is not None], missing)
        drift = tuple(d for m, got in live if got is not None for d in drift_of(m, got))
        return replace(seen, drift=drift) if drift else seen


def verdict(provider: str, found: list[dict[str, Any]], missing: tuple[str, ...] = ()) -> Observation:
    """The operator's verdict on the objects ``found`` of one workload: a terminal condition on any
    of them, and the VM object's readiness. Placement reads back what it applied; the cluster path's
    controller what Krateo rendered."""
    failure = next(
        (
            f"{o['kind']} {o['metadata']['name']}: {s.failure}"
            for o in found
            for s in [object_state(provider, o)]
            if s.failure
        ),
        None,
    )
    reported = {f"{o['kind']}/{o['metadata']['name']}": o.get("status") or {} for o in found}
    vm = next((o for o in found if o["kind"] == vm_kind(provider)), None)
    if vm is None:
        return Observation(ready=False, failure=failure, missing=missing, reported=reported)
    state = object_state(provider, vm)
    return Observation(
        rendered=True,
        stopped=state.stopped,
        ready=state.ready,
        ready_since=_time(state.since),
        failure=failure,
        missing=missing,
        detail=f"{vm['kind']} {vm['metadata']['name']}: {state.detail}" if state.detail else "",
        reported=reported,
    )


# Paths whose values are never shown in a drift message: they carry the run's script or credentials.
_HIDDEN = ("userdata", "customdata", "user-data", "password", "secret", "token", "key")
_SHOWN_CHARS = 64


def drift_of(declared: dict[str, Any], live: dict[str, Any]) -> list[str]:
    """What the cluster holds of ``declared`` that differs from it: each declared leaf of its spec and
    of its labels whose live value is another (a field only the cluster set is not drift: operators
    and defaulting add them). Each as ``Kind name: path is <live>, declared <declared>``."""
    found: list[str] = []
    name = f"{declared['kind']} {declared['metadata']['name']}"

    def walk(want: Any, got: Any, path: str) -> None:
        if isinstance(want, dict):
            if not isinstance(got, dict):
                found.append(f"{name}: {path} is {_shown(path, got)}, declared {_shown(path, want)}")
                return
            for k, v in want.items():
                walk(v, got.get(k), f"{path}.{k}")
        elif isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
            for i, (w, g) in enumerate(zip(want, got, strict=True)):
                walk(w, g, f"{path}[{i}]")
        elif want != got:
            found.append(f"{name}: {path} is {_shown(path, got)}, declared {_shown(path, want)}")

    walk(declared.get("spec") or {}, live.get("spec") or {}, "spec")
    walk(
        (declared.get("metadata") or {}).get("labels") or {},
        (live.get("metadata") or {}).get("labels") or {},
        "metadata.labels",
    )
    return found


def _shown(path: str, value: Any) -> str:
    if value is None:
        return "absent"
    text = repr(value)
    if any(word in path.lower() for word in _HIDDEN) or len(text) > _SHOWN_CHARS:
        return "another value (not shown)"
    return text


def _time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return parse_time(text)
    except ValueError:
        return None
