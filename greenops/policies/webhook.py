"""The MutatingWebhookConfiguration that sends VmTemplate admissions to OPA (system.main), and
the API server's admission configuration that gives it the webhook's credential.

One definition for the platform (components/policy_engine.py, OPA behind its Service) and the
local control plane (greenops/local/webhook.py, OPA on loopback by URL).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

VMTEMPLATE_GROUP = "composition.krateo.io"
VMTEMPLATE_VERSION = "v1-0-0"  # Krateo names the generated API version after the chart version (1.0.0)
VMTEMPLATE_RESOURCE = "vmtemplates"
# The Namespace label naming the tenant of the VmTemplates in it (read by rego/tenancy.rego from
# kube-mgmt's copy of the namespaces).
TENANT_LABEL = "greenops.io/tenant"
CONFIGURATION_NAME = "greenops-vmtemplate-placement"


def webhook_configuration(
    client_config: dict[str, Any], ca_bundle: Any, timeout_seconds: int = 10, exclude_namespaces: Sequence[str] = ()
) -> dict[str, Any]:
    """The configuration as a manifest. ``client_config`` is ``{"url": ...}`` or ``{"service": ...}``;
    ``ca_bundle`` the base64 PEM of OPA's CA (a plain string, or a Pulumi Output).

    One webhook, for CREATE and UPDATE, failing closed: nothing unplaced gets in when OPA is
    unreachable. DELETE is not sent: a review is no proof that the object is gone, so the cluster
    path's controller releases a reservation when it observes the deletion on the API server.
    ``sideEffects: NoneOnDryRun``: the policy books nothing for a dry run (request.dryRun), so the
    API server may send dry runs to it.
    """

    def hook(name: str, operations: list[str], failure_policy: str) -> dict[str, Any]:
        return {
            "name": name,
            "clientConfig": {**client_config, "caBundle": ca_bundle},
            "rules": [
                {
                    "apiGroups": [VMTEMPLATE_GROUP],
                    "apiVersions": ["*"],
                    "operations": operations,
                    "resources": [VMTEMPLATE_RESOURCE],
                    "scope": "Namespaced",
                }
            ],
            "failurePolicy": failure_policy,
            "sideEffects": "NoneOnDryRun",
            "timeoutSeconds": timeout_seconds,
            "admissionReviewVersions": ["v1"],
            "reinvocationPolicy": "Never",
            **(
                {
                    "namespaceSelector": {
                        "matchExpressions": [
                            {
                                "key": "kubernetes.io/metadata.name",
                                "operator": "NotIn",
                                "values": list(exclude_namespaces),
                            }
                        ]
                    }
                }
                if exclude_namespaces
                else {}
            ),
        }

    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": CONFIGURATION_NAME},
        "webhooks": [
            hook("placement.vmtemplate.greenops.io", ["CREATE", "UPDATE"], "Fail"),
        ],
    }


def webhook_kubeconfig(tokens: dict[str, str]) -> dict[str, Any]:
    """The kubeconfig the API server reads its webhook credentials from: a user per webhook, named
    by the webhook's "host:port" (the API server's lookup), holding the token it presents there."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "users": [{"name": address, "user": {"token": token}} for address, token in sorted(tokens.items())],
    }


def admission_configuration(kubeconfig: str) -> dict[str, Any]:
    """The API server's --admission-control-config-file: both webhook plugins read ``kubeconfig``."""
    webhook = {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "WebhookAdmissionConfiguration",
        "kubeConfigFile": kubeconfig,
    }
    return {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "AdmissionConfiguration",
        "plugins": [
            {"name": "MutatingAdmissionWebhook", "configuration": webhook},
            {"name": "ValidatingAdmissionWebhook", "configuration": webhook},
        ],
    }
