"""GreenWorkload: one generic workload, placed by its Placement, provisioned when due: by a
ConfigGroup of operator objects (operator mode), or as the cloud's own Pulumi resources (direct)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from greenops import direct
from greenops.common import endpoints
from greenops.common.clock import system_clock
from greenops.common.errors import GreenOpsError
from greenops.common.pulumi_outputs import gather
from greenops.direct.records import COMPONENT_TYPE, Verdict, verdict
from greenops.models import Provisioning, Workload
from greenops.placing.declared import MATERIALISED
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
    greenops.common.pulumi_outputs)."""
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
    completion_url: str | None = None  # the scheduler as the VMs reach it: a run reports its end there
    drift: str = "restore"  # an edit by hand of its objects: restore (re-apply as declared) or leave (record only)
    max_failovers: int = 3  # attempts elsewhere after a terminal error or a declared outage (placing.failover)


@dataclass
class DirectArgs:
    """Direct mode: the placement's record read before the pass (greenops.direct.records), the
    pass's instant, and where Azure workloads go."""

    record: pulumi.Input[dict[str, Any] | None] = None
    now: datetime = field(default_factory=system_clock)
    azure_existing_group: bool = False


@dataclass
class GreenWorkloadArgs:
    workload: Workload
    endpoints: Endpoints
    render: RenderSettings = field(default_factory=RenderSettings)
    provisioning: Provisioning = Provisioning.OPERATOR
    direct: DirectArgs = field(default_factory=DirectArgs)
    # Operator mode: whether this pass declares the VM's ConfigGroup (greenops.placing.declared);
    # an Output when it is read from the stack's own outputs of the previous pass.
    objects_declared: bool | None | pulumi.Output[bool | None] = True
    # Operator mode: what the objects wait for without depending on it (RenderModeCrds.known)
    objects_after: pulumi.Output[Any] | None = None
    # greenops:runSecrets (a secret): the values a run's env names by key; only those keys are passed on
    run_secrets: pulumi.Input[Any] | None = None


