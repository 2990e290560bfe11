"""``python -m greenops.controller``: the cluster path's controller process.

Every replica runs for the Lease; only the leader watches and acts. A leader runs, in this thread,
the VmTemplate stream (a list, then a watch), a sweep of the record against the API server's list
at start and every ``--sweep-seconds``, and a lifecycle pass over the VmTemplates it holds every
``--resync-seconds`` (a gate opens within one resync of its time); a second thread renews the Lease. Losing the Lease
stops the stream before anything else is done; winning it again starts with a fresh list, so
nothing that changed meanwhile is missed.
"""

from __future__ import annotations

import argparse
import logging
import os
import queue
import signal
import socket
import sys
import threading
import time
from typing import Any

from greenops.common.clock import stamp, system_clock
from greenops.common.errors import GreenOpsError, one_line
from greenops.observability.instruments import MetricsEndpoint
from greenops.placing.lifecycle import Lifecycle
from greenops.policies.webhook import VMTEMPLATE_GROUP as GROUP
from greenops.policies.webhook import VMTEMPLATE_VERSION as VERSION

from .kube import api_client
from .lease import LeaseElector
from .metrics import ControllerMetrics
from .objects import RenderedObjects
from .placement_status import PlacementStatus, status_of, waiting_status_of
from .progress import RENDER_FIELD, Progress
from .record import Record, RecordUnavailable, token_reader
from .record_keeper import RecordKeeper, reservation_key
from .run_report import RunReport
from .watch import PLURAL, Changed, Listed, VmTemplateWatch, key_of

log = logging.getLogger("greenops.controller")
# touched on a VmTemplate the queue placed after its admission (Controller.readmit)
ADMITTED = "greenops.io/admitted"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="greenops.controller", description=__doc__)
    p.add_argument("--scheduler-url", required=True)
    p.add_argument("--token-file", help="the controller's scheduler credential (else GREENOPS_CONTROLLER_TOKEN)")
    p.add_argument("--kubeconfig", help="default: the pod's ServiceAccount")
    p.add_argument("--lease-namespace", default=os.environ.get("POD_NAMESPACE", "greenops-system"))
    p.add_argument("--lease-name", default="greenops-controller")
    p.add_argument("--identity", default=f"{socket.gethostname()}-{os.getpid()}")
    p.add_argument("--lease-seconds", type=float, default=15.0)
    p.add_argument("--renew-deadline", type=float, default=10.0)
    p.add_argument("--sweep-seconds", type=float, default=60.0)
    p.add_argument("--resync-seconds", type=float, default=30.0, help="how often the lifecycle pass runs")
    p.add_argument("--watch-timeout", type=int, default=300, help="seconds one watch request lasts")
    p.add_argument(
        "--readiness",
        choices=["operator", "applied"],
        default="operator",
        help="operator: Running when the cloud operator reports the VM ready; applied: no operator is "
        "watched (a cluster without ASO, Config Connector or ACK), the run counts from the gate",
    )
    p.add_argument(
        "--completion-url",
        help="the scheduler's URL as the VMs reach it: a VmTemplate with a run then reports its end there "
        "(default: none; its VM reports its end by powering off)",
    )
    p.add_argument("--metrics-port", type=int, help="serve Prometheus metrics on this port at /metrics (default: none)")
    p.add_argument(
        "--metrics-address",
        default="127.0.0.1",
        help="with --metrics-port: the address to bind (default: 127.0.0.1; 0.0.0.0 in a pod, for the scrape)",
    )
    return p.parse_args(argv)


