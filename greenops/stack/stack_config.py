"""Typed stack configuration, validated once when the program starts."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from greenops.common import endpoints
from greenops.common.errors import GreenOpsError, field_errors, quote, shown
from greenops.common.pem import certificates
from greenops.common.shard_names import shard_of
from greenops.direct.base import NEEDS, missing_settings
from greenops.models import Provisioning, Workload
from greenops.renderers import RenderSettings
from greenops.stack.workload_files import MAX_WORKLOADS, Declared, WorkloadFileError, read_workloads

# The greenops:* keys a stack's program reads (greenops:platform is the platform's, validated by
# components.platform_config.PlatformConfig); the program asks Pulumi for exactly these.
KEYS = (
    "workloads",
    "workloadsFrom",
    "render",
    "endpoints",
    "kubernetes",
    "reconcile",
    "shard",
    "provisioning",
    "direct",
)


# Enough to fix a batch of mistakes in one go; past it validation stops, so ten thousand bad
# workloads cost what twenty do and the message stays readable.
MAX_REPORTED_ERRORS = 20


class StackConfigError(GreenOpsError):
    """Bad stack configuration; the message names the key and the reason."""


class _Section(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class EndpointsConfig(_Section):
    """``greenops:endpoints``: where OPA and the scheduler answer."""

    # pydantic keeps a default as given, unvalidated: these stay str unless configured (readers take str() of them)
    opa_url: AnyHttpUrl = Field(default=endpoints.LOCAL_OPA_URL)  # type: ignore[assignment]
    scheduler_url: AnyHttpUrl = Field(default=endpoints.LOCAL_SCHEDULER_URL)  # type: ignore[assignment]
    timeout_seconds: float = Field(default=endpoints.TIMEOUT_SECONDS, gt=0, le=120)
    attempts: int = Field(default=endpoints.ATTEMPTS, ge=1, le=10)
    ca_certificate: str | None = Field(
        default=None,
        description="PEM of the CA that signed OPA's and the scheduler's HTTPS certificates (the "
        "platform's own CA: the PolicyEngine's caCert output), trusted besides the system's",
    )
    completion_url: str | None = Field(
        default=None,
        max_length=256,
        pattern=r"^https?://[A-Za-z0-9._~:/%-]+$",
        description="the scheduler's URL as the workload VMs reach it: a workload with a run then reports its "
        "end there, with a token scoped to its reservation; none: its VM reports its end by powering off",
    )
    provisioning_lead_seconds: float | None = Field(
        default=None,
        ge=0,
        le=86400,
        description="open the time gate this long before the start; default: the reconcile interval plus "
        "the provisioning margin (greenops:reconcile)",
    )

    @field_validator("ca_certificate")
    @classmethod
    def _pem(cls, v: str | None) -> str | None:
        return v if v is None else certificates(v)


class ReconcileConfig(_Section):
    """``greenops:reconcile``: how often something runs ``greenops reconcile`` unattended (the
    Pulumi Kubernetes Operator's resync, the CI schedule, or ``--watch``), and how long a VM takes
    to come up. A gate opened by the first pass after it must still leave that time before the start."""

    interval_seconds: int = Field(default=240, ge=10, le=86400)
    provisioning_margin_seconds: int = Field(default=60, ge=0, le=86400)
    drift: Literal["restore", "leave"] = Field(
        default="restore",
        description="an edit by hand of a workload's objects (cluster mode, readiness operator) is recorded and "
        "re-applied as declared (restore), or only recorded (leave)",
    )
    max_failovers: int = Field(
        default=3, ge=0, le=10, description="how often a workload may fail over to another region; 0: never"
    )

    @property
    def minimum_lead(self) -> int:
        return self.interval_seconds + self.provisioning_margin_seconds


class KubernetesConfig(_Section):
    """``greenops:kubernetes``: render manifests to a folder, or apply them to a cluster."""

    mode: Literal["render", "cluster"] = "render"
    render_dir: str = "build/rendered"
    context: str | None = Field(
        default=None, description="kubeconfig context; the kubeconfig itself is the secret greenops:kubeconfig"
    )
    install_crd_stubs: bool = Field(
        default=False, description="scope-only CRDs for the operators' kinds (a local API server without operators)"
    )
    readiness: Literal["operator", "applied"] = Field(
        default="operator",
        description="cluster mode: a run starts when the operator reports its VM ready (operator), or as soon as "
        "its objects are applied (applied: a cluster where no operator runs); render mode is always applied",
    )

    @property
    def watches_operators(self) -> bool:
        return self.mode == "cluster" and self.readiness == "operator"


class DirectConfig(_Section):
    """``greenops:direct``: settings of direct provisioning (``greenops:provisioning: direct``)."""

    azure_existing_resource_group: bool = Field(
        default=False,
        description="put Azure workloads in greenops:render.azureResourceGroup, which exists already, instead "
        "of a resource group of their own created with them",
    )


class ShardConfig(_Section):
    """``greenops:shard``: this stack holds one shard of its base stack's workloads (written by
    ``greenops --shards``; see greenops/engine/shards.py)."""

    index: int = Field(ge=0)
    count: int = Field(ge=1, le=10000)

    @model_validator(mode="after")
    def _in_range(self) -> ShardConfig:
        if self.index >= self.count:
            raise ValueError(f"index {self.index} is not below count {self.count}")
        return self


class StackConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    workloads: tuple[Workload, ...] = ()
    render: RenderSettings = Field(default_factory=RenderSettings)
    endpoints: EndpointsConfig = Field(default_factory=EndpointsConfig)
    kubernetes: KubernetesConfig = Field(default_factory=KubernetesConfig)
    reconcile: ReconcileConfig = Field(default_factory=ReconcileConfig)
    shard: ShardConfig | None = None
    provisioning: Provisioning = Provisioning.OPERATOR
    direct: DirectConfig = Field(default_factory=DirectConfig)

    def provisioning_of(self, workload: Workload) -> Provisioning:
        """The workload's own provisioning when it names one, else the stack's."""
        return workload.provisioning or self.provisioning

    @property
    def lead_seconds(self) -> float:
        """The time gate's lead: as configured, else just enough for the reconcile interval."""
        lead = self.endpoints.provisioning_lead_seconds
        return self.reconcile.minimum_lead if lead is None else lead


