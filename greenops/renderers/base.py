"""What every provider renderer shares: settings, names and labels."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel, to_snake

from greenops.catalog import Catalog
from greenops.models import Decision, Workload, strings

MANAGED_BY = "greenops"
# the cloud-side tag naming the owner: the ACK role (components/aws_controllers.py) acts only on
# resources that carry it
MANAGED_BY_TAG = "managed-by"
LABEL_PREFIX = "greenops.io"
# The two parts of the ARM id that owns every ASO object. The chart checks its values with the same
# patterns (through its catalog and its schema), so what one path refuses the other refuses too.
AZURE_SUBSCRIPTION_ID_PATTERN = strings.AZURE_SUBSCRIPTION_ID
AZURE_RESOURCE_GROUP_PATTERN = strings.AZURE_RESOURCE_GROUP


def _rule(field: str) -> Any:
    """A validator applying the shared rule of the VmTemplate spec field of the same meaning, so a
    value the chart and admission refuse is refused here too (None: not set)."""
    return field_validator(to_snake(field))(lambda v: v if v is None else strings.check(field, v))


class RenderSettings(BaseModel):
    """Cluster-side settings that are the same for every workload of a stack."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    namespace: str = "greenops"
    azure_resource_group: str = Field(
        default="greenops-workloads",
        description="the Azure resource group (created by pulumi-azure-native, not an ASO object) that owns "
        "every Azure workload resource",
    )
    azure_subscription_id: str | None = Field(
        default=None,
        description="the resource group's subscription: ASO objects name their owner by ARM id; "
        "required to render Azure",
    )
    admin_username: str = "greenops"
    ssh_public_key: str | None = Field(default=None, description="OpenSSH public key for the admin user")
    gcp_project: str | None = Field(default=None, description="sets cnrm.cloud.google.com/project-id when given")
    skip_await: bool = Field(default=False, description="annotate pulumi.com/skipAwait (no controller running)")

    _namespace = _rule("namespace")
    _azure_resource_group = _rule("azureResourceGroup")
    _azure_subscription_id = _rule("azureSubscriptionId")
    _admin_username = _rule("adminUsername")
    _ssh_public_key = _rule("sshPublicKey")
    _gcp_project = _rule("gcpProject")


@dataclass(frozen=True)
class RenderContext:
    workload: Workload
    decision: Decision
    settings: RenderSettings
    catalog: Catalog
    # What the cluster reports about objects of this set, keyed "Kind/name": their ``status``. Some
    # fields can only be filled from another object's status (ACK's Instance takes security groups
    # by id), so the object that needs them is held back until the status is there.
    observed: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # What every object's name starts with: the workload's name on the Pulumi path, whose objects a
    # stack's namespace holds. The chart names a VmTemplate's objects "<vmName>-<hash>" instead (see
    # vmtemplate.stem); the same stem here renders the same set.
    stem: str | None = None
    # the run's report script (greenops.renderers.user_data.report_script): it carries a completion token
    report: str | None = None
    # the values the run's env names by key (run.env): secrets, rendered into its user-data only
    secrets: Mapping[str, str] = field(default_factory=dict)
    held: list[str] = field(default_factory=list)  # filled by the renderer: what it held back, and why
    used: dict[str, dict[str, str]] = field(default_factory=dict)  # the reported values the set was rendered with

    def user_data(self, base64: bool = False) -> str | None:
        """The run's cloud-init user-data (greenops.renderers.user_data), base64 as ASO and ACK take
        it; None when it runs nothing."""
        from .user_data import user_data, user_data_base64

        return (user_data_base64 if base64 else user_data)(self.workload, self.report, self.secrets)

    def reported(self, kind: str, name: str, key: str) -> str | None:
        """``status.<key>`` of our object ``kind/name``, once its operator has set it."""
        value = (self.observed.get(f"{kind}/{name}") or {}).get(key)
        if not value:
            return None
        self.used.setdefault(f"{kind}/{name}", {})[key] = str(value)
        return str(value)

    def hold(self, kind: str, name: str, why: str) -> None:
        self.held.append(f"{kind} {name} is held until {why}")

    def name(self, suffix: str | None = None) -> str:
        """Deterministic object name derived from the stem (by default the workload name)."""
        stem = self.stem or self.workload.name
        return stem if suffix is None else f"{stem}-{suffix}"

    @property
    def labels(self) -> dict[str, str]:
        return {
            f"{LABEL_PREFIX}/workload": self.workload.name,
            f"{LABEL_PREFIX}/tenant": self.workload.tenant,
            f"{LABEL_PREFIX}/provider": self.decision.provider,
            f"{LABEL_PREFIX}/managed-by": MANAGED_BY,
        }

    def metadata(self, name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "namespace": self.settings.namespace, "labels": dict(self.labels)}
        notes = dict(annotations or {})
        if self.settings.skip_await:
            notes["pulumi.com/skipAwait"] = "true"
        if notes:
            meta["annotations"] = notes
        return meta

    def tags(self) -> dict[str, str]:
        """Cloud-side tags mirroring the labels, so bills and inventories show the owner."""
        return {
            "greenops-workload": self.workload.name,
            "greenops-tenant": self.workload.tenant,
            MANAGED_BY_TAG: MANAGED_BY,
        }


RenderFn = Callable[[RenderContext], list[dict[str, Any]]]


@dataclass(frozen=True)
class ObjectState:
    """One object as its operator reports it in ``status.conditions``."""

    ready: bool
    since: str | None = None  # the ready condition's lastTransitionTime
    failure: str | None = None  # terminal: the operator has given up until a person acts
    detail: str = ""  # the condition as text; empty while the operator has said nothing
    # the VM is powered off, as its operator reports it: how a workload's run says it has ended
    # (greenops.renderers.user_data powers the VM off after the script)
    stopped: bool = False


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    """The condition of type ``kind`` in the object's status, if the operator has set one."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == kind:
            return c
    return None


def describe(c: dict[str, Any]) -> str:
    """``Ready=False (Warning, Reconciling): message`` from a condition."""
    why = ", ".join(str(x) for x in (c.get("severity"), c.get("reason")) if x)
    text = f"{c.get('type')}={c.get('status')}" + (f" ({why})" if why else "")
    return text + (f": {c['message']}" if c.get("message") else "")


def readiness(c: dict[str, Any] | None) -> ObjectState:
    """Ready when ``c`` (the operator's readiness condition) is True; otherwise its text says why not."""
    if c is None:
        return ObjectState(False)  # the operator has not reported yet
    if c.get("status") == "True":
        return ObjectState(True, since=c.get("lastTransitionTime"), detail=describe(c))
    return ObjectState(False, detail=describe(c))


StateFn = Callable[[dict[str, Any]], ObjectState]
