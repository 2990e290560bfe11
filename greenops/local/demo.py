"""``greenops demo``: the whole system on one machine, no cloud account.

On loopback: etcd + kube-apiserver, the scheduler, OPA (HTTPS, with the policy bundle) as the
mutating webhook for VmTemplate. Then both paths of the design:
- Pulumi: the dev stack's sample workloads, two of them due the next morning, placed by their Placements;
  the clock is then played forward over a simulated day (reconcile passes at each next-change
  instant, as ``greenops reconcile --watch`` wakes), so each gate
  opening, run start (ASO / Config Connector / ACK objects appearing in the API server) and
  retirement shows;
- cluster: VmTemplates created through the API server and patched by OPA from the scheduler.
"""

from __future__ import annotations

import contextlib
import functools
import json
import shutil
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from pulumi import automation as auto

from greenops.charts.vmplacement import GROUP as PLACEMENT_GROUP
from greenops.charts.vmplacement import PLURAL as PLACEMENT_PLURAL
from greenops.charts.vmplacement import VERSION as PLACEMENT_VERSION
from greenops.charts.vmplacement import placement_crd
from greenops.common.clock import parse_time, set_clock_file, stamp
from greenops.common.httpclient import RetryingClient
from greenops.common.stopping import SignalStop
from greenops.common.toolpaths import REPO
from greenops.engine import automation
from greenops.engine.reconcile_stack import WAKE_MARGIN, Pass, reconcile_once
from greenops.insight import explain, hindsight, placements, report
from greenops.insight.record_rows import listed
from greenops.intensity.profiles import ProfileSource
from greenops.local import delivery
from greenops.local.cluster_day import ClusterDay
from greenops.local.controller import ControllerProcess
from greenops.local.controlplane import LocalControlPlane
from greenops.local.opa import OpaServer
from greenops.local.scheduler import SchedulerServer
from greenops.local.webhook import WebhookAccess, install_admission, loopback_tls
from greenops.policies.webhook import VMTEMPLATE_GROUP as GROUP
from greenops.policies.webhook import VMTEMPLATE_VERSION as VERSION
from greenops.renderers import registry
from greenops.stack.files import read_stack_file


def say(text: str = "") -> None:
    print(text, flush=True)


# The simulated day starts in the evening, when Germany's and Britain's grids are near their daily
# peak in every month of the profiles, so tonight's jobs honestly wait for the night.
EVENING_UTC = 17
# ACK's Instance takes its security group by id, so it follows the group once an ACK controller
# reports the id; none runs here, so the group is what shows an AWS run.
SHOWN_BESIDE_THE_VMS = {"SecurityGroup"}


def shown_kinds() -> list[tuple[str, str]]:
    """(apiVersion, kind) of each provider's VM object, as the renderers declare them."""
    shown = {registry.vm_kind(p) for p in registry.providers()} | SHOWN_BESIDE_THE_VMS
    return [(api, kind) for api, kind in registry.rendered_kinds() if kind in shown]


def next_evening(now: datetime) -> datetime:
    """The simulated clock's start: the next EVENING_UTC:00 (never in the scheduler's past)."""
    evening = now.replace(hour=EVENING_UTC, minute=0, second=0, microsecond=0)
    return evening if evening > now else evening + timedelta(days=1)


# Dev-stack workloads bound to one grid with an hourly profile (Germany, Britain). Their stack
# deadlines are months ahead, so there they wait for the cleanest month; the demo declares them
# due the next morning, so that their gates open within its simulated day. A stack file cannot
# say "tomorrow".
DUE_NEXT_MORNING = ("grid-settlement", "overnight-render")


def due_next_morning(workloads: list[dict[str, Any]], evening: datetime) -> list[dict[str, Any]]:
    due = stamp(evening + timedelta(hours=16))
    return [{**w, "deadline": due} if w["name"] in DUE_NEXT_MORNING else w for w in workloads]