class Controller:
    def __init__(self, args: argparse.Namespace):
        api = api_client(args.kubeconfig)
        self.args = args
        self.elector = LeaseElector(
            api,
            args.lease_namespace,
            args.lease_name,
            args.identity,
            args.lease_seconds,
            args.renew_deadline,
            on_error=lambda: self.metrics.apiserver_failed(),
        )
        self.metrics = ControllerMetrics(leading=self.elector.leading)
        self.api = api
        self.record = Record(
            args.scheduler_url, token_reader(args.token_file, os.environ.get("GREENOPS_CONTROLLER_TOKEN"))
        )
        observe = RenderedObjects(api).observe if args.readiness == "operator" else None
        self.placements = PlacementStatus(api, on_error=lambda: self.metrics.apiserver_failed())
        report = RunReport(api, self.record, args.completion_url) if args.completion_url else None
        progress = Progress(
            self.record,
            system_clock,
            self.request_render,
            observe,
            self.metrics,
            self.tell,
            self.show,
            report.prepare if report else lambda *_: None,
            self.show_waiting,
            self.readmit,
        )
        self.reconciler = RecordKeeper(self.record, system_clock, self.elector.leading, progress, self.metrics)
        self.templates: dict[str, dict[str, Any]] = {}  # the leader's view of every VmTemplate, from the stream
        self.stop = threading.Event()

    def renew_forever(self) -> None:
        period = self.args.renew_deadline / 3
        while not self.stop.is_set():
            self.elector.try_acquire_or_renew()
            self.stop.wait(period)

    def run(self) -> None:
        threading.Thread(target=self.renew_forever, name="lease", daemon=True).start()
        while not self.stop.is_set():
            if self.elector.leading():
                log.info("leading as %s", self.args.identity)
                self.lead()
                log.info("not leading any more")
            self.stop.wait(0.5)
        self.elector.release()

    def lead(self) -> None:
        watch = VmTemplateWatch(
            self.api, timeout_seconds=self.args.watch_timeout, on_error=self.metrics.apiserver_failed
        )
        ended = threading.Event()
        items: queue.Queue[Listed | Changed] = queue.Queue()

        def pump() -> None:
            for item in watch.stream(ended):
                items.put(item)

        threading.Thread(target=pump, name="watch", daemon=True).start()
        next_sweep = next_pass = 0.0
        self.templates = {}
        try:
            while not self.stop.is_set() and self.elector.leading():
                if time.monotonic() >= next_sweep:
                    self.guarded(lambda: self.reconciler.sweep(lambda: _listed(watch)))
                    next_sweep = time.monotonic() + self.args.sweep_seconds
                if time.monotonic() >= next_pass:
                    self.guarded(lambda: self.reconciler.progress(list(self.templates.values())))
                    next_pass = time.monotonic() + self.args.resync_seconds
                try:
                    item = items.get(timeout=0.5)
                except queue.Empty:
                    continue
                self.guarded(lambda i=item: self.handle(i))
        finally:
            ended.set()

    def handle(self, item: Listed | Changed) -> None:
        if isinstance(item, Listed):  # the whole truth: what it lacks was deleted meanwhile
            self.templates = {key_of(o): o for o in item.objects}
            self.reconciler.listed(item.objects)
        elif item.type == "DELETED":
            self.templates.pop(key_of(item.object), None)
            self.placements.forget(item.object)
            self.reconciler.deleted(item.object)
        else:
            self.templates[key_of(item.object)] = item.object
            self.reconciler.stored(item.object)

    def request_render(self, template: dict[str, Any], value: str) -> None:
        """Make Krateo render the composition again: a spec change, so a new generation."""
        from kubernetes import client

        meta = template["metadata"]
        client.CustomObjectsApi(self.api).patch_namespaced_custom_object(
            GROUP,
            VERSION,
            meta["namespace"],
            PLURAL,
            meta["name"],
            {"spec": {RENDER_FIELD: value}},
        )

    def readmit(self, template: dict[str, Any], value: str) -> None:
        """Touch the VmTemplate (an annotation: no new generation for Krateo to render): its UPDATE
        goes through admission, which asks the scheduler again and writes the decision of the
        booking the queue made for it."""
        from kubernetes import client

        meta = template["metadata"]
        client.CustomObjectsApi(self.api).patch_namespaced_custom_object(
            GROUP, VERSION, meta["namespace"], PLURAL, meta["name"], {"metadata": {"annotations": {ADMITTED: value}}}
        )
        key = reservation_key(template)
        log.info("readmitted %s", key, extra={"action": "readmitted", "key": key})

    def show_waiting(self, template: dict[str, Any], row: dict[str, Any]) -> None:
        """The VmPlacement of a VmTemplate whose reservation waits in the scheduler's queue."""
        self.placements.show(template, waiting_status_of(row))

    def show(self, template: dict[str, Any], row: dict[str, Any], lifecycle: Lifecycle) -> None:
        """The VmTemplate's VmPlacement, with what the pass recorded (best effort, as Events)."""
        self.placements.show(template, status_of(row, lifecycle))

    def tell(self, template: dict[str, Any], reason: str, message: str) -> None:
        """An Event on the VmTemplate (``kubectl describe`` lists them): the phase it entered and
        why. Telling is best effort: a refused Event is logged, the lifecycle is recorded anyway."""
        from kubernetes import client

        meta = template["metadata"]
        now = stamp(system_clock())
        event = {
            "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
            "involvedObject": {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "VmTemplate",
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta.get("uid"),
            },
            "reason": reason,
            "message": message[:1024],
            "type": "Warning" if reason == "Failed" else "Normal",
            "source": {"component": "greenops-controller"},
            "reportingComponent": "greenops-controller",
            "reportingInstance": self.args.identity,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            client.CoreV1Api(self.api).create_namespaced_event(meta["namespace"], event)
        except Exception as exc:  # the API server's refusal: logged, never fatal
            self.metrics.apiserver_failed()
            log.warning("event %s for VmTemplate %s/%s not written: %s", reason, meta["namespace"], meta["name"], exc)

    def guarded(self, step: Any) -> None:
        """A failed step (the scheduler down) is logged and retried by the next sweep, never fatal."""
        try:
            step()
        except (RecordUnavailable, OSError) as exc:
            self.metrics.failed(exc)
            log.warning("%s; the next sweep retries", exc)
        except Exception as exc:  # the API server's answers: logged, retried by the sweep
            self.metrics.failed(exc)
            log.warning("%s: %s; the next sweep retries", type(exc).__name__, one_line(str(exc)))


def _listed(watch: VmTemplateWatch) -> tuple[list[dict[str, Any]], str]:
    listed = watch.list()
    return listed.objects, listed.resource_version


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s", stream=sys.stderr)
    try:
        controller = Controller(parse_args(argv))
    except GreenOpsError as exc:
        raise SystemExit(f"controller: {exc}") from None
    signal.signal(signal.SIGTERM, lambda *_: controller.stop.set())
    endpoint = None
    if controller.args.metrics_port is not None:
        endpoint = MetricsEndpoint(
            controller.metrics.registry, controller.args.metrics_address, controller.args.metrics_port
        )
        log.info("metrics on http://%s:%d/metrics", endpoint.address, endpoint.port)
    try:
        controller.run()
    finally:
        if endpoint is not None:
            endpoint.close()


if __name__ == "__main__":
    main()