def lead_problem(lead: float | None, reconcile: ReconcileConfig) -> str | None:
    """Refused rather than widened: a lead shorter than one interval plus the provisioning margin
    lets a gate open after the start, and silently changing what the user wrote hides that."""
    if lead is None or lead >= reconcile.minimum_lead:
        return None
    return (
        f"greenops:endpoints.provisioningLeadSeconds: {lead:g} s is shorter than greenops:reconcile.intervalSeconds "
        f"({reconcile.interval_seconds} s) plus provisioningMarginSeconds ({reconcile.provisioning_margin_seconds} s): "
        f"a gate could open after its start; set it to at least {reconcile.minimum_lead} or reconcile more often"
    )


_Section_T = TypeVar("_Section_T", bound=BaseModel)


def _describe(exc: ValidationError, where: str) -> list[str]:
    return [f"{where}{'.' + field if field else ''}: {msg}" for field, msg in field_errors(exc.errors())]


def _declared_workloads(raw: dict[str, Any], root: Path) -> list[Declared]:
    """The workloads of ``greenops:workloads`` and of the files ``greenops:workloadsFrom`` names."""
    workloads_raw = raw.get("workloads") or []
    if not isinstance(workloads_raw, list):
        raise StackConfigError("greenops:workloads: must be a list of workloads")
    if len(workloads_raw) > MAX_WORKLOADS:
        raise StackConfigError(
            f"greenops:workloads: more than {MAX_WORKLOADS} workloads: split them over stacks (greenops --shards)"
        )
    declared = [Declared(f"greenops:workloads[{i}]", w) for i, w in enumerate(workloads_raw)]
    sources = raw.get("workloadsFrom")
    if sources is not None:
        entries = [sources] if isinstance(sources, str) else sources
        if not isinstance(entries, list) or not all(isinstance(e, str) and e for e in entries):
            raise StackConfigError(
                "greenops:workloadsFrom: must be a path or a list of paths (files or folders of "
                "*.yaml, relative to the project)"
            )
        try:
            declared += read_workloads(entries, root, already=len(declared))
        except WorkloadFileError as exc:
            raise StackConfigError(str(exc)) from None
    where: dict[str, list[str]] = {}
    for d in declared:
        # a name that is not a string is refused by the model, where it is named
        if isinstance(d.spec, dict) and isinstance(d.spec.get("name"), str) and d.spec["name"]:
            where.setdefault(d.spec["name"], []).append(d.where)
    dupes = sorted((n, places) for n, places in where.items() if len(places) > 1)
    if dupes:
        listed = [f"{quote(n)} in {', '.join(p[:3])}{' and more' if len(p) > 3 else ''}" for n, p in dupes]
        raise StackConfigError(
            "duplicate workload names: "
            + "; ".join(listed[:MAX_REPORTED_ERRORS])
            + (f"; and {len(listed) - MAX_REPORTED_ERRORS} more" if len(listed) > MAX_REPORTED_ERRORS else "")
        )
    return declared