def demo_project(
    folder: Path, cp: LocalControlPlane, opa_url: str, scheduler_url: str, ca_pem: str, evening: datetime
) -> Path:
    """A copy of the project whose ``demo`` stack is the dev stack pointed at the local servers,
    its DUE_NEXT_MORNING workloads due the morning after ``evening``."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO / "Pulumi.yaml", folder / "Pulumi.yaml")
    (folder / "stacks").mkdir(exist_ok=True)
    config = read_stack_file(REPO / "stacks" / "Pulumi.dev.yaml", REPO)["config"]
    # Placement trusts the local OPA's throw-away CA as a prod stack trusts the platform's (caCertificate)
    config["greenops:endpoints"] = {
        "opaUrl": opa_url,
        "schedulerUrl": scheduler_url,
        "timeoutSeconds": 10,
        "caCertificate": ca_pem,
    }
    # No operator runs on this machine, so nothing would ever report a VM ready: a run counts from
    # when its objects are applied (readiness: applied), and the demo says so.
    config["greenops:kubernetes"] = {"mode": "cluster", "installCrdStubs": True, "readiness": "applied"}
    config["greenops:workloads"] = due_next_morning(config["greenops:workloads"], evening)
    (folder / "stacks" / "Pulumi.demo.yaml").write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    return folder


def vmtemplate(name: str, due_in: timedelta = timedelta(days=2), **spec: Any) -> dict[str, Any]:
    base = {
        "vmName": name,
        "cpu": 2,
        "memory": 4,
        "duration": "2h",
        "maxLatency": 2000,
        "tenant": "demo",
        "deadline": stamp(datetime.now(UTC) + due_in),
    }
    base.update(spec)
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "VmTemplate", "metadata": {"name": name}, "spec": base}


# Bound to grids whose cleanest hours are far apart (California's in its evening, Tokyo's in its
# night), each due in 16 h: at least one of the two waits whatever the hour and month
# (tests/unit/test_demo_templates.py sweeps a year of the profiles).
APART = {"batch-ca": "westus", "batch-jp": "japaneast"}


def cluster_templates() -> list[dict[str, Any]]:
    return [
        vmtemplate("etl-eu", originRegion="westeurope", dataResidency="eu"),
        vmtemplate("render-milan", originRegion="italynorth", maxLatency=30, cpu=8, memory=16),
        vmtemplate("impossible", originRegion="westus", dataResidency="eu", maxLatency=10),
        vmtemplate(
            "settle-de",
            timedelta(hours=16),
            originRegion="germanywestcentral",
            maxLatency=8,
            eligibleProviders=["azure"],
        ),
        *(
            vmtemplate(name, timedelta(hours=16), originRegion=region, maxLatency=8, eligibleProviders=["azure"])
            for name, region in APART.items()
        ),
    ]


# What the simulated days' grid emitted, for the report's hindsight: tomorrow has no history, so the
# profiles the scheduler forecast with stand for it (actual then equals expected for a run that
# started on time; oracle is still the best window the run's constraints allowed).
@functools.cache
def simulated_grid() -> ProfileSource:
    return ProfileSource()


RECORD = REPO / "build" / "demo" / "reservations.db"  # outlives the demo: a restart shows the same reservations


def active_reservations(scheduler_url: str, token: str) -> list[dict[str, Any]]:
    with RetryingClient(scheduler_url, token=token) as client:
        return placements.active(client)


@dataclass(frozen=True)
class Credentials:
    """The demo's principals, each with its own token, as a platform team issues them
    (``greenops token issue``): one per tenant of the dev stack (the Pulumi path), OPA's (the
    cluster path, every tenant), and a reader for the views."""

    tenants: dict[str, str]
    opa: str
    reader: str
    controller: str  # the cluster path's controller: reports phases, books nothing


def issue_credentials(sched: SchedulerServer, tenants: list[str]) -> Credentials:
    return Credentials(
        tenants={t: sched.issue(f"demo-{t}", [t], paths=["pulumi"]) for t in sorted(set(tenants))},
        opa=sched.issue("demo-opa", None, paths=["cluster"]),
        reader=sched.issue("demo-reader", None, paths=["api"], role="read"),
        controller=sched.issue("demo-controller", None, paths=["cluster"], role="report"),
    )


def vm_objects(cp: LocalControlPlane) -> set[str]:
    """The ASO / Config Connector / ACK VM objects (and ACK's security group) in the API server,
    as ``Kind/name``."""
    with cp.client() as k:
        return {
            f"{kind}/{item['metadata']['name']}"
            for api, kind in shown_kinds()
            for item in k.get(f"/apis/{api}/namespaces/greenops/{kind.lower()}s").json().get("items", [])
        }


def kubectl_get(cp: LocalControlPlane, path: str) -> str:
    """What ``kubectl get`` prints for ``path``: the API server's Table form, its columns of priority
    0, in kubectl's layout."""
    with cp.client() as k:
        table = k.get(path, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}).json()
    shown = [i for i, c in enumerate(table["columnDefinitions"]) if not c["priority"]]
    lines = [[table["columnDefinitions"][i]["name"].upper() for i in shown]]
    lines += [["" if row["cells"][i] is None else str(row["cells"][i]) for i in shown] for row in table["rows"]]
    widths = [max(len(line[i]) for line in lines) for i in range(len(shown))]
    return "\n".join(
        "   " + "   ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def show_delivery(cp: LocalControlPlane, shown: str) -> None:
    """When VM object ``shown`` (``Kind/name``) carries a run, what its VM would run, run here."""
    kind, name = shown.split("/", 1)
    api = dict((k, a) for a, k in shown_kinds())[kind]
    with cp.client() as k:
        obj = k.get(f"/apis/{api}/namespaces/greenops/{kind.lower()}s/{name}").json()
    given = delivery.delivered(obj)
    if given is None:
        return
    say(f"        its run, as cloud-init user-data in {given.field}: {delivery.schema_check(given.user_data)}")
    with tempfile.TemporaryDirectory(prefix="greenops-run-") as scratch:
        status, output = delivery.run_here(given.script(), Path(scratch))
    say(f"        run here in a scratch directory (no VM boots on this machine), it exited {status} and printed:")
    for line in output.splitlines()[:5] or ["(nothing)"]:
        say(f"          {line}")


def play_forward(st: auto.Stack, cp: LocalControlPlane, first: Pass, until: datetime) -> list[Pass]:
    """Reconcile passes at each next-change instant up to ``until``, as the watch loop would wake,
    printing what each changed and which VM objects appeared in or left the API server."""
    passes, seen, current = [first], vm_objects(cp), first
    while current.next_change and current.next_change[0] <= until:
        now = current.next_change[0] + WAKE_MARGIN
        # the SDK types env_vars read-only (Mapping), but a LocalWorkspace keeps, and reads, the dict it was given
        st.workspace.env_vars["GREENOPS_NOW"] = stamp(now)  # type: ignore[index]
        current = reconcile_once(st)
        passes.append(current)
        objects = vm_objects(cp)
        say(f"   [{stamp(now)}]")
        for change in current.changes or ["no workload changed state"]:
            say(f"      {change}")
        for name in sorted(objects - seen):
            say(f"      + {name} created in the API server")
            show_delivery(cp, name)
        for name in sorted(seen - objects):
            say(f"      - {name} deleted from the API server")
        seen = objects
    return passes


def demo(once: bool = True, record: Path = RECORD, start: datetime | None = None, hours: float = 24) -> int:
    """``start`` is the simulated clock's first instant (default: the next evening); ``hours`` how
    far it is played forward (0: one placement pass only)."""
    work = Path(tempfile.mkdtemp(prefix="greenops-demo-"))
    record.parent.mkdir(parents=True, exist_ok=True)
    t0 = start or next_evening(datetime.now(UTC))
    say("GreenOps demo: carbon-aware VM placement, everything on this machine (no cloud account).")
    say("Starting a local Kubernetes API server (etcd + kube-apiserver), the scheduler and OPA...")
    tls = loopback_tls(work / "tls")
    # the controller manager runs the garbage collector, which deletions through Pulumi wait for
    dev_tenants = [
        w["tenant"]
        for w in yaml.safe_load((REPO / "stacks" / "Pulumi.dev.yaml").read_text())["config"]["greenops:workloads"]
    ]
    with contextlib.ExitStack() as running:
        # the webhook's own OPA, which only the API server can call, with the token its admission
        # configuration holds; the other OPA answers the Pulumi path's decision queries
        access = WebhookAccess()
        cp = running.enter_context(LocalControlPlane(with_controller_manager=True, webhook_tokens=access.tokens))
        sched = running.enter_context(SchedulerServer(database=f"sqlite:///{record}"))
        creds = issue_credentials(sched, dev_tenants)
        served: dict[str, Any] = {
            "scheduler_url": sched.url,
            "scheduler_token": creds.opa,
            "tls_cert": tls.cert_file,
            "tls_key": tls.key_file,
        }
        opa = running.enter_context(OpaServer(**served))
        webhook = running.enter_context(access.opa(**served))
        return _demo(Running(cp, sched, opa, webhook, creds, tls.ca_pem, running), work, record, t0, hours, once)


@dataclass(frozen=True)
class Running:
    """What the demo started, for as long as the caller keeps it running."""

    cp: LocalControlPlane
    sched: SchedulerServer
    opa: OpaServer  # the decisions' (the Pulumi path's queries)
    webhook: OpaServer  # the webhook's (the API server's admission reviews)
    creds: Credentials
    ca_pem: bytes  # the webhook's throw-away CA
    services: contextlib.ExitStack  # what the demo starts later (the controller) stops with the rest


def _demo(running: Running, work: Path, record: Path, t0: datetime, hours: float, once: bool) -> int:
    cp, sched, opa, creds = running.cp, running.sched, running.opa, running.creds
    say(
        f"  API server {cp.server}   scheduler {sched.url}   OPA {opa.url} (decisions) and "
        f"{running.webhook.url} (the webhook's: only the API server's token), policy bundle loaded"
    )
    say(
        f"  credentials: a scheduler token per tenant ({', '.join(creds.tenants)}), OPA's own (cluster path), "
        "a reader's; the scheduler keeps their digests"
    )
    earlier = active_reservations(sched.url, creds.reader)
    say(
        f"  reservation record {record}: {len(earlier)} active from earlier runs "
        "(the same workloads are booked under the same keys, never twice)"
    )
    install_admission(cp, running.webhook.url, running.ca_pem, ("greenops", "demo"), token=running.webhook.admin_token)
    cp.create_crd(placement_crd())  # the controller shows each VmTemplate's phase and place on one
    say(
        "  installed: the VmTemplate CRD and the mutating webhook (VmTemplate CREATE/UPDATE -> OPA places and "
        "books; a deletion -> the controller releases, once it sees the object gone)"
    )

    say(
        f"\n1) Pulumi path: the dev stack's workloads ({', '.join(DUE_NEXT_MORNING)} due tomorrow morning), "
        f"placed at {stamp(t0)} (simulated clock)"
    )
    project = demo_project(work / "project", cp, opa.url, sched.url, running.ca_pem.decode(), t0)
    (work / "state").mkdir()
    st = automation.stack(
        "demo",
        work_dir=project,
        env={
            "PULUMI_BACKEND_URL": f"file://{work / 'state'}",
            "KUBECONFIG": str(cp.kubeconfig_path),
            "GREENOPS_NOW": stamp(t0),
        },
    )
    st.set_config("greenops:kubeconfig", auto.ConfigValue(cp.kubeconfig_path.read_text(), secret=True))
    # each workload's Placement presents its own tenant's token; OPA's query token for decisions
    st.set_config("greenops:schedulerTokens", auto.ConfigValue(json.dumps(creds.tenants), secret=True))
    st.set_config("greenops:opaToken", auto.ConfigValue(opa.query_token, secret=True))
    started = time.monotonic()
    first = reconcile_once(st)
    say(f"   {first.counts} in {time.monotonic() - started:.1f} s")
    say(report.table(report.account(first.rows)))
    waiting = [r for r in first.rows if r.get("phase") == "Scheduled"]
    say(
        f"   {len(waiting)} wait for a cleaner hour: "
        + (", ".join(f"{r['workload']} until {r['start']} in {r['zone']}" for r in waiting) or "none")
    )
    say(f"   VMs in the API server (due workloads only): {', '.join(sorted(vm_objects(cp))) or 'none'}")
    say(
        "   (no operator runs here, so readiness is 'applied': a run starts when its objects are applied; an AWS "
        "run shows as its SecurityGroup, since ACK's Instance waits for the group's id from a controller)"
    )
    if hours > 0:
        until = t0 + timedelta(hours=hours)
        say(f"\n   Playing the clock forward to {stamp(until)}: a reconcile pass at each next change")
        started = time.monotonic()
        passes = play_forward(st, cp, first, until)
        say(f"   {len(passes) - 1} passes over {hours:g} simulated hours in {time.monotonic() - started:.1f} s")
        with RetryingClient(sched.url, token=creds.reader) as client:  # policy's zones, as booked: the oracle's
            allowed = hindsight.with_allowed_zones(
                passes[-1].rows, lambda name: explain.account(explain.find(client, name, "demo"))["eligibleZones"]
            )
        rows, now = report.account(hindsight.with_truth(allowed, simulated_grid())), until
    else:
        rows, now = report.account(first.rows), t0
    say(report.table(rows))
    say(
        f"   (in hindsight: the demo's days are simulated, so its grid is the {simulated_grid().name} it forecast with)"
    )
    plot = report.plot(rows, REPO / "build" / "demo" / "placements.png", now=now)
    say(f"   timeline of the placements: {plot}")

    say("\n2) Cluster path (the thesis): VmTemplates through the API server, patched by OPA's webhook")
    cluster_t0 = datetime.now(UTC).replace(microsecond=0)
    clock_file = work / "cluster-clock"
    set_clock_file(clock_file, cluster_t0)
    controller = running.services.enter_context(
        ControllerProcess(
            scheduler_url=sched.url,
            token=creds.controller,
            kubeconfig=cp.kubeconfig_path,
            identity="demo-controller",
            readiness="applied",
            resync_seconds=0.5,
            clock_file=clock_file,
            log=work / "controller.log",
        )
    )
    controller.wait_leading()
    say(
        "   the cluster path's controller follows them (its own report-only credential; the Lease "
        f"{controller.lease_namespace}/greenops-controller); its clock is simulated from {stamp(cluster_t0)}"
    )
    cases = cluster_templates()
    with cp.client() as k:
        for vm in cases:
            sent = datetime.now(UTC)
            r = k.post(f"/apis/{GROUP}/{VERSION}/namespaces/demo/vmtemplates", json=vm)
            if r.status_code == 201:
                s = r.json()["spec"]
                later = (
                    " (waits for a cleaner hour)" if s["schedulingTime"] > stamp(sent + timedelta(minutes=1)) else ""
                )
                say(
                    f"   admitted {vm['metadata']['name']:13} -> {s['provider']}/{s['schedulingLocation']} "
                    f"size {s['vmSize']} at {s['schedulingTime']}{later}"
                )
            else:
                say(f"   rejected {vm['metadata']['name']:13} -> {r.json().get('message', r.text)[:400]}")
    say("\n3) The scheduler's record of placements, both paths (greenops placements):")
    say(placements.table(active_reservations(sched.url, creds.reader)))
    say("\n4) Why they run where and when (greenops explain), from what was recorded at decision time:")
    with RetryingClient(sched.url, token=creds.reader) as client:
        for name in ("nightly-etl", "demo/settle-de"):
            say(explain.text(explain.account(explain.find(client, name, "demo"))) + "\n")
    say(
        "\n5) The cluster path over its days: the controller's clock played to each next change (a gate, "
        "a run's end); no Krateo or cloud operator runs here, so a run counts from its gate (readiness: applied)"
    )
    with RetryingClient(sched.url, token=creds.reader) as client:
        last = max(parse_time(vm["spec"]["deadline"]) for vm in cases)
        steps = ClusterDay(controller, clock_file, client, say).play(cluster_t0, last)
        say(f"   {steps} steps of the controller's clock")
        say(report.table(report.account(hindsight.with_truth(listed(client, path="cluster"), simulated_grid()))))
    say("\n   kubectl get vmplacements -n demo (each VmTemplate's phase and place, written by the controller):")
    say(kubectl_get(cp, f"/apis/{PLACEMENT_GROUP}/{PLACEMENT_VERSION}/namespaces/demo/{PLACEMENT_PLURAL}"))
    if not once:
        # The handler goes in before the prompt: a Ctrl-C (or SIGTERM) sent as soon as the line
        # shows must take the orderly path below, not interrupt it half-way. SignalStop, since the
        # signal may land on one of gRPC's threads, which a plain Event.wait() would never notice.
        stop = SignalStop()
        say(
            f"\nDashboard (placements of both paths, timeline, forecasts): {sched.url}/dashboard with a read "
            f"token, e.g. GREENOPS_SCHEDULER_TOKEN={creds.reader} greenops dashboard --stack dev"
        )
        say(
            f"Metrics (Prometheus text format): {sched.url}/metrics with the same read token, e.g. "
            f"curl -H 'Authorization: Bearer {creds.reader}' {sched.url}/metrics | grep overdue_gate"
        )
        say(
            "Everything stays up; Ctrl-C stops it (the Pulumi path's reservations stay in the record). "
            f"Try: KUBECONFIG={cp.kubeconfig_path} kubectl get vmtemplates,vmplacements -A"
        )
        stop.wait()  # and its handlers stay for the teardown below: a second Ctrl-C must not cut it short
    # The VmTemplates go with this control plane: deleting them releases their reservations.
    with cp.client() as k:
        for vm in cases:
            k.delete(f"/apis/{GROUP}/{VERSION}/namespaces/demo/vmtemplates/{vm['metadata']['name']}")
    if once:
        say("\nTearing down (--once): destroying the demo stack, stopping the servers.")
        automation.run(st, "destroy", stream=False)
        st.workspace.remove_stack("demo")
    say(f"reservation record {record}: {len(active_reservations(sched.url, creds.reader))} active left")
    shutil.rmtree(work, ignore_errors=True)
    return 0
