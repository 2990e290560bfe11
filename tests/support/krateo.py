"""A stand-in for Krateo's composition-dynamic-controller, with its real rules for when it renders.

Its public sources say it renders a composition again when the object's generation changes (a spec
change) and at its resync interval (COMPOSITION_CONTROLLER_RESYNC_INTERVAL, 3 minutes by default);
an update of metadata alone, such as an annotation, is dropped as status-only. This stand-in keeps
those rules and nothing more: a design that asks for a render any other way waits for the resync
here as it would in a cluster.

Rendering is the chart's window, read on the controller's clock file (the chart's ``now``): inside
``[schedulingTime - provisioningLeadSeconds, schedulingTime + duration)`` the release's VM object
exists (stored as Helm marks a release's objects), outside it does not.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from greenops.charts import PROVISIONING_LEAD_SECONDS
from greenops.common.clock import clock_file_time, parse_time
from greenops.models.duration import parse_duration


class KrateoStandIn:
    def __init__(
        self,
        client: Callable[[], Any],
        templates_path: str,
        vm_path: str,
        vm_object: Callable[[dict[str, Any]], dict[str, Any]],
        clock: Path | None,
        resync: float,
        poll: float = 0.1,
    ):
        """``client()``: an httpx client of the API server; ``templates_path``: the VmTemplates'
        collection (all namespaces); ``vm_path``: the VM kind's collection, ``{ns}`` in it;
        ``vm_object(template)``: the VM object the chart renders for it."""
        self.client, self.templates_path, self.vm_path, self.vm_object = client, templates_path, vm_path, vm_object
        self.clock, self.resync, self.poll = clock, resync, poll
        self.renders: list[tuple[str, int, str]] = []  # (namespace/name, generation, why), in order
        # (namespace/name, why) of each render that failed, once each: it is tried again at the next
        # poll, as Krateo retries, and a test reads them (a render that fails must not go unseen)
        self.failures: list[tuple[str, str]] = []
        self._last: dict[str, tuple[int, float]] = {}  # namespace/name -> generation and monotonic time rendered
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> KrateoStandIn:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(self.poll):
            with self.client() as k:
                try:
                    items = k.get(self.templates_path).raise_for_status().json().get("items", [])
                except (httpx.HTTPError, ValueError) as e:
                    self._failed("(the list of VmTemplates)", e)
                    continue
                for obj in items:
                    try:
                        self._maybe_render(k, obj)
                    except (httpx.HTTPError, KeyError, ValueError) as e:
                        meta = obj["metadata"]
                        self._failed(f"{meta['namespace']}/{meta['name']}", e)

    def _failed(self, what: str, e: Exception) -> None:
        body = e.response.text[:300] if isinstance(e, httpx.HTTPStatusError) else ""
        failure = (what, f"{e}: {body}")
        if failure not in self.failures:
            self.failures.append(failure)

    def _maybe_render(self, k: Any, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        key, generation = f"{meta['namespace']}/{meta['name']}", meta.get("generation", 1)
        last = self._last.get(key)
        if last is None:
            why = "first seen"
        elif generation != last[0]:
            why = f"generation {last[0]} -> {generation}"
        elif time.monotonic() - last[1] >= self.resync:
            why = "resync"
        else:
            return  # metadata alone changed, or nothing: no render
        self._render(k, obj)  # raises when it fails: not recorded as rendered, so tried again
        self._last[key] = (generation, time.monotonic())
        self.renders.append((key, generation, why))

    def _render(self, k: Any, obj: dict[str, Any]) -> None:
        spec, ns = obj["spec"], obj["metadata"]["namespace"]
        if "schedulingTime" not in spec:
            return
        start = parse_time(spec["schedulingTime"])
        lead = timedelta(seconds=spec.get("provisioningLeadSeconds", PROVISIONING_LEAD_SECONDS))
        # the controller's clock: a file a test plays forward, or the real one (None: the node's pods)
        now: datetime = clock_file_time(str(self.clock)) if self.clock else datetime.now(UTC)
        inside = start - lead <= now < start + parse_duration(spec["duration"])
        vm = self.vm_object(obj)
        path = self.vm_path.format(ns=ns)
        exists = k.get(f"{path}/{vm['metadata']['name']}").status_code == 200
        if inside and not exists:
            k.post(path, json=vm).raise_for_status()
        elif not inside and exists:
            k.delete(f"{path}/{vm['metadata']['name']}")


# ASO's VirtualMachine (group, version, plural): the kind the chart renders for an Azure placement
ASO_VM = ("compute.azure.com", "v1api20220301", "virtualmachines")


def aso_vm_of(obj: dict[str, Any]) -> dict[str, Any]:
    """The VirtualMachine the chart renders for VmTemplate ``obj``, marked as Helm marks its release's objects."""
    ns, release = obj["metadata"]["namespace"], obj["metadata"]["name"]
    return {
        "apiVersion": f"{ASO_VM[0]}/{ASO_VM[1]}",
        "kind": "VirtualMachine",
        "metadata": {
            "name": f"{release}-vm",
            "annotations": {"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": ns},
        },
        "spec": {"location": obj["spec"]["schedulingLocation"], "owner": {"name": "greenops-workloads"}},
    }