def joined_errors(errors: list[str], stopped: bool = False) -> str:
    """The errors as one line: the first MAX_REPORTED_ERRORS, and whether there were more."""
    listed = "; ".join(errors[:MAX_REPORTED_ERRORS])
    stopped = stopped or len(errors) > MAX_REPORTED_ERRORS
    return listed + (f" (stopped after {MAX_REPORTED_ERRORS} errors)" if stopped else "")


def direct_settings_problems(workloads: list[Workload], default: Provisioning, render: RenderSettings) -> list[str]:
    """Refused at preview, not when a gate opens hours later: a direct workload that may be placed
    on a cloud whose direct set needs a render setting that is not there."""
    problems = []
    for w in workloads:
        if (w.provisioning or default) is not Provisioning.DIRECT:
            continue
        clouds = [w.provider] if w.provider else list(w.eligible_providers or NEEDS)
        for cloud in clouds:
            for key in missing_settings(cloud, render):
                problems.append(
                    f"greenops:render.{key}: workload {w.name!r} is provisioned directly and may be placed "
                    f"on {cloud}, whose direct set needs it"
                )
    return problems


def _provisioning(raw: Any, errors: list[str]) -> Provisioning | None:
    """``greenops:provisioning``: operator (the default) or direct; None with an error otherwise."""
    if raw is None:
        return Provisioning.OPERATOR
    try:
        return Provisioning(raw)
    except ValueError:
        errors.append(
            f"greenops:provisioning: {quote(raw)} is not a provisioning mode: choose "
            + " or ".join(m.value for m in Provisioning)
        )
        return None


def parse_stack_config(raw: dict[str, Any], now: datetime | None = None, root: Path | None = None) -> StackConfig:
    """Validate ``greenops:*`` keys; raise StackConfigError naming each bad key. ``root`` is the
    project folder that ``greenops:workloadsFrom`` paths are relative to (default: the current one)."""
    declared = _declared_workloads(raw, root or Path.cwd())
    # Structure only: whether a deadline still leaves time is checked when a workload is placed
    # (Placement.check), so a placed workload whose deadline has passed stays a valid declaration.
    ctx = {"check_deadline": False, **({"now": now} if now else {})}
    workloads = []
    errors: list[str] = []
    for d in declared:
        if len(errors) >= MAX_REPORTED_ERRORS:
            raise StackConfigError(joined_errors(errors, stopped=True))
        try:
            workloads.append(Workload.model_validate(d.spec, context=ctx))
        except ValidationError as exc:
            name = d.spec.get("name") if isinstance(d.spec, dict) else None
            named = f" ({shown(name)})" if isinstance(name, str) and name else ""
            errors += _describe(exc, d.where + named)

    def section(key: str, model: type[_Section_T]) -> _Section_T | None:
        """The validated section, or None with its errors added."""
        try:
            return model.model_validate(raw.get(key) or {})
        except ValidationError as exc:
            errors.extend(_describe(exc, f"greenops:{key}"))
            return None

    render = section("render", RenderSettings)
    endpoints_config = section("endpoints", EndpointsConfig)
    kubernetes = section("kubernetes", KubernetesConfig)
    reconcile = section("reconcile", ReconcileConfig)
    shard = None if raw.get("shard") is None else section("shard", ShardConfig)
    direct = section("direct", DirectConfig)
    provisioning = _provisioning(raw.get("provisioning"), errors)
    # greenops:platform is validated by components.platform_config.PlatformConfig (the program does both)
    unknown = sorted(shown(f"greenops:{k}") for k in set(raw) - {*KEYS, "platform"})
    if unknown:
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        errors.append(f"unknown key(s) {', '.join(unknown[:5])}{more}")
    if render is not None and provisioning is not None:
        errors += direct_settings_problems(workloads, provisioning, render)
    if endpoints_config is not None and reconcile is not None:
        problem = lead_problem(endpoints_config.provisioning_lead_seconds, reconcile)
        if problem:
            errors.append(problem)
    # (a section is None only when its errors were added)
    if (
        errors
        or render is None
        or endpoints_config is None
        or kubernetes is None
        or reconcile is None
        or direct is None
        or provisioning is None
    ):
        raise StackConfigError(joined_errors(errors))
    if shard is not None:  # every shard reads all files and keeps its own: names stay unique stack-wide
        workloads = [w for w in workloads if shard_of(w.name, shard.count) == shard.index]
    # shard is passed only when configured, as before
    # pydantic validates the workloads again here: with the same context, so that again no deadline
    # is checked against the wall clock (a declaration valid at ``now`` stays valid)
    return StackConfig.model_validate(
        {
            "workloads": tuple(workloads),
            "render": render,
            "endpoints": endpoints_config,
            "kubernetes": kubernetes,
            "reconcile": reconcile,
            "provisioning": provisioning,
            "direct": direct,
            **({} if shard is None else {"shard": shard}),
        },
        context=ctx,
    )
