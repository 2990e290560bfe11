"""The MutatingWebhookConfiguration that sends VmTemplate admissions to OPA (system.main).

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

    Two webhooks on the same OPA, because a failure means opposite things for them:
    - placement (CREATE, UPDATE) fails closed: nothing unplaced gets in when OPA is unreachable;
    - release (DELETE) fails open: deleting a VmTemplate is never blocked, not even by an OPA
      outage. A release that did not happen leaves the booking until its window ends.
    Both declare ``sideEffects: NoneOnDryRun``: the policy books and releases nothing for a dry run
    (request.dryRun), so the API server may send dry runs to them.
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
            hook("release.vmtemplate.greenops.io", ["DELETE"], "Ignore"),
        ],
    }
