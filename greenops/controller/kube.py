"""The controller's Kubernetes client: a kubeconfig file when given (local control planes, tests),
otherwise the pod's own ServiceAccount (the loader re-reads the projected token as it rotates)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenops.common.errors import GreenOpsError, one_line

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


class KubeUnavailable(GreenOpsError):
    """No usable credentials for the API server; the message says which and why."""


def api_client(kubeconfig: str | None) -> ApiClient:
    from kubernetes import client, config

    try:
        if kubeconfig:
            return config.new_client_from_config(config_file=kubeconfig)
        in_cluster = client.Configuration()
        config.load_incluster_config(client_configuration=in_cluster)
        return client.ApiClient(in_cluster)
    except Exception as exc:  # a malformed or absent kubeconfig, or not in a pod: say so
        where = kubeconfig or "the pod's ServiceAccount"
        raise KubeUnavailable(f"cannot reach the API server with {where}: {one_line(str(exc))}") from None
