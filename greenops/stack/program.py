"""The Pulumi program behind ``__main__.py``: every workload of the stack, placed and gated."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pulumi
import pulumi_kubernetes as k8s

from components import render_mode
from components.render_mode import RenderModeCrds, RenderModeCrdsArgs
from components.workload import DirectArgs, Endpoints, GreenWorkload, GreenWorkloadArgs
from greenops.common.clock import stamp, system_clock
from greenops.common.file_backend import writes_sidecars
from greenops.common.pulumi_outputs import gather, sdk_waits_cheaply
from greenops.direct.records import RECORDS_OUTPUT, record_of
from greenops.models import Provisioning, Workload
from greenops.placing.declared import objects_declared
from greenops.placing.due import declaration_digest
from greenops.stack.inline_config import too_large_for_environment
from greenops.stack.stack_config import KEYS, StackConfig, StackConfigError, joined_errors, parse_stack_config

if TYPE_CHECKING:  # the platform's modules load only for a stack that installs it
    from components.platform import PlatformSecrets
    from components.platform_config import PlatformConfig

PLATFORM_SECRETS = ("mlflowDbPassword", "s3AccessKey", "s3SecretKey")


def project_root() -> Path:
    """The folder of Pulumi.yaml, which greenops:workloadsFrom paths are relative to, as the engine
    tells the CLI's program (which also runs there)."""
    root = pulumi.get_root_directory()  # None under mocks
    return Path(root) if root else Path.cwd()


def _raw_config(cfg: pulumi.Config) -> dict[str, Any]:
    return {key: _value(cfg, key) for key in KEYS if cfg.get(key) is not None}


def _all_config() -> dict[str, str]:
    """The whole stack config the program sees, every namespace, as the engine handed it."""
    from pulumi.runtime import config as runtime_config

    return {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}


def _value(cfg: pulumi.Config, key: str) -> Any:
    """A structured value, or the plain string it is (``greenops:workloadsFrom: workloads``)."""
    try:
        return cfg.get_object(key)
    except pulumi.ConfigTypeError:
        return cfg.get(key)


def kubernetes_provider(config: StackConfig, cfg: pulumi.Config) -> k8s.Provider:
    kube = config.kubernetes
    if kube.mode == "render":
        # Manifests are written to a folder instead of a cluster (the local default).
        return k8s.Provider("k8s", render_yaml_to_directory=str(Path(kube.render_dir).resolve()))
    return k8s.Provider(
        "k8s", kubeconfig=cfg.get_secret("kubeconfig"), context=kube.context, enable_server_side_apply=True
    )


def placement_row(
    w: Workload,
    decision: dict[str, Any] | None,
    lifecycle: dict[str, Any] | None,
    next_change_at: str | None = None,
    machine: dict[str, Any] | None = None,
    spec: str | None = None,
    objects: bool | None = None,
) -> dict[str, Any]:
    d, lc, vm = decision or {}, lifecycle or {}, machine or {}
    return {
        "workload": w.name,
        # for a pass of the due workloads (greenops/placing/due.py): the declaration's digest, which
        # an edit changes, and whether the VM's objects (operator mode) are declared after this pass
        "spec": spec,
        "objects": objects,
        "tenant": w.tenant,
        "cpu": w.cpu,
        "memory": w.memory,
        "hours": w.duration_hours,
        "phase": lc.get("phase"),
        "reason": lc.get("reason"),
        "provider": d.get("provider"),
        "region": d.get("region"),
        "zone": d.get("zone"),
        "start": d.get("schedulingTime"),
        "size": d.get("vmSize"),
        "expected": d.get("expectedIntensity"),
        "baseline": d.get("baselineIntensity"),
        "saving%": d.get("savingPercent"),
        "gateOpenedAt": lc.get("gateOpenedAt"),
        "runningSince": lc.get("runningSince"),
        "completedAt": lc.get("completedAt"),
        "failedAt": lc.get("failedAt"),
        "replacements": lc.get("replacements"),
        "failovers": lc.get("failovers", []),  # the attempts given up, each with why and its cost in carbon
        "drift": lc.get("drift", []),  # edits by hand found on its objects, and whether each was restored
        "nextChangeAt": next_change_at,
        "events": lc.get("events", []),
        "deadline": stamp(w.deadline),
        "decidedAt": d.get("decidedAt"),
        "image": d.get("image"),
        # direct mode, while the VM exists: the cloud's own id of it and the address it was given
        "resourceId": vm.get("resourceId"),
        "privateIp": vm.get("privateIp"),
    }