class GreenWorkload(pulumi.ComponentResource):
    """The Placement decision plus the provider-specific VM: ASO, Config Connector or ACK objects
    (operator mode), or pulumi-azure-native, pulumi-gcp or pulumi-aws resources (direct mode).

    The VM exists only while the workload's recorded lifecycle is Provisioning or Running: it appears
    when the time gate opens and is deleted when the run has completed, has failed, or the workload
    is removed. Both modes have the same Placement child, so a workload can change mode (while it
    is not running) without being placed again.
    """

    decision: pulumi.Output[dict]
    phase: pulumi.Output[str]
    lifecycle: pulumi.Output[dict]
    next_change_at: pulumi.Output[str | None]
    machine: pulumi.Output[dict[str, Any]]  # direct mode, while the VM exists: its resourceId and privateIp

    def __init__(self, name: str, args: GreenWorkloadArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(COMPONENT_TYPE, name, None, opts)
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
            "drift": e.drift,
            "maxFailovers": e.max_failovers,
            "stack": pulumi.get_stack(),  # the reservation's key is stack/workload/spec
        }
        if e.completion_url and args.workload.run is not None and args.provisioning is Provisioning.OPERATOR:
            props["completionUrl"] = e.completion_url  # its objects then carry a token: kept secret
        if args.workload.run is not None and args.workload.run.env:
            if args.provisioning is not Provisioning.OPERATOR:
                raise GreenOpsError(
                    f"workload {args.workload.name!r}: run.env is rendered in operator mode only; direct mode "
                    "would start the run without its secrets: drop run.env or provision it by operator"
                )
            props["runSecrets"] = pulumi.Output.secret(
                pulumi.Output.from_input(args.run_secrets).apply(lambda all_: _needed(args.workload, all_))
            )
        judged: pulumi.Output[Verdict] | None = None
        if args.provisioning is Provisioning.DIRECT:
            lead, now = timedelta(seconds=e.lead_seconds), args.direct.now
            # The record is known in a preview too (it was read before the pass), so is the verdict.
            judged = pulumi.Output.from_input(args.direct.record).apply(
                lambda record: verdict(args.workload, record, lead, now)
            )
            props["provisioning"] = Provisioning.DIRECT.value
            props["direct"] = judged.apply(lambda v: v.props())
        declared = args.objects_declared
        self._after = args.objects_after
        if judged is None:
            # (None: this pass decides, so the Placement may materialise at once)
            props["objectsDeclared"] = pulumi.Output.from_input(declared).apply(lambda d: d is not False)
        # its VM's user-data then carries a completion token or secrets: its objects' specs are kept secret
        self._reports = "completionUrl" in props or "runSecrets" in props
        self.vm = Placement(f"{name}-placement", props, pulumi.ResourceOptions(parent=self))
        # Operator mode: the VM's objects, in a ConfigGroup declared only while the workload can have
        # any (greenops.placing.declared); None in direct mode, and in a pass that declares none.
        self.objects: pulumi.Output[k8s.yaml.v2.ConfigGroup | None] = pulumi.Output.from_input(None)
        if judged is None:
            if declared is None or isinstance(declared, bool):  # known before the pass: in order, now
                self.objects = pulumi.Output.from_input(self._objects_if(name, declared))
            else:
                self.objects = pulumi.Output.from_input(declared).apply(lambda d: self._objects_if(name, d))
            self.machine = pulumi.Output.from_input({})
        else:
            self.machine = judged.apply(lambda v: self._declare(args, v))
        self.decision = self.vm.decision
        self.phase = self.vm.phase
        self.lifecycle = self.vm.lifecycle
        self.next_change_at = self.vm.nextChangeAt
        outputs = {
            "decision": self.decision,
            "phase": self.phase,
            "lifecycle": self.lifecycle,
            "nextChangeAt": self.next_change_at,
        }
        # (direct mode only: the state's record of the VM, read back by the Automation API)
        self.register_outputs({**outputs, "machine": self.machine} if judged is not None else outputs)

    def _objects_if(
        self, name: str, declared: bool | None
    ) -> k8s.yaml.v2.ConfigGroup | pulumi.Output[k8s.yaml.v2.ConfigGroup | None] | None:
        if declared is None:  # no previous pass: the phase this pass's Placement records says
            return self.vm.phase.apply(lambda phase: self._objects(name) if phase in MATERIALISED else None)
        return self._objects(name) if declared else None

    def _objects(self, name: str) -> k8s.yaml.v2.ConfigGroup:
        manifests = self.vm.manifests
        if self._after is not None:
            # (gather, not Output.all: that would re-walk every manifest into an Output per value)
            manifests = gather(manifests, self._after).apply(lambda both: both[0])
        return k8s.yaml.v2.ConfigGroup(
            f"{name}-vm",
            yaml=manifests.apply(yaml_documents),
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[self.vm], transforms=[_user_data_secret] if self._reports else None
            ),
        )

    def _declare(self, args: GreenWorkloadArgs, v: Verdict) -> pulumi.Output[dict[str, Any]]:
        """The direct set when the verdict declares the VM, after the Placement has recorded the
        step (which refuses a stale verdict before any cloud resource is touched)."""
        if not v.declared or v.decision is None:
            return pulumi.Output.from_input({})
        built = direct.build(
            args.workload,
            v.decision,
            args.render,
            self,
            depends_on=[self.vm],
            azure_existing_group=args.direct.azure_existing_group,
        )
        since = v.since()
        return pulumi.Output.all(built.resource_id, built.private_ip).apply(
            lambda ids: {"resourceId": ids[0], "privateIp": ids[1], "since": since}
        )


# The kinds whose spec carries a run's user-data (greenops.renderers.user_data): ASO, Config Connector, ACK
_USER_DATA_KINDS = (":VirtualMachine", ":ComputeInstance", ":Instance")


def _user_data_secret(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """The VM object's spec as a secret: its user-data holds the run's completion token, which the
    state then keeps encrypted (a ConfigGroup's objects would otherwise store their inputs in plain)."""
    if not args.type_.endswith(_USER_DATA_KINDS) or "spec" not in args.props:
        return None
    return pulumi.ResourceTransformResult(
        props={**args.props, "spec": pulumi.Output.secret(args.props["spec"])}, opts=args.opts
    )


def _needed(workload: Workload, secrets: Any) -> dict[str, str]:
    """The run secrets ``workload``'s env names, from greenops:runSecrets; a missing key is named."""
    given = secrets if isinstance(secrets, dict) else {}
    assert workload.run is not None
    picked = {}
    for i, e in enumerate(workload.run.env):
        if e.secret not in given or not isinstance(given[e.secret], str):
            raise GreenOpsError(
                f"workload {workload.name!r}: run.env[{i}].secret {e.secret!r} ({e.name}): no such key in "
                "greenops:runSecrets (set it with: pulumi config set --secret --path 'greenops:runSecrets."
                f"{e.secret}' <value>)"
            )
        picked[e.secret] = given[e.secret]
    return picked
