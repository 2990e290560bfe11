"""GreenWorkload: one generic workload, placed by its Placement, provisioned by a ConfigGroup when due."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from greenops import endpoints
from greenops.models import Workload
from greenops.provider.placement import Placement
from greenops.renderers import RenderSettings

# pulumi-kubernetes deletes in the foreground unless told otherwise: a retired object is then gone
# only once the cluster's garbage collector lifts a finalizer, so a lagging or missing collector
# holds every reconcile (with one running, the cost per delete is the same either way). The VM's
# objects own nothing, so deleting in the background loses nothing; an operator's own finalizer
# (the cloud VM going away) still holds the object until it is done.
DELETION_POLICY = {"pulumi.com/deletionPropagationPolicy": "background"}


def yaml_documents(objects: list[dict] | None) -> str:
    """The objects as one YAML stream (each document in JSON, which is YAML and quick to write),
    marked for background deletion. Handed to the ConfigGroup as one string rather than as ``objs``:
    the SDK would otherwise make an Output of every nested value of every manifest (see
    greenops.outputs)."""
    return "\n---\n".join(json.dumps(_deleted_in_background(o)) for o in objects or [])


def _deleted_in_background(obj: dict) -> dict:
    metadata = obj.get("metadata") or {}
    return {**obj, "metadata": {**metadata, "annotations": {**(metadata.get("annotations") or {}), **DELETION_POLICY}}}


@dataclass
class Endpoints:
    opa_url: str
    scheduler_url: str
    timeout_seconds: float = endpoints.TIMEOUT_SECONDS
    attempts: int = endpoints.ATTEMPTS
    opa_token: pulumi.Input[str] | None = None
    scheduler_token: pulumi.Input[str] | None = None
    lead_seconds: float = 300.0  # open the time gate this long before the start (provisioning time)
    # Placement reads back the operators' verdict on the VM (cluster mode with readiness "operator",
    # with this kubeconfig or the ambient one); otherwise a run counts from when it is applied.
    watch_operators: bool = False
    kubeconfig: pulumi.Input[str] | None = None
    kube_context: str | None = None
    ca_certificate: str | None = None  # the platform's CA, trusted for OPA and the scheduler


@dataclass
class GreenWorkloadArgs:
    workload: Workload
    endpoints: Endpoints
    render: RenderSettings = field(default_factory=RenderSettings)


class GreenWorkload(pulumi.ComponentResource):
    """The Placement decision plus the provider-specific objects (ASO, Config Connector or ACK).

    The objects exist only while the workload's recorded lifecycle is Provisioning or Running:
    they appear when the time gate opens and are deleted when the run has completed, has failed,
    or the workload is removed.
    """

    decision: pulumi.Output[dict]
    phase: pulumi.Output[str]
    lifecycle: pulumi.Output[dict]
    next_change_at: pulumi.Output[str | None]

    def __init__(self, name: str, args: GreenWorkloadArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("greenops:index:GreenWorkload", name, None, opts)
        e = args.endpoints
        props = {
            "workload": args.workload.spec(),
            "opaUrl": e.opa_url,
            "schedulerUrl": e.scheduler_url,
            "timeoutSeconds": e.timeout_seconds,
            "attempts": e.attempts,
            "render": args.render.model_dump(mode="json", by_alias=True),
            "opaToken": e.opa_token,
            "schedulerToken": e.scheduler_token,
            "leadSeconds": e.lead_seconds,
            "watchOperators": e.watch_operators,
            "kubeconfig": e.kubeconfig,
            "kubeContext": e.kube_context,
            "caCertificate": e.ca_certificate,
            "stack": pulumi.get_stack(),  # the reservation's key is stack/workload/spec
        }
        self.vm = Placement(f"{name}-placement", props, pulumi.ResourceOptions(parent=self))
        self.objects = k8s.yaml.v2.ConfigGroup(
            f"{name}-vm",
            yaml=self.vm.manifests.apply(yaml_documents),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.vm]),
        )
        self.decision = self.vm.decision
        self.phase = self.vm.phase
        self.lifecycle = self.vm.lifecycle
        self.next_change_at = self.vm.nextChangeAt
        self.register_outputs(
            {
                "decision": self.decision,
                "phase": self.phase,
                "lifecycle": self.lifecycle,
                "nextChangeAt": self.next_change_at,
            }
        )