def _row_of(w: Workload, spec: str) -> Callable[[list[Any]], dict[str, Any]]:
    """The placement row of ``w`` from its gathered decision, lifecycle and next change."""
    return lambda ds: placement_row(w, ds[0], ds[1], ds[2], ds[3], spec, ds[4])


def missing_credentials(platform_config: PlatformConfig, secrets: PlatformSecrets) -> str | None:
    """Why the platform cannot be installed securely with these secrets, or None. A cluster install
    never runs an open scheduler or an open OPA API: the credentials it needs are refused by name
    at preview, not warned about after the fact."""
    c = platform_config
    needed = {
        "schedulerAdminToken": c.scheduler.enabled,  # the bootstrap admin: issues the tenants' tokens
        "opaSchedulerToken": c.policy.enabled,  # OPA's own principal at the scheduler (cluster path only)
        "opaToken": c.policy.enabled,  # decision queries (Placement's)
        "opaAdminToken": c.policy.enabled,  # kube-mgmt's writes
        "metricsToken": c.monitoring.enabled and c.scheduler.enabled,  # Prometheus's: the metrics name tenants
        "opaServingKey": c.policy.enabled and c.policy.serving_cert is not None,  # your own certificate's
    }
    given = {
        "schedulerAdminToken": secrets.scheduler_admin_token,
        "opaSchedulerToken": secrets.opa_scheduler_token,
        "opaToken": secrets.opa_token,
        "opaAdminToken": secrets.opa_admin_token,
        "metricsToken": secrets.metrics_token,
        "opaServingKey": secrets.opa_serving_key,
    }
    missing = [f"greenops:{k}" for k, wanted in needed.items() if wanted and given[k] is None]
    if not missing:
        return None
    why = " (external access exposes both services beyond the cluster)" if c.external_access.enabled else ""
    return (
        f"the platform needs the secret(s) {', '.join(missing)}{why}: set each to its own random value with "
        '`pulumi config set --secret <key> "$(openssl rand -hex 32)"` (see stacks/Pulumi.prod.yaml); '
        "an open scheduler or OPA API is never installed"
    )


def platform(cfg: pulumi.Config, provider: k8s.Provider, config: StackConfig) -> None:
    """The control plane (greenops:platform), when the stack declares one."""
    from pydantic import ValidationError

    from components.external_access import ExternalAccess
    from components.platform import GreenOpsPlatform, GreenOpsPlatformArgs, PlatformSecrets
    from components.platform_config import PlatformConfig
    from components.policy_engine import PolicyEngine
    from greenops.common.errors import field_errors

    # not get_object: its error for a value that is not JSON quotes the whole value
    raw = _value(cfg, "platform")
    if raw is None:
        return
    interval = config.reconcile.interval_seconds  # the in-cluster resync is the gates' reconcile interval
    try:
        platform_config = PlatformConfig.model_validate(raw)
    except ValidationError as exc:
        lines = [f"greenops:platform{'.' + field if field else ''}: {msg}" for field, msg in field_errors(exc.errors())]
        raise pulumi.RunError(joined_errors(lines)) from None
    # the object-store keys: MLflow's artifacts and SeaweedFS, and the models KServe reads
    needed = {
        "mlflowDbPassword": platform_config.mlflow.enabled,
        "s3AccessKey": platform_config.mlflow.enabled or platform_config.kserve.enabled,
        "s3SecretKey": platform_config.mlflow.enabled or platform_config.kserve.enabled,
    }
    mlflow_db_password, s3_access_key, s3_secret_key = (
        cfg.require_secret(k) if needed[k] else None for k in PLATFORM_SECRETS
    )
    secrets = PlatformSecrets(
        mlflow_db_password,
        s3_access_key,
        s3_secret_key,
        scheduler_admin_token=cfg.get_secret("schedulerAdminToken"),
        opa_scheduler_token=cfg.get_secret("opaSchedulerToken"),
        opa_token=cfg.get_secret("opaToken"),
        opa_admin_token=cfg.get_secret("opaAdminToken"),
        scheduler_database_url=cfg.get_secret("schedulerDatabaseUrl"),
        scheduler_db_password=cfg.get_secret("schedulerDbPassword"),
        metrics_token=cfg.get_secret("metricsToken"),
        opa_serving_key=cfg.get_secret("opaServingKey"),
    )
    if missing := missing_credentials(platform_config, secrets):
        raise pulumi.RunError(missing)
    if (
        platform_config.scheduler.enabled
        and secrets.scheduler_database_url is None
        and secrets.scheduler_db_password is None
    ):
        raise pulumi.RunError(
            "greenops:platform.scheduler: the reservation record needs a PostgreSQL: set the secret "
            "greenops:schedulerDbPassword (the platform deploys one) or greenops:schedulerDatabaseUrl "
            "(an existing server)"
        )
    installed = GreenOpsPlatform(
        "greenops",
        GreenOpsPlatformArgs(platform_config, secrets, reconcile_interval_seconds=interval),
        pulumi.ResourceOptions(providers={"kubernetes": provider}),
    )
    # (GreenOpsPlatform.parts holds each part as a ComponentResource, under the key of its kind)
    if "policy" in installed.parts:
        # the CA a workloads stack trusts for OPA: greenops:endpoints.caCertificate
        policy = cast(PolicyEngine, installed.parts["policy"])
        pulumi.export("opaCaCertificate", policy.ca_pem)
        # the API server's credential for the webhook (its --admission-control-config-file's
        # kubeConfigFile), a secret: `pulumi stack output apiServerAdmissionKubeconfig --show-secrets`
        pulumi.export("apiServerAdmissionKubeconfig", policy.admission_kubeconfig)
    if "externalAccess" in installed.parts:
        # a workloads stack run from CI: greenops:endpoints.opaUrl and schedulerUrl
        external = cast(ExternalAccess, installed.parts["externalAccess"])
        pulumi.export("opaExternalUrl", external.opa_url)
        pulumi.export("schedulerExternalUrl", external.scheduler_url)


RecordsReader = Callable[[], dict[str, Any]]


RowsReader = Callable[[], list[dict[str, Any]]]


class PreviousPass:
    """What this stack's last successful update exported, read through one reference to itself
    (known in a preview too); made only when a pass needs it."""

    def __init__(self) -> None:
        self._me: pulumi.StackReference | None = None

    def output(self, name: str) -> pulumi.Output[Any]:
        if self._me is None:
            backend = os.environ.get("PULUMI_BACKEND_URL")
            if writes_sidecars(backend):
                # the CLI writes this stack's state after every step while this reference reads it
                pulumi.log.warn(
                    f"PULUMI_BACKEND_URL {backend}: a file backend without ?metadata=skip rewrites a sidecar "
                    "file in place, and reading this stack's own outputs while it does fails the update with "
                    "'failed to load checkpoint: EOF'; add ?metadata=skip to the URL "
                    "(see the quickstart's note on file backends)"
                )
            self._me = pulumi.StackReference(f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}")
        # (outputs, not get_output: a stack reference's outputs may be null, under mocks for one)
        return self._me.outputs.apply(lambda outputs: (outputs or {}).get(name))


def recorded_placements(read: RecordsReader | None, previous: PreviousPass) -> pulumi.Output[dict[str, Any]]:
    """The placements' records a direct-mode pass declares from: handed in by the Automation API,
    which read them from the state, or else this stack's own ``placementRecords`` output of its last
    successful update. Either is known in a preview."""
    if read is not None:
        return pulumi.Output.from_input(read())
    return previous.output(RECORDS_OUTPUT).apply(lambda records: dict(records or {}))


def previous_rows(
    read: RowsReader | None, previous: PreviousPass
) -> dict[str, dict[str, Any]] | pulumi.Output[dict[str, dict[str, Any]]]:
    """The ``placements`` rows of the last successful update, by workload: handed in by the
    Automation API (plain, so every ConfigGroup is declared in order), or read back through the
    stack's reference to itself."""
    if read is not None:
        return _by_workload(read())
    return previous.output("placements").apply(_by_workload)


def _by_workload(rows: list[dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    return {str(r.get("workload")): r for r in rows or []}


def run(
    root: Path | None = None,
    records: RecordsReader | None = None,
    now: datetime | None = None,
    placement_rows: RowsReader | None = None,
    only: set[str] | None = None,
) -> list[GreenWorkload]:
    """The program. ``root`` is the project folder: an inline Automation API program is handed it,
    since the engine tells an inline program no root and it runs in the caller's folder. ``records``
    reads the placements' records as the state has them, when a workload is direct (see
    recorded_placements); ``placement_rows`` reads the previous pass's rows (previous_rows); ``now``
    is the pass's instant (default: the platform's clock). ``only``: a pass of the due workloads
    (greenops/placing/due.py), run with their resources as its targets; it registers only these,
    and the other workloads' rows and records are exported as the previous pass left them."""
    sdk_waits_cheaply()
    # An inline Automation API program is handed its config without an environment, but the CLI and
    # the Pulumi Kubernetes Operator start the program with it in one (greenops/stack/inline_config.py):
    # a stack that only one path can run is refused on all of them.
    problem = too_large_for_environment(_all_config())
    if problem:
        raise pulumi.RunError(problem)
    cfg = pulumi.Config("greenops")
    try:
        config = parse_stack_config(_raw_config(cfg), root=root or project_root())
    except StackConfigError as exc:
        # A clean, named error instead of a Python traceback in the preview output.
        raise pulumi.RunError(str(exc)) from None
    provider = kubernetes_provider(config, cfg)
    platform(cfg, provider, config)
    crds_known: pulumi.Output[bool] | None = None
    if config.kubernetes.mode == "render" or config.kubernetes.install_crd_stubs:
        crds_known = RenderModeCrds(render_mode.NAME, RenderModeCrdsArgs(provider)).known()
    e = config.endpoints
    watched = config.kubernetes.watches_operators
    endpoints = Endpoints(
        str(e.opa_url),
        str(e.scheduler_url),
        e.timeout_seconds,
        e.attempts,
        cfg.get_secret("opaToken"),
        cfg.get_secret("schedulerToken"),
        config.lead_seconds,
        watch_operators=watched,
        kubeconfig=cfg.get_secret("kubeconfig") if watched else None,
        kube_context=config.kubernetes.context if watched else None,
        ca_certificate=e.ca_certificate,
        completion_url=e.completion_url,
        drift=config.reconcile.drift,
        max_failovers=config.reconcile.max_failovers,
    )
    direct_ones = [w for w in config.workloads if config.provisioning_of(w) is Provisioning.DIRECT]
    previous = PreviousPass()
    recorded = recorded_placements(records, previous) if direct_ones else None
    now = (now or system_clock()).replace(microsecond=0)  # one instant for every verdict of this pass, as stamped
    operator_ones = len(direct_ones) < len(config.workloads)
    if only is not None and placement_rows is None:
        raise pulumi.RunError("a pass of the due workloads needs the previous pass's rows (the Automation API's)")
    before = previous_rows(placement_rows, previous) if operator_ones or only is not None else {}
    rows: list[pulumi.Output[dict[str, Any]] | dict[str, Any]] = []
    components: list[GreenWorkload] = []
    kept: dict[str, pulumi.Output[Any]] = {}
    credential = scheduler_credentials(cfg, config.workloads)
    run_secrets = cfg.get_secret_object("runSecrets")  # key -> value: what a run's env names (run.env)
    for w in config.workloads:
        mode = config.provisioning_of(w)
        if only is not None and w.name not in only:
            # not due: its resources are not this pass's targets, so the engine keeps them as they are
            row = cast(dict[str, dict[str, Any]], before).get(w.name)
            if row is None:  # declared after the pass chose its targets: never placed unseen
                raise pulumi.RunError(f"workload {w.name!r}: declared since this pass chose its targets; run it again")
            rows.append(row)
            if recorded is not None and mode is Provisioning.DIRECT:
                kept[w.name] = recorded.apply(_entry(w.name))
            continue
        direct_args = DirectArgs(now=now, azure_existing_group=config.direct.azure_existing_resource_group)
        if recorded is not None and mode is Provisioning.DIRECT:
            direct_args.record = recorded.apply(_entry(w.name))
        component = GreenWorkload(
            w.name,
            GreenWorkloadArgs(
                w,
                replace(endpoints, scheduler_token=credential(w.tenant)),
                config.render,
                mode,
                direct_args,
                objects_declared=_declared(before, w.name, now),
                objects_after=crds_known,
                run_secrets=run_secrets,
            ),
            pulumi.ResourceOptions(providers={"kubernetes": provider}),
        )
        components.append(component)
        rows.append(
            gather(
                component.decision,
                component.lifecycle,
                component.next_change_at,
                component.machine,
                component.objects.apply(lambda group: group is not None),
            ).apply(_row_of(w, declaration_digest(w, mode)))
        )
        if mode is Provisioning.DIRECT:
            vm = component.vm
            kept[w.name] = gather(vm.workload, vm.decision, vm.lifecycle, component.machine).apply(_record_of)
    pulumi.export("placements", _in_order(rows))
    if direct_ones:
        pulumi.export(RECORDS_OUTPUT, pulumi.Output.all(**kept))
    return components


def scheduler_credentials(
    cfg: pulumi.Config, workloads: Sequence[Workload]
) -> Callable[[str], pulumi.Input[str] | None]:
    """Which credential each workload's Placement presents to the scheduler: its tenant's token from
    the secret map ``greenops:schedulerTokens`` (tenant -> token, one per tenant), else the stack's
    ``greenops:schedulerToken`` (one token whose principal acts for several tenants). A tenant with
    neither is refused here, by name, rather than by the scheduler at the first booking."""
    shared = cfg.get_secret("schedulerToken")
    try:
        # get_object reads the plaintext; every token is wrapped as a secret again below
        per_tenant = cfg.get_object("schedulerTokens")
    except pulumi.ConfigTypeError:
        per_tenant = ""  # refused just below, without quoting the value
    if per_tenant is not None and not (
        isinstance(per_tenant, dict) and all(isinstance(v, str) and v for v in per_tenant.values())
    ):
        raise pulumi.RunError("greenops:schedulerTokens: must map each tenant to its token (a non-empty string)")
    tokens: dict[str, str] = per_tenant or {}
    if tokens and shared is None:
        missing = sorted({w.tenant for w in workloads} - tokens.keys())
        if missing:
            named = ", ".join(f"{w.name} ({w.tenant})" for w in workloads if w.tenant in missing)
            raise pulumi.RunError(
                f"greenops:schedulerTokens: no token for tenant(s) {', '.join(missing)}, used by {named}: "
                "add one (greenops token issue --tenant ...) or set greenops:schedulerToken"
            )

    def credential(tenant: str) -> pulumi.Input[str] | None:
        token = tokens.get(tenant)
        return pulumi.Output.secret(token) if token is not None else shared

    return credential


def _declared(
    before: dict[str, dict[str, Any]] | pulumi.Output[dict[str, dict[str, Any]]], name: str, now: datetime
) -> bool | None | pulumi.Output[bool | None]:
    if isinstance(before, dict):
        return objects_declared(before.get(name), now)
    return before.apply(lambda by_name: objects_declared(by_name.get(name), now))


def _in_order(rows: list[pulumi.Output[dict[str, Any]] | dict[str, Any]]) -> pulumi.Output[list[Any]]:
    """Every row in the stack's order: this pass's, and the previous pass's for a workload it left."""
    made = [r for r in rows if isinstance(r, pulumi.Output)]

    def merged(new: list[Any]) -> list[Any]:
        fresh = iter(new)
        return [next(fresh) if isinstance(r, pulumi.Output) else r for r in rows]

    return gather(*made).apply(merged)


def _entry(name: str) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    return lambda records: records.get(name)


def _record_of(ds: list[Any]) -> dict[str, Any] | None:
    """What the next pass reads back of a workload: the spec its Placement holds, the decision, the
    lifecycle and the VM this pass left."""
    r = record_of({"workload": ds[0], "decision": ds[1], "lifecycle": ds[2]}, ds[3])
    return None if r is None else r.model_dump()
